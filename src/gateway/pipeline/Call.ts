/**
 * A call as the gateway's pipeline (see Pipeline) carries it: the pipeline's vocabulary (see
 * call/Vocabulary) for the gateway's sessions, and what its stages read of a call (whose it
 * is, its arguments, whether a preview holds it back).
 */
import type { Call, Decision } from "../../call/Vocabulary.js"
import type { Session } from "../session/Session.js"
import { field, isObject } from "../../json/Json.js"

export type { Planned, RunPlanned } from "../../orchestration/Planned.js"
export {
  CallRefused,
  type Decision,
  HELD_BACK,
  isRequest,
  SENT,
  type Target,
  type Via,
  type Way,
  wasSent,
  wayOf
} from "../../call/Vocabulary.js"

/** Every `tools/call` on a backend (and the model's other requests), however it was made, is one of these. */
export type ToolCall = Call<Session>

/** Whose call it is: an access token's subject, "local" for the local user's client (or none: an embedding app), else "anonymous". */
export const userOf = (session: Session | undefined): string =>
  session?.subject ?? (session === undefined || session.edge.localUser ? "local" : "anonymous")

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
