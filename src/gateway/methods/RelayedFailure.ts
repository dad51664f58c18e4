/** What a request relayed to a backend fails with: the backend's own error as it sent it, else the gateway's. */
import { type BackendError, type GatewayError, Relayed, sentCode } from "../../protocol/Errors.js"
import { field } from "../../json/Json.js"

export type SubscriptionMethod = "resources/subscribe" | "resources/unsubscribe"

/**
 * A backend's own failure, relayed as the backend sent it (code, message, data); the gateway's
 * failures (timeout, crash, not ready) stay -32004.
 */
export const asBackendSent = (error: BackendError): GatewayError => {
  const code = field(error.detail, "code")
  const message = field(error.detail, "message")
  const data = field(error.detail, "data")
  if (error.reason === "call_failed" && typeof code === "number" && typeof message === "string") {
    return new Relayed({ from: "backend", code: sentCode(code), message, ...(data === undefined ? {} : { data }) })
  }
  return error
}
