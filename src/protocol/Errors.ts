/**
 * The gateway's failures as tagged errors, each carrying its JSON-RPC code.
 *
 * Everything that can reach a client is one of these, or a domain's own error that carries its
 * code the same way (`CodedError`: the orchestrator's live in orchestration/Errors). `toRpcError` is the single place that
 * turns a failure into the wire's `{code, message, data}`; it scrubs registered secrets so no
 * error can leak a key even if one slipped into a backend's message.
 */
import { Schema } from "effect"
import * as Secrets from "../observability/Secrets.js"
import { field, stringField } from "../json/Json.js"

/** Plain JSON-RPC codes. */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** LSP's RequestCancelled: the reply to a request the client cancelled. */
  RequestCancelled: -32800,
  NoAction: -32000,
  NotInitialized: -32001,
  NotConfigured: -32002,
  LlmFailed: -32003,
  BackendFailed: -32004,
  /** A quota of `limits` is used up: `data.retryAfterMs` says when to try again. */
  QuotaExceeded: -32029,
  /** MCP's URLElicitationRequired: the user must open `data.elicitations[].url` (a sign-in) first. */
  UrlElicitationRequired: -32042
} as const

/** The steps that ran before a failure (an orchestration's), as `_meta["agentify/steps"]` shows them. */
export const stepsOf = (error: { readonly steps?: ReadonlyArray<unknown> | undefined }) =>
  error.steps === undefined || error.steps.length === 0 ? {} : { steps: error.steps }

/** -32602: params or initializationOptions failed validation; `issues` are `path: problem` lines. */
export class InvalidParams extends Schema.TaggedError<InvalidParams>()("InvalidParams", {
  message: Schema.String,
  issues: Schema.Array(Schema.String)
}) {
  readonly code = ErrorCode.InvalidParams
  get data(): unknown {
    return { issues: this.issues }
  }
}

/** -32001: a request before `initialize`. */
export class NotInitialized extends Schema.TaggedError<NotInitialized>()("NotInitialized", {
  method: Schema.String
}) {
  readonly code = ErrorCode.NotInitialized
  override get message() {
    return "Gateway not fully initialized"
  }
  get data(): unknown {
    return { method: this.method }
  }
}

/** -32002: no usable OpenAI key, or no backend configured. `message` says what and where to set it. */
export class NotConfigured extends Schema.TaggedError<NotConfigured>()("NotConfigured", {
  message: Schema.String,
  missing: Schema.Literal("OPENAI_API_KEY", "backends")
}) {
  readonly code = ErrorCode.NotConfigured
  get data(): unknown {
    return { missing: this.missing }
  }
}

/**
 * -32004: a backend failed. One class with a `reason`, so callers can `catchTag` once and
 * still tell a timeout from a crash; the message is always "Backend '<id>' failed: <summary>".
 */
export class BackendError extends Schema.TaggedError<BackendError>()("BackendError", {
  backendId: Schema.String,
  reason: Schema.Literal("not_found", "not_ready", "call_failed", "timeout", "crashed", "tool_error", "overloaded"),
  summary: Schema.String,
  method: Schema.optional(Schema.String),
  /** The backend's own JSON-RPC error, or its isError result. */
  detail: Schema.optional(Schema.Unknown),
  /** The steps that ran before this failure (an orchestration's), as `_meta["agentify/steps"]` shows them. */
  steps: Schema.optional(Schema.Array(Schema.Unknown))
}) {
  readonly code = ErrorCode.BackendFailed
  override get message() {
    return `Backend '${this.backendId}' failed: ${this.summary}`
  }
  get data(): unknown {
    return { backendId: this.backendId, reason: this.reason, method: this.method, detail: this.detail, ...stepsOf(this) }
  }
}

/** A JSON-RPC-level failure produced by the wire or the method table (-32600, -32601, -32603, -32800). */
export class RpcError extends Schema.TaggedError<RpcError>()("RpcError", {
  code: Schema.Number,
  message: Schema.String,
  data: Schema.optional(Schema.Unknown)
}) {}

/**
 * A failure of a domain above this one, kept beside its domain (orchestration's: see
 * orchestration/Errors): a tagged error that carries its own code, message and data.
 */
export interface CodedError {
  readonly _tag: string
  readonly code: number
  readonly message: string
  readonly data: unknown
}

/** Everything that can reach a client. */
export type GatewayError = InvalidParams | NotInitialized | NotConfigured | BackendError | RpcError | CodedError

export interface WireError {
  readonly code: number
  readonly message: string
  readonly data?: unknown
}

/**
 * `data` scrubbed, or left out when it is nested too deeply to walk (a backend's error can be):
 * the reply must still go out, and unscrubbed data must not.
 */
const scrubData = (data: unknown): { readonly data?: unknown } => {
  if (data === undefined) return {}
  try {
    return { data: Secrets.scrubDeep(data) }
  } catch {
    return {}
  }
}

/** MCP's "URL elicitation required": the client acts on its code and data, so they pass unchanged. */
export const URL_ELICITATION_REQUIRED = -32042

/** MCP 2026-07-28's "missing required client capability": it names what the client must declare. */
export const MISSING_CLIENT_CAPABILITY = -32021

/** A backend's own error the client acts on (its code and data), which must reach it as sent. */
const PASSED_THROUGH: ReadonlySet<unknown> = new Set([URL_ELICITATION_REQUIRED, MISSING_CLIENT_CAPABILITY])

const passedThrough = (error: GatewayError): WireError | undefined => {
  if (!(error instanceof BackendError) || error.reason !== "call_failed") return undefined
  const code = field(error.detail, "code")
  const message = stringField(error.detail, "message")
  const data = field(error.detail, "data")
  if (typeof code !== "number" || !PASSED_THROUGH.has(code) || message === undefined) return undefined
  return { code, message, ...(data === undefined ? {} : { data }) }
}

/** The wire form of a failure, with every registered secret scrubbed. */
export const toRpcError = (error: GatewayError): WireError => {
  const wire = passedThrough(error) ?? { code: error.code, message: error.message, data: error.data }
  return { code: wire.code, message: Secrets.scrub(wire.message), ...scrubData(wire.data) }
}

/** Merges `extra` into a failure's data (the server adds the query to orchestration failures). */
export const withData = (wire: WireError, extra: Record<string, unknown>): WireError => ({
  ...wire,
  data: Secrets.scrubDeep({
    ...(typeof wire.data === "object" && wire.data !== null ? wire.data : {}),
    ...extra
  })
})
