/**
 * JSON-RPC 2.0 messages for both sides of the gateway: ids, requests, notifications and replies,
 * `classify` for what arrives, and encoding that never throws for what leaves.
 */
import { ErrorCode, sentCode, type WireError } from "../protocol/Errors.js"
import * as Secrets from "../observability/Secrets.js"
import { field, isObject, messageOf } from "../json/Json.js"
import * as Depth from "../json/Depth.js"

export type Id = string | number

export interface Request {
  readonly id: Id
  readonly method: string
  readonly params: unknown
}

export interface Notification {
  readonly method: string
  readonly params: unknown
}

export type Response =
  | { readonly jsonrpc: "2.0"; readonly id: Id | null; readonly result: unknown }
  | { readonly jsonrpc: "2.0"; readonly id: Id | null; readonly error: WireError }

export const success = (id: Id | null, result: unknown): Response => ({ jsonrpc: "2.0", id, result })

export const failure = (id: Id | null, error: WireError): Response => ({ jsonrpc: "2.0", id, error })

/** What a parsed JSON value turned out to be. */
export type Incoming =
  | { readonly _tag: "Request"; readonly request: Request }
  | { readonly _tag: "Notification"; readonly notification: Notification }
  | { readonly _tag: "Response"; readonly id: Id | null; readonly payload: Readonly<Record<string, unknown>> }
  | { readonly _tag: "Invalid"; readonly id: Id | null; readonly reason: string }

export const isId = (u: unknown): u is Id => typeof u === "string" || (typeof u === "number" && Number.isFinite(u))

/** Classifies one JSON value as a JSON-RPC 2.0 message (the spec's rules, nothing looser). */
export const classify = (value: unknown): Incoming => {
  if (!isObject(value)) return { _tag: "Invalid", id: null, reason: "a JSON-RPC message must be a JSON object" }
  const msg = value
  const hasId = "id" in msg
  const id = isId(msg.id) ? msg.id : null
  if (hasId && msg.id !== null && !isId(msg.id)) {
    return { _tag: "Invalid", id: null, reason: "id must be a string or a number" }
  }
  if (msg.jsonrpc !== "2.0") {
    return { _tag: "Invalid", id, reason: 'jsonrpc must be exactly "2.0"' }
  }
  if (!("method" in msg)) {
    if ("result" in msg || "error" in msg) return { _tag: "Response", id, payload: msg }
    return { _tag: "Invalid", id, reason: "method is required" }
  }
  if (typeof msg.method !== "string" || msg.method.length === 0) {
    return { _tag: "Invalid", id, reason: "method must be a non-empty string" }
  }
  if ("params" in msg && (typeof msg.params !== "object" || msg.params === null)) {
    return { _tag: "Invalid", id, reason: "params must be an object or an array" }
  }
  if (!hasId) return { _tag: "Notification", notification: { method: msg.method, params: msg.params } }
  if (msg.id === null) return { _tag: "Invalid", id: null, reason: "id must not be null" }
  return { _tag: "Request", request: { id: id!, method: msg.method, params: msg.params } }
}

/** How messages are cut from and written to a byte stream. */
export type Framing = "ndjson" | "content-length"

/**
 * JSON text of an outgoing message, never throwing: a backend's result or error can nest past the
 * bound (see Depth: checked before encoding, whatever the Node's encoder would do) or hold what
 * JSON cannot say, and the request must still get its one reply. An error reply then goes out
 * without its `data`, a result reply as -32603; a notification that cannot be encoded is dropped
 * (""), since there is no one to tell.
 */
export const stringify = (message: unknown): string => {
  if (Depth.exceeds(message)) return unencodable(message, Depth.TOO_DEEP_TEXT)
  try {
    return JSON.stringify(message)
  } catch (cause) {
    return unencodable(message, Secrets.scrub(messageOf(cause)))
  }
}

/** What goes out in the place of a message that cannot be encoded, `why` saying why. */
const unencodable = (message: unknown, why: string): string => {
  if (Array.isArray(message))
    return `[${message
      .map(stringify)
      .filter((s) => s !== "")
      .join(",")}]`
  if (!isObject(message) || !("id" in message)) return ""
  const id = isId(message.id) ? message.id : null
  // The error of a reply already on its way out (the gateway's, or a backend's relayed): its code as it was.
  const code = field(message.error, "code")
  const text = field(message.error, "message")
  return JSON.stringify(
    typeof code === "number" && typeof text === "string"
      ? failure(id, { code: sentCode(code), message: text })
      : failure(id, {
          code: ErrorCode.InternalError,
          message: `Internal error: the result cannot be encoded as JSON (${why})`
        })
  )
}

/** One outgoing message in the connection's framing ("" for one that cannot be encoded at all). */
export const encode = (framing: Framing, message: unknown): string => {
  const json = stringify(message)
  if (json === "") return ""
  return framing === "ndjson" ? `${json}\n` : `Content-Length: ${Buffer.byteLength(json, "utf8")}\r\n\r\n${json}`
}

/** Params as JSON text; throws `ParamsTooDeep` past the bound (see Depth), or what `JSON.stringify` throws. */
const paramsText = (params: unknown): string => {
  if (Depth.exceeds(params)) throw new ParamsTooDeep()
  return JSON.stringify(params)
}

/** Params nested past the bound (see Depth), refused before they are encoded. */
export class ParamsTooDeep extends Error {
  constructor() {
    super(`params are ${Depth.TOO_DEEP_TEXT}`)
  }
}

/**
 * A request's frame, built by hand: the backend side's hot path, where a generic encoder's object
 * and second stringify per call showed in the benchmarks. Throws when params are not JSON.
 */
export const encodeRequest = (id: number, method: string, params: unknown): string =>
  params === undefined
    ? `{"jsonrpc":"2.0","id":${id},"method":${JSON.stringify(method)}}\n`
    : `{"jsonrpc":"2.0","id":${id},"method":${JSON.stringify(method)},"params":${paramsText(params)}}\n`

/** A notification's ndjson frame (see `encodeRequest`). Throws when params are not JSON. */
export const encodeNotification = (method: string, params: unknown): string =>
  params === undefined
    ? `{"jsonrpc":"2.0","method":${JSON.stringify(method)}}\n`
    : `{"jsonrpc":"2.0","method":${JSON.stringify(method)},"params":${paramsText(params)}}\n`

/** A notification message. */
export const notification = (method: string, params: unknown): { jsonrpc: "2.0"; method: string; params?: unknown } =>
  params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params }

/** A request message (the gateway's own requests to a client, on a backend's behalf). */
export const request = (id: Id, method: string, params: unknown): { jsonrpc: "2.0"; id: Id; method: string; params?: unknown } =>
  params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params }

/** Is this outgoing message the reply that ends an exchange (a response, or a batch's replies)? */
export const isReply = (message: unknown): boolean =>
  Array.isArray(message) || (typeof message === "object" && message !== null && !("method" in message))
