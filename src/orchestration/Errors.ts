/**
 * The orchestrator's failures, beside it: the model chose no action (-32000), the model's request
 * failed or its plan cannot run (-32003), a planned call was held (-32602), and any failure of an
 * orchestration asked for by its method, with its query. Each is a member of protocol/Errors'
 * closed `GatewayError` with its fixed code, so the wire sees them as it sees every failure (with
 * the steps that ran before it), mapped at the edge.
 */
import { Data, Schema } from "effect"
import { codeOf, ErrorCode, type GatewayError, stepsOf } from "../protocol/Errors.js"

/**
 * How much of the model's own words an error carries: a model may answer megabytes of text, and
 * an error is read by a person (or logged); the whole of it would make the wrong error (a reply
 * over `maxReplyBytes`) and no better one.
 */
export const MODEL_MESSAGE_CHARS = 2_000

/** `text` cut to `max` characters, the cut saying how much there was. */
export const cutText = (text: string, max: number): string =>
  text.length <= max
    ? text
    : `${text.slice(0, max)}… [cut: ${max.toLocaleString("en-US")} of ${text.length.toLocaleString("en-US")} characters]`

/** -32000: the model called no tool, or more than one. */
export class NoActionDetermined extends Schema.TaggedError<NoActionDetermined>()("NoActionDetermined", {
  query: Schema.String,
  /** What the model said instead of calling a tool, if anything. */
  modelMessage: Schema.optional(Schema.String),
  toolCalls: Schema.optional(Schema.Number),
  /** The steps that ran before this failure (an orchestration's), as `_meta["agentify/steps"]` shows them. */
  steps: Schema.optional(Schema.Array(Schema.Unknown))
}) {
  readonly code = ErrorCode.NoAction
  override get message() {
    return "AI orchestrator could not determine an action for your query."
  }
  get data(): unknown {
    return {
      query: this.query,
      modelMessage: this.modelMessage === undefined ? undefined : cutText(this.modelMessage, MODEL_MESSAGE_CHARS),
      toolCalls: this.toolCalls,
      ...stepsOf(this)
    }
  }
}

/** -32003: the LLM request failed. */
export class LlmRequestFailed extends Schema.TaggedError<LlmRequestFailed>()("LlmRequestFailed", {
  reason: Schema.Literals(["auth", "rate_limit", "network", "timeout", "server", "bad_response", "other"]),
  message: Schema.String,
  status: Schema.optional(Schema.Number),
  /** The steps that ran before this failure (an orchestration's), as `_meta["agentify/steps"]` shows them. */
  steps: Schema.optional(Schema.Array(Schema.Unknown))
}) {
  readonly code = ErrorCode.LlmFailed
  get data(): unknown {
    return { reason: this.reason, status: this.status, ...stepsOf(this) }
  }
}

/** -32003: the model's plan cannot run (unknown tool, arguments not a JSON object, required missing). */
export class InvalidPlan extends Schema.TaggedError<InvalidPlan>()("InvalidPlan", {
  message: Schema.String,
  toolName: Schema.String,
  arguments: Schema.optional(Schema.Unknown),
  /** Each way the arguments break the tool's inputSchema, with its path. */
  problems: Schema.optional(Schema.Array(Schema.String)),
  /** The steps that ran before this failure (an orchestration's), as `_meta["agentify/steps"]` shows them. */
  steps: Schema.optional(Schema.Array(Schema.Unknown))
}) {
  readonly code = ErrorCode.LlmFailed
  get data(): unknown {
    return {
      toolName: this.toolName,
      arguments: this.arguments,
      ...(this.problems === undefined ? {} : { problems: this.problems }),
      ...stepsOf(this)
    }
  }
}

/** What an orchestration can fail with, of its own. */
export type OrchestrationError = NoActionDetermined | LlmRequestFailed | InvalidPlan | CallHeld

/**
 * -32602: a planned call the flow guard held (a rule of the call pipeline's `decide` stage), then
 * declined by the user, not askable, or refused (`flowGuard: "strict"`). An orchestration tells the
 * model and goes on; a script's `callTool` throws it.
 */
export class CallHeld extends Schema.TaggedError<CallHeld>()("CallHeld", {
  message: Schema.String,
  toolName: Schema.String,
  /** The rules that held it. */
  rules: Schema.Array(Schema.String)
}) {
  readonly code = ErrorCode.InvalidParams
  get data(): unknown {
    return { toolName: this.toolName, heldBy: this.rules }
  }
}

/**
 * Any failure of an orchestration asked for by `agentify/orchestrateTask`, kept as it is (its tag
 * and code) with the query it was asked: the wire form is the failure's own, its data with the
 * query added (protocol/Errors' `toRpcError`).
 */
export class OrchestrationFailed extends Data.TaggedError("OrchestrationFailed")<{
  readonly failure: Exclude<GatewayError, OrchestrationFailed>
  readonly query: string | undefined
}> {
  get code() {
    return codeOf(this.failure)
  }
  override get message() {
    return this.failure.message
  }
}

// The orchestrator's failures join the gateway's closed set here, beside their domain (see
// protocol/Errors' `DomainErrors`: that module names none of them).
declare module "../protocol/Errors.js" {
  interface DomainErrors {
    readonly NoActionDetermined: NoActionDetermined
    readonly LlmRequestFailed: LlmRequestFailed
    readonly InvalidPlan: InvalidPlan
    readonly CallHeld: CallHeld
    readonly OrchestrationFailed: OrchestrationFailed
  }
}
