/**
 * A stage of the call pipeline: one job, run around the rest of the pipeline (`next`), as
 * middleware runs around an RPC handler. A stage that refuses a call fails it without calling
 * `next`, and says why in the call's decisions; a stage that has nothing to say calls `next`.
 */
import type { Effect } from "effect"
import type { GatewayError } from "../../protocol/Errors.js"
import type { StageName, ToolCall } from "./Call.js"
import type { CurrentCaller } from "./Caller.js"

export type Next = (call: ToolCall) => Effect.Effect<unknown, GatewayError, CurrentCaller>

export interface Stage {
  readonly name: StageName
  /** Runs in the call's caller's context (see Caller): what it asks of a backend is the caller's. */
  readonly run: (call: ToolCall, next: Next) => Effect.Effect<unknown, GatewayError, CurrentCaller>
}
