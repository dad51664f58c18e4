/**
 * The gateway's failures: a closed set of tagged errors, each with its fixed JSON-RPC code, and the
 * one mapping to the wire.
 *
 * `GatewayError` is everything that can reach a client: the wire's, a session's, the backends',
 * a sign-in's, the policies' and the tasks' failures (here), the orchestrator's (beside it, in
 * orchestration/Errors) and the call pipeline's refusal (call/Vocabulary). Each member's code
 * is one of the `ErrorCode` table's, so a failure with a code of its own does not compile. The one
 * member whose code is not the gateway's choice is `Relayed`: what a backend or a client sent,
 * passed on as sent (its code a `SentCode`, read off what arrived).
 *
 * Failures travel tagged to the edge; `toRpcError` turns one into the wire's `{code, message,
 * data}` where a reply is written (jsonrpc/Peer, gateway/clients, the answers to a backend's
 * requests), and where a value that is no reply must carry the wire's form (a tool result naming
 * its error, a task's kept failure, the terminal's printed error; see each). It scrubs registered
 * secrets, so no error can leak a key even if one slipped into a backend's message, but for what
 * the request itself sent, echoed as sent (see Secrets' `sentIn`). `codeOf` is the code alone (the
 * audit log's outcome).
 */
import { type Brand, Schema } from "effect"
import * as Secrets from "../observability/Secrets.js"
import { field, stringField } from "../json/Json.js"
import * as Depth from "../json/Depth.js"
import type { StatelessErrorCode } from "./Mcp.js"

/** The JSON-RPC codes the gateway answers with (and 2026-07-28's, in protocol/Mcp's `StatelessErrorCode`). */
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
  /** MCP 2026-07-28's "missing required client capability": `data.requiredCapabilities` names what to declare. */
  MissingClientCapability: -32021,
  /** A quota of `limits` is used up: `data.retryAfterMs` says when to try again. */
  QuotaExceeded: -32029,
  /** MCP's URLElicitationRequired: the user must open `data.elicitations[].url` (a sign-in) first. */
  UrlElicitationRequired: -32042
} as const

/** A code of the table (or of the 2026-07-28 era's): the only codes the gateway's own failures carry. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode] | (typeof StatelessErrorCode)[keyof typeof StatelessErrorCode]

/**
 * A code a peer chose: a backend's own error, a client's answer to the gateway's request, a reply
 * already on its way out. Relayed as it came; never one the gateway picks for a failure of its own.
 */
export type SentCode = number & Brand.Brand<"SentCode">
const SentCode = Schema.Number.pipe(Schema.brand("SentCode"))

/** `code`, as read off what a peer sent (see `SentCode`): only for a code that arrived. */
export const sentCode = (code: number): SentCode => code as SentCode

/** The steps that ran before a failure (an orchestration's), as `_meta["agentify/steps"]` shows them. */
export const stepsOf = (error: { readonly steps?: ReadonlyArray<unknown> | undefined }) =>
  error.steps === undefined || error.steps.length === 0 ? {} : { steps: error.steps }

/** What a failure of the wire or a session says: its message, and data when it has some. */
const Said = { message: Schema.String, data: Schema.optional(Schema.Unknown) }

/** -32600: a request the session cannot take (a second `initialize`, or one while it shuts down). */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", Said) {
  readonly code = ErrorCode.InvalidRequest
}

/** -32601: a method nobody here answers (or a question the client cannot be asked). */
export class MethodNotFound extends Schema.TaggedError<MethodNotFound>()("MethodNotFound", Said) {
  readonly code = ErrorCode.MethodNotFound
}

/** -32603: the gateway could not do what it should (no stream to ask on, a store that did not answer, a limit). */
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", Said) {
  readonly code = ErrorCode.InternalError
}

/** -32800: what was asked for was cancelled (a task's result, once the task was). */
export class RequestCancelled extends Schema.TaggedError<RequestCancelled>()("RequestCancelled", Said) {
  readonly code = ErrorCode.RequestCancelled
}

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

/** -32602: a task id that names none of the caller's tasks. */
export class UnknownTask extends Schema.TaggedError<UnknownTask>()("UnknownTask", { taskId: Schema.String }) {
  readonly code = ErrorCode.InvalidParams
  override get message() {
    return `Unknown task: ${this.taskId}`
  }
  get data(): unknown {
    return { taskId: this.taskId }
  }
}

