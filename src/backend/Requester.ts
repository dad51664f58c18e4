/**
 * Requests on the backends' connections: the one way a request reaches a backend. It is internal
 * to the backend layer: `Backends`' layer provides it, and in the gateway only the forwarder
 * (gateway/pipeline/Forwarding, the call pipeline's last stage) holds it; every other module asks the
 * forwarder as a caller (see gateway/pipeline/Caller), and a lint rule keeps them from importing this.
 * The public `Backends` service has no way to send a request: what a backend answers is reached
 * through the pipeline or the forwarder, whose caller is never left out.
 */
import { Context, type Effect } from "effect"
import type { BackendError } from "../protocol/Errors.js"

export interface RequesterService {
  /**
   * Any MCP request on a ready backend; the result passes through unchanged. `subject`: whose it
   * is, for a backend that acts as each user (`perUser`): it goes on that user's lane (see Lanes).
   */
  readonly request: (backendId: string, method: string, params: unknown, subject?: string) => Effect.Effect<unknown, BackendError>
}

export class BackendRequester extends Context.Service<BackendRequester, RequesterService>()("mcp-agentify/BackendRequester") {}
