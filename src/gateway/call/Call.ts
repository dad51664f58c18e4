/**
 * One tool call on its way through the call pipeline (see Pipeline): who asks, how the call was
 * made, the tool and its arguments, and what each stage decided. Every `tools/call` on a backend,
 * however it was made, is one of these. A stage hands the next what it learnt in a new call (the
 * target `find` found, the consent `decide` needs); only the trail of decisions is written to as
 * the call goes, for whoever reads it after (the audit line, a script's record).
 */
import type { RequestContext } from "../../jsonrpc/Peer.js"
import type { Decision as PlannedDecision, FlowFacts, Target } from "../../orchestration/Planned.js"
import type { Confirm } from "../../orchestration/Steps.js"
import type { Session } from "../session/Session.js"
import { field, isObject } from "../../values/Json.js"

export type { Planned, RunPlanned, Target } from "../../orchestration/Planned.js"
export { CallRefused, HELD_BACK, SENT, wasSent } from "../../orchestration/Planned.js"

/** How a call was made: the audit log's `via`. */
export type Via = "client" | "orchestration" | "script" | "task" | "backend-endpoint"

/** The stages, in the order a call meets them. */
export const STAGES = ["record", "find", "check", "decide", "ask", "count", "credentials", "forward"] as const
export type StageName = (typeof STAGES)[number]

/**
 * The ways of calling, each with its table of stages: a call the gateway planned (an
 * orchestration's step, a script's call) is held to the tool's schema and asked about
 * (`confirmTools`); a client's own call (and a task's, an endpoint's) goes as its client sent it:
 * its client asks its user, and the backend judges its arguments.
 */
export type Way = "client" | "planned" | "request"
export const TABLES: Readonly<Record<Way, ReadonlyArray<StageName>>> = {
  client: ["record", "find", "decide", "count", "credentials", "forward"],
  planned: STAGES,
  // The model's other requests (`routing: "backend"`: reads, prompts, listings, completion): no
  // schema to hold them to, nothing a user is asked before a read.
  request: ["record", "find", "decide", "count", "credentials", "forward"]
}
/** A call's way: a request other than `tools/call` (the model's, in `routing: "backend"`), a planned call, or a client's. */
export const wayOf = (call: { readonly via: Via; readonly method?: string | undefined }): Way =>
  isRequest(call) ? "request" : call.via === "orchestration" || call.via === "script" ? "planned" : "client"

/** A call of a method other than `tools/call` (see Planned's `method`). */
export const isRequest = (call: { readonly method?: string | undefined }): boolean =>
  call.method !== undefined && call.method !== "tools/call"

/** What a stage said of a call (`stage`: one of STAGES): the trail a refused call is explained by. */
export type Decision = PlannedDecision

export interface ToolCall {
  /** The session it is made for; none for an app that embeds the orchestrator without a client. */
  readonly session: Session | undefined
  /** The client's request it is made for (its progress and log messages travel with it). */
  readonly context: RequestContext | undefined
  readonly via: Via
  /** The name as its caller used it: the exposed name, or (`backend-endpoint`) the backend's own. */
  readonly name: string
  /** The request: `tools/call` when absent (see Planned's `method`). */
  readonly method?: string | undefined
  /** `tools/call`'s params as sent (arguments, `_meta`, `task`); `name` is replaced by the backend's own. */
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
  /** What rules of `decide` need the user's consent for, and why (asked by `ask`). */
  readonly consent: ReadonlyArray<{ readonly rule: string; readonly why: string }>
  /** What each stage decided, in order: the call's trail. */
  readonly decisions: Array<Decision>
}

/** Whose call it is: an access token's subject, "local" for the stdio client (or none: an embedding app), else "anonymous". */
export const userOf = (session: Session | undefined): string =>
  session?.subject ?? (session === undefined || session.transport === "stdio" ? "local" : "anonymous")

/** Whether a preview holds this call back: its tool is not annotated read-only. */
export const heldBack = (call: ToolCall): boolean =>
  call.preview === true && field(call.target?.entry?.tool.annotations, "readOnlyHint") !== true

/** What a call held back by a preview answers, in the place of its result. */
export const HELD = { dryRun: true } as const

/** The arguments of a call (an object; anything else is none). */
export const argumentsOf = (call: ToolCall): Record<string, unknown> => {
  const args = call.params.arguments
  return isObject(args) ? args : {}
}

/** A call as its road hands it to the pipeline: who makes it is the context's (see Caller). */
export type CallRequest = Omit<ToolCall, "session" | "confirm" | "decisions" | "consent"> & {
  readonly decisions?: Array<Decision>
}

export const make = (call: Omit<ToolCall, "decisions" | "consent"> & { readonly decisions?: Array<Decision> }): ToolCall => ({
  ...call,
  consent: [],
  decisions: call.decisions ?? []
})