/** -32602: `tasks/cancel` of a task that has ended (another gateway ran it; the store kept its end). */
export class TaskEnded extends Schema.TaggedError<TaskEnded>()("TaskEnded", { taskId: Schema.String }) {
  readonly code = ErrorCode.InvalidParams
  override get message() {
    return `Task ${this.taskId} has ended: it cannot be cancelled`
  }
  get data(): unknown {
    return undefined
  }
}

/** -32602: the policies refused the gateway's own work, a read or a prompt (`policies` forbid it). */
export class PolicyDenied extends Schema.TaggedError<PolicyDenied>()("PolicyDenied", {
  message: Schema.String,
  policies: Schema.Array(Schema.String)
}) {
  readonly code = ErrorCode.InvalidParams
  get data(): unknown {
    return { rule: "policies", policies: this.policies }
  }
}

/**
 * -32001: a request before `initialize` has been answered (sent first, or while it runs). The
 * message keeps the documented prefix and says what to do: a client that sends requests without
 * waiting for the reply reads only "not initialized" otherwise, having sent `initialize`.
 */
export class NotInitialized extends Schema.TaggedError<NotInitialized>()("NotInitialized", {
  method: Schema.String
}) {
  readonly code = ErrorCode.NotInitialized
  override get message() {
    return `Gateway not fully initialized: send initialize and wait for its reply before ${this.method.slice(0, 100)} (only ping and shutdown may come earlier)`
  }
  get data(): unknown {
    return { method: this.method }
  }
}

