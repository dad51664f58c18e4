/**
 * A stage of the call pipeline as the gateway runs it (see call/Vocabulary's `Stage`): run in
 * the call's caller's context (see Caller), so what it asks of a backend is the caller's. A stage's
 * module gives its `row`: its name, the ways of calling that meet it, and how it is built from the
 * gateway's services and the configuration in force. Adding a stage is its module and its row in
 * the pipeline's table (see Pipeline); the layer's requirements follow from the rows.
 */
import type { Effect } from "effect"
import type { ResolvedConfig } from "../../config/Config.js"
import { type Way, WAYS } from "../../call/Vocabulary.js"
import type * as Vocabulary from "../../call/Vocabulary.js"
import type { ToolCall } from "./Call.js"
import type { CurrentCaller } from "./Caller.js"

export type Next = Vocabulary.Next<ToolCall, CurrentCaller>
export type Stage = Vocabulary.Stage<ToolCall, CurrentCaller>

/** The configuration in force, read at each call (a reload changes it). */
export type Current = () => ResolvedConfig

export interface Row<R> {
  readonly name: string
  /** The ways of calling that meet this stage; the others pass it by. */
  readonly ways: ReadonlyArray<Way>
  readonly build: (current: Current) => Effect.Effect<Stage, never, R>
}

/** A stage's row; `ways` defaults to every way of calling. */
export const row = <R>(
  name: string,
  build: (current: Current) => Effect.Effect<Stage, never, R>,
  ways: ReadonlyArray<Way> = WAYS
): Row<R> => ({
  name,
  ways,
  build
})
