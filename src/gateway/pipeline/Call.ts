/**
 * A call as the gateway's pipeline (see Pipeline) carries it: the pipeline's vocabulary (see
 * call/Vocabulary) for the gateway's sessions, and what its stages read of a call (whose it
 * is, its arguments, whether a preview holds it back). What a stage adds for the stages after it
 * is typed in Stage (`Found`, `Consent`); what each decided is the call's Trail.
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
  wasHeldBack,
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

/**
 * A call as its road hands it to the pipeline: who makes it is the context's (see Caller).
 * `decisions`: where the pipeline copies the call's finished trail as the call ends, whatever its
 * end, for the caller to read after (no stage sees it).
 */
export type CallRequest = Omit<ToolCall, "session" | "confirm"> & {
  readonly decisions?: Array<Decision> | undefined
}

/** A call as a road (or a test) makes it, with a place for its finished trail (see CallRequest). */
export const make = <C extends ToolCall & { readonly decisions?: Array<Decision> | undefined }>(
  call: C
): C & { readonly decisions: Array<Decision> } => ({ ...call, decisions: call.decisions ?? [] })
