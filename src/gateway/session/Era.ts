/**
 * The protocol eras at the edge, in one codec. The session era (2025-11-25 and older) opens a
 * session with `initialize`; the stateless era (2026-07-28) carries everything a session would
 * hold in each request's `_meta` (its version, the client's capabilities and description, the log
 * level it wants), checked against the `MCP-Protocol-Version` header over HTTP.
 *
 * `eraOf` sorts a message; `decode` turns a 2026-07-28 request into the request the method tables
 * serve and a typed context (or the refusal, with its HTTP status); `complete` gives a result what
 * the era's results carry. Transports ask this module, not the request's `_meta`.
 */
import { Result } from "effect"
import { field, isObject } from "../../json/Json.js"
import * as Meta from "../../json/Meta.js"
import { ErrorCode } from "../../protocol/Errors.js"
import {
  isSupportedProtocolVersion,
  Meta as MetaKey,
  MCP_LOG_LEVELS,
  type McpLogLevel,
  mcpLogLevel,
  STATELESS_PROTOCOL_VERSION,
  StatelessErrorCode
} from "../../protocol/Mcp.js"
import { classify, failure, type Id, type Request, type Response } from "../../jsonrpc/JsonRpc.js"

export type Era = "session" | "stateless"

/** Whether a message belongs to the stateless era: a request whose `_meta` names a protocol version. */
export const isStateless = (message: unknown): boolean => {
  const meta = Meta.of(field(message, "params"))
  return meta !== undefined && MetaKey.protocolVersion in meta
}

/**
 * The era of a message that arrives outside any session: stateless when its `_meta` names a
 * version, when it is `server/discover`, or when the HTTP header names a version the session era
 * does not have. An `initialize` opens a session unless its `_meta` says otherwise.
 */
export const eraOf = (message: unknown, header?: string | undefined): Era => {
  const incoming = classify(message)
  if (incoming._tag !== "Request") return "session"
  const { method } = incoming.request
  if (method === "initialize") return isStateless(message) ? "stateless" : "session"
  return isStateless(message) || method === "server/discover" || (header !== undefined && !isSupportedProtocolVersion(header))
    ? "stateless"
    : "session"
}

/** What a stateless request says of its client, in place of a session. */
export interface Context {
  readonly protocolVersion: string
  readonly clientCapabilities: Readonly<Record<string, unknown>>
  readonly clientInfo: unknown
  /** The least severe log message wanted; none asked for: none sent (opt-in per request). */
  readonly logLevel: McpLogLevel | "none"
}

/** A refusal before dispatch, with the HTTP status it takes. */
export interface Refusal {
  readonly status: number
  readonly response: Response
}

const refusal = (status: number, id: Id | null, code: ErrorCode, message: string, data?: unknown): Refusal => ({
  status,
  response: failure(id, data === undefined ? { code, message } : { code, message, data })
})

/**
 * A stateless request's context, or why it is refused. `header` is the `MCP-Protocol-Version`
 * header: undefined when an HTTP request has none, null where there are no headers (stdio).
 */
export const decode = (request: Request, header: string | undefined | null): Result.Result<Context, Refusal> => {
  if (header === undefined) {
    return Result.fail(refusal(400, request.id, StatelessErrorCode.HeaderMismatch, "Missing MCP-Protocol-Version header"))
  }
  const meta = Meta.of(request.params)
  const missing = [MetaKey.protocolVersion, MetaKey.clientCapabilities].filter((key) => meta?.[key] === undefined)
  if (meta === undefined || missing.length > 0) {
    return Result.fail(
      refusal(400, request.id, ErrorCode.InvalidParams, `Invalid params: _meta must carry ${missing.join(" and ")}`)
    )
  }
  const version = meta[MetaKey.protocolVersion]
  const capabilities = meta[MetaKey.clientCapabilities]
  if (!isObject(capabilities)) {
    return Result.fail(
      refusal(400, request.id, ErrorCode.InvalidParams, `Invalid params: _meta.${MetaKey.clientCapabilities} must be an object`)
    )
  }
  const level = meta[MetaKey.logLevel]
  if (level !== undefined && mcpLogLevel(level) === undefined) {
    return Result.fail(
      refusal(
        400,
        request.id,
        ErrorCode.InvalidParams,
        `Invalid params: _meta.${MetaKey.logLevel} must be one of ${MCP_LOG_LEVELS.join(", ")}`
      )
    )
  }
  if (header !== null && header !== version) {
    return Result.fail(
      refusal(
        400,
        request.id,
        StatelessErrorCode.HeaderMismatch,
        "MCP-Protocol-Version header does not match _meta protocolVersion"
      )
    )
  }
  if (version !== STATELESS_PROTOCOL_VERSION) {
    return Result.fail(
      refusal(400, request.id, StatelessErrorCode.UnsupportedProtocolVersion, "Unsupported protocol version", {
        supported: [STATELESS_PROTOCOL_VERSION],
        requested: String(version).slice(0, 64)
      })
    )
  }
  return Result.succeed({
    protocolVersion: version,
    clientCapabilities: capabilities,
    clientInfo: meta[MetaKey.clientInfo],
    logLevel: mcpLogLevel(level) ?? "none"
  })
}

/** The HTTP status of a stateless reply sent as JSON. */
export const statusOf = (response: unknown): number => {
  const code = field(field(response, "error"), "code")
  if (code === ErrorCode.MethodNotFound) return 404
  if (
    code === StatelessErrorCode.HeaderMismatch ||
    code === StatelessErrorCode.MissingClientCapability ||
    code === StatelessErrorCode.UnsupportedProtocolVersion
  ) {
    return 400
  }
  return 200
}

/** Results that carry caching hints. */
const CACHEABLE = new Set(["tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"])

/** A result as the era sends it: its `resultType`, and caching hints where the method has them. */
export const complete = (method: string, result: unknown): unknown => {
  if (!isObject(result)) return result
  // A stateless backend's own InputRequiredResult passes as it is: the client retries with it.
  if (result.resultType === "input_required") return result
  return {
    ...result,
    resultType: result.resultType ?? "complete",
    ...(CACHEABLE.has(method) ? { ttlMs: 0, cacheScope: "private" } : {})
  }
}
