/**
 * One tool call on its way through the call pipeline (see Pipeline): who asks, how the call was
 * made, the tool and its arguments, and what each stage decided. Every `tools/call` on a backend,
 * however it was made, is one of these.
 */
import type { Effect } from "effect"
import type { CatalogEntry } from "../catalog/ToolCatalog.js"
import type { GatewayError } from "../protocol/Errors.js"
import type { RequestContext } from "../jsonrpc/Peer.js"
import type { Confirm } from "../orchestration/Steps.js"
import type { Session } from "../gateway/Session.js"

/** How a call was made: the audit log's `via`. */
export type Via = "client" | "orchestration" | "script" | "task" | "backend-endpoint"

/** The stages, in the order a call meets them. */
export const STAGES = ["record", "find", "check", "decide", "ask", "count", "forward"] as const
export type StageName = (typeof STAGES)[number]

/** What a stage said of a call: the trail a refused or held call is explained by. */
export interface Decision {
  readonly stage: StageName
  readonly said: string
  /** This stage refused the call: it went no further. */
  readonly refused?: true
}

/** The backend and its own name for the tool, and the catalog's entry when the tool is listed. */
export interface Target {
  readonly backendId: string
  readonly own: string
  readonly entry?: CatalogEntry | undefined
}

export interface ToolCall {
  /** The session it is made for; none for an app that embeds the orchestrator without a client. */
  readonly session: Session | undefined
  /** The client's request it is made for (its progress and log messages travel with it). */
  readonly context: RequestContext | undefined
  readonly via: Via
  /** The name as its caller used it: the exposed name, or (`backend-endpoint`) the backend's own. */
  readonly name: string
  /** `tools/call`'s params as sent (arguments, `_meta`, `task`); `name` is replaced by the backend's own. */
  readonly params: Readonly<Record<string, unknown>>
  /** Known to the caller already (an orchestration's plan, a script's tool); else `find` sets it. */
  target?: Target | undefined
  /** How the user is asked (`confirmTools`); none: the call is not one the gateway asks about. */
  readonly confirm?: Confirm | undefined
  /** The user already agreed (an orchestration asks for a whole turn before any of it runs). */
  readonly confirmed?: boolean | undefined
  /** How long the backend took, set by `forward`. */
  ms?: number | undefined
  /** What each stage decided, in order. */
  readonly decisions: Array<Decision>
}

/** The arguments of a call (an object; anything else is none). */
export const argumentsOf = (call: ToolCall): Record<string, unknown> => {
  const args = call.params.arguments
  return typeof args === "object" && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {}
}

export const make = (call: Omit<ToolCall, "decisions"> & { readonly decisions?: Array<Decision> }): ToolCall => ({
  ...call,
  decisions: call.decisions ?? []
})

/**
 * A call the gateway's own planning made (an orchestration's step, a script's call), as the
 * orchestrator and code mode hand it on: whoever runs it adds who asks and for which request.
 */
export interface Planned {
  readonly via: "orchestration" | "script"
  readonly name: string
  readonly target: Target | undefined
  readonly params: Readonly<Record<string, unknown>>
  readonly confirmed?: boolean | undefined
  /** Where the stages' decisions go, for the caller to read after. */
  readonly decisions: Array<Decision>
}

/** Runs a planned call through the pipeline, as the session's (or, embedded, as nobody's). */
export type RunPlanned = (planned: Planned) => Effect.Effect<unknown, GatewayError>
