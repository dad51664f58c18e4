/**
 * The call pipeline's vocabulary: a call on its way to a backend, how it was made, where it goes,
 * what each stage said of it, and the one refusal a stage gives. Both the orchestration (which
 * plans calls) and the gateway (whose pipeline runs them) speak it; it sits beneath both, so
 * neither imports the other's words. The pipeline itself (its stages, their types, its table, the
 * call's trail) is the gateway's (gateway/pipeline).
 */
import { Data, type Effect } from "effect"
import type { CatalogEntry } from "../catalog/ToolCatalog.js"
import type { RequestContext } from "../jsonrpc/Peer.js"
import type { ErrorCode, GatewayError } from "../protocol/Errors.js"

/** How a call was made: the audit log's `via`. */
export type Via = "client" | "orchestration" | "script" | "task" | "backend-endpoint"

/**
 * The ways of calling, each with its table of stages (see gateway/pipeline/Pipeline): a call the
 * gateway planned (an orchestration's step, a script's call); a client's own (and a task's, an
 * endpoint's); a request other than `tools/call` (the model's, in `routing: "backend"`).
 */
export type Way = "client" | "planned" | "request"
export const WAYS: ReadonlyArray<Way> = ["client", "planned", "request"]

/** A call of a method other than `tools/call`. */
export const isRequest = (call: { readonly method?: string | undefined }): boolean =>
  call.method !== undefined && call.method !== "tools/call"

/** A call's way (see Way). */
export const wayOf = (call: { readonly via: Via; readonly method?: string | undefined }): Way =>
  isRequest(call) ? "request" : call.via === "orchestration" || call.via === "script" ? "planned" : "client"

/** The backend and its own name for the tool, and the catalog's entry when the tool is listed. */
export interface Target {
  readonly backendId: string
  readonly own: string
  readonly entry?: CatalogEntry | undefined
}

/** What a stage said of a call: the trail a call (a refused one too) is explained by. */
export interface Decision {
  readonly stage: string
  readonly said: string
  /** This stage refused the call: it went no further. */
  readonly refused?: true
  /** The rule that held or refused it (`decide`). */
  readonly rule?: string
  /** What `find` found: the tool's backend and its own name. */
  readonly target?: Target
  /** When `forward` sent it (performance.now()): the backend's time is counted from there. */
  readonly at?: number
}

/** A result an orchestration read, as the flow guard names it. */
export interface Source {
  /** Its place in the run: 1 for the first call that returned. */
  readonly call: number
  readonly backendId: string
  /** The tool as the model knows it. */
  readonly tool: string
  readonly arguments?: unknown
}

/** A value of the call's arguments that came from an earlier result. */
export interface Origin {
  /** Where in the arguments: `path`, `items[2].url`. */
  readonly path: string
  readonly from: Source
  /**
   * The value could not be traced: more was read than is indexed, and this value is not the
   * request's. It counts as private and untrusted, whatever its backend is.
   */
  readonly untraced?: true
}

/**
 * What a request asks to keep or pass on of what is read for it (see orchestration/Intent): what
 * the sources it names say (`clean.txt`, `/srv/plan.md`, `https://news.example/today`; none named,
 * nothing read is its to keep). "everything": a client's own script, whose author chose what it
 * writes before anything was read.
 */
export type Keeping = { readonly sources: ReadonlyArray<string> } | "everything"

/**
 * Where a planned call's data came from, for the flow guard: the results read before it, which of
 * its values came from them, and the tools the plan named.
 */
export interface FlowFacts {
  readonly read: ReadonlyArray<Source>
  readonly origins: ReadonlyArray<Origin>
  /** The functions the plan named before any data was read; undefined: no plan. */
  readonly plan?: ReadonlyArray<string> | undefined
  /** What the request itself asked to keep or pass on; undefined: nothing. */
  readonly keeps?: Keeping | undefined
}

/** Asks the user whether a call may run; "unavailable" when the client cannot be asked. */
export type Confirm = (call: {
  readonly tool: string
  readonly arguments: unknown
  /** Why the gateway asks besides the tool's kind: the rules that hold the call (the flow guard). */
  readonly why?: string | undefined
}) => Effect.Effect<"accepted" | "declined" | "unavailable">