/** -32002: no usable OpenAI key, or no backend configured. `message` says what and where to set it. */
export class NotConfigured extends Schema.TaggedError<NotConfigured>()("NotConfigured", {
  message: Schema.String,
  missing: Schema.Literals(["OPENAI_API_KEY", "backends"])
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
  reason: Schema.Literals(["not_found", "not_ready", "call_failed", "timeout", "crashed", "tool_error", "overloaded"]),
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

/** -32004: signing the user in to a backend (for the call that needs it) failed; the message as a backend's failure says it. */
export class SignInFailed extends Schema.TaggedError<SignInFailed>()("SignInFailed", {
  backendId: Schema.String,
  summary: Schema.String
}) {
  readonly code = ErrorCode.BackendFailed
  override get message() {
    return `Backend '${this.backendId}' failed: ${this.summary}`
  }
  get data(): unknown {
    return undefined
  }
}

/** -32021: the client did not declare a capability the request needs (`requiredCapabilities` names it). */
export class MissingClientCapability extends Schema.TaggedError<MissingClientCapability>()("MissingClientCapability", {
  message: Schema.String,
  requiredCapabilities: Schema.Record(Schema.String, Schema.Unknown)
}) {
  readonly code = ErrorCode.MissingClientCapability
  get data(): unknown {
    return { requiredCapabilities: this.requiredCapabilities }
  }
}

/** -32042: the user must sign in first, at the URL of each of `elicitations` (a client that cannot be asked to open it). */
export class UrlElicitationRequired extends Schema.TaggedError<UrlElicitationRequired>()("UrlElicitationRequired", {
  message: Schema.String,
  elicitations: Schema.Array(Schema.Unknown)
}) {
  readonly code = ErrorCode.UrlElicitationRequired
  get data(): unknown {
    return { elicitations: this.elicitations }
  }
}

/**
 * A peer's own error, passed on as it was sent: a backend's on a request relayed to it (`backend`),
 * a client's answer to the gateway's request (`client`), a task's failure another gateway kept in
 * the team's store (`store`). Its code is the sender's (a `SentCode`), not one of the gateway's.
 */
export class Relayed extends Schema.TaggedError<Relayed>()("Relayed", {
  from: Schema.Literals(["backend", "client", "store"]),
  code: SentCode,
  message: Schema.String,
  data: Schema.optional(Schema.Unknown)
}) {}

/** What a request the gateway (or a backend, through it) puts to a client fails with. */
export type AskError = MethodNotFound | InternalError | MissingClientCapability | Relayed

/**
 * The failures of domains above this one, each kept beside its domain, which adds them to the
 * closed set itself (`declare module` in orchestration/Errors and call/Vocabulary): this module
 * names none of them, so nothing here reaches up, and nothing but a declared member is a
 * `GatewayError`. Each has a code of the table: `codeOf` does not compile otherwise.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface DomainErrors {}

/** A failure that wraps another with what was asked (an orchestration's): its wire form is the other's, with `query`. */
interface Wrapping {
  readonly failure: GatewayError
  readonly query: string | undefined
}

const isWrapping = (error: GatewayError): error is GatewayError & Wrapping => "failure" in error

/** Everything that can reach a client: the closed set. */
export type GatewayError =
  | InvalidRequest
  | MethodNotFound
  | InternalError
  | RequestCancelled
  | InvalidParams
  | UnknownTask
  | TaskEnded
  | PolicyDenied
  | NotInitialized
  | NotConfigured
  | BackendError
  | SignInFailed
  | MissingClientCapability
  | UrlElicitationRequired
  | Relayed
  | DomainErrors[keyof DomainErrors]

/** A JSON-RPC error as it goes on the wire: a code of the gateway's table, or one a peer sent. */
export interface WireError {
  readonly code: ErrorCode | SentCode
  readonly message: string
  readonly data?: unknown
}

/**
 * `data` scrubbed, or left out when it nests past the bound (see Depth; a backend's error can):
 * the reply must still go out, and unscrubbed data must not.
 */
const scrubData = (data: unknown, sent: Secrets.Sent): { readonly data?: unknown } =>
  data === undefined || Depth.exceeds(data) ? {} : { data: Secrets.scrubDeep(data, sent) }

/** MCP's "URL elicitation required": the client acts on its code and data, so they pass unchanged. */
export const URL_ELICITATION_REQUIRED = ErrorCode.UrlElicitationRequired

/** MCP 2026-07-28's "missing required client capability": it names what the client must declare. */
export const MISSING_CLIENT_CAPABILITY = ErrorCode.MissingClientCapability

/** Whether a backend's own code is one the client acts on (its code and data), which must reach it as sent. */
const passesThrough = (code: unknown): code is typeof URL_ELICITATION_REQUIRED | typeof MISSING_CLIENT_CAPABILITY =>
  code === URL_ELICITATION_REQUIRED || code === MISSING_CLIENT_CAPABILITY

const passedThrough = (error: GatewayError): WireError | undefined => {
  if (!(error instanceof BackendError) || error.reason !== "call_failed") return undefined
  const code = field(error.detail, "code")
  const message = stringField(error.detail, "message")
  const data = field(error.detail, "data")
  if (!passesThrough(code) || message === undefined) return undefined
  return { code, message, ...(data === undefined ? {} : { data }) }
}

/** The code a failure reaches the wire with (a backend's passed-through code included). */
export const codeOf = (error: GatewayError): ErrorCode | SentCode =>
  isWrapping(error) ? codeOf(error.failure) : (passedThrough(error)?.code ?? error.code)

/**
 * The wire form of a failure, with every registered secret scrubbed but those in `sent`: the
 * params of the request it answers, whose own words its reply echoes as they were sent.
 */
export const toRpcError = (error: GatewayError, sent?: unknown): WireError => wireOf(error, Secrets.sentIn(sent))

const wireOf = (error: GatewayError, sent: Secrets.Sent): WireError => {
  // An orchestration's failure carries its query: merged into the data of the failure's own form.
  if (isWrapping(error)) {
    const wire = wireOf(error.failure, sent)
    return withData(wire, error.query === undefined ? {} : { query: error.query }, sent)
  }
  const wire = passedThrough(error) ?? { code: error.code, message: error.message, data: error.data }
  return { code: wire.code, message: Secrets.scrub(wire.message, sent), ...scrubData(wire.data, sent) }
}

/** Merges `extra` into a wire error's data. */
const withData = (wire: WireError, extra: Record<string, unknown>, sent: Secrets.Sent): WireError => ({
  ...wire,
  data: Secrets.scrubDeep(
    {
      ...(typeof wire.data === "object" && wire.data !== null ? wire.data : {}),
      ...extra
    },
    sent
  )
})