/**
 * One call on its way through the pipeline, for a session of type `S` (the gateway's): who asks,
 * how the call was made, the tool and its arguments. A stage hands the next what it learnt in a
 * new call (the target `find` found, the consent `decide` asks for); what each stage decided is
 * the call's trail, kept apart by the pipeline (see gateway/pipeline/Trail).
 */
export interface Call<S> {
  /** The session it is made for; none for an app that embeds the orchestrator without a client. */
  readonly session: S | undefined
  /** The client's request it is made for (its progress and log messages travel with it). */
  readonly context: RequestContext | undefined
  readonly via: Via
  /** The name as its caller used it: the exposed name, or (`backend-endpoint`) the backend's own. */
  readonly name: string
  /** The request: `tools/call` when absent. */
  readonly method?: string | undefined
  /** The request's params as sent (arguments, `_meta`, `task`); `name` is replaced by the backend's own. */
  readonly params: Readonly<Record<string, unknown>>
  /** Known to the caller already (an orchestration's plan, a script's tool); else `find` gives it. */
  readonly target?: Target | undefined
  /** How the user is asked (`confirmTools`); none: the call is not one the gateway asks about. */
  readonly confirm?: Confirm | undefined
  /** The user already agreed (an orchestration asks for a whole turn before any of it runs). */
  readonly confirmed?: boolean | undefined
  /** A preview (a dry run): checked like any call, held back by `forward` unless the tool is read-only. */
  readonly preview?: boolean | undefined
  /** Where its data came from (the gateway's own calls: an orchestration's step, a script's call). */
  readonly flow?: FlowFacts | undefined
}

/**
 * A call a stage refused: the one failure every refusal is, whichever stage said it (`decide`'s
 * rule, the user's answer at `ask`, a limit at `count`), read by its fields rather than by its
 * wire form. Its code and `data` (the stage, the rule, what the stage adds) are what the client
 * gets, mapped once at the edge (protocol/Errors `toRpcError`): -32602 for a rule's or the user's
 * refusal, -32029 for a limit.
 */
export class CallRefused extends Data.TaggedError("CallRefused")<{
  readonly stage: "decide" | "ask" | "count"
  readonly code: typeof ErrorCode.InvalidParams | typeof ErrorCode.QuotaExceeded
  readonly message: string
  /** The rule that held it (decide's; at ask, the first of the rules the user was asked for). */
  readonly rule?: string | undefined
  /** What else the refusal says (the rules held, the user's answer, the limit and when to retry). */
  readonly detail?: Readonly<Record<string, unknown>> | undefined
}> {
  get data(): Readonly<Record<string, unknown>> {
    return { stage: this.stage, ...(this.rule === undefined ? {} : { rule: this.rule }), ...this.detail }
  }
}

/** What the pipeline's last stage says of a call it sent to its backend, and of one a preview held back. */
export const SENT: Decision = { stage: "forward", said: "sent to its backend" }
export const HELD_BACK: Decision = { stage: "forward", said: "held back: a preview runs read-only tools only" }

/** Whether the trail says the call reached its backend (`forward` sent it). */
export const wasSent = (decisions: ReadonlyArray<Decision>): boolean =>
  decisions.some((d) => d.stage === SENT.stage && d.said === SENT.said)

/** Whether the trail says a preview held the call back (`forward` did not send it). */
export const wasHeldBack = (decisions: ReadonlyArray<Decision>): boolean =>
  decisions.some((d) => d.stage === HELD_BACK.stage && d.said === HELD_BACK.said)

/** The rules that held a call the pipeline refused (decide's, or those the user was asked for), if rules held it. */
export const heldBy = (error: GatewayError): ReadonlyArray<string> | undefined => {
  if (!(error instanceof CallRefused)) return undefined
  const held = error.detail?.held
  if (Array.isArray(held)) return held.filter((r): r is string => typeof r === "string")
  return error.stage === "decide" && error.rule !== undefined ? [error.rule] : undefined
}

// A refusal joins the gateway's closed set here, beside the pipeline's words (see protocol/Errors'
// `DomainErrors`: that module names none of its members).
declare module "../protocol/Errors.js" {
  interface DomainErrors {
    readonly CallRefused: CallRefused
  }
}
