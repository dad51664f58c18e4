/**
 * The caller a unit test's calls are made for (see gateway/pipeline/Caller): each road of the gateway
 * provides its request's; a test that builds a `ToolCall` by hand runs it as that call's own.
 */
import { Effect } from "effect"
import { it as effectIt } from "@effect/vitest"
import type { Decision, ToolCall } from "../../src/gateway/pipeline/Call.js"
import * as Caller from "../../src/gateway/pipeline/Caller.js"
import { CurrentCaller } from "../../src/gateway/pipeline/Caller.js"
import type { CallPipelineService } from "../../src/gateway/pipeline/Pipeline.js"

/** `call` through `pipeline`, made for its own session, asking as it says (its finished trail copied to its `decisions`, if it has them). */
export const runAsItsCaller = (pipeline: CallPipelineService, call: ToolCall & { readonly decisions?: Array<Decision> }) =>
  Caller.as({ session: call.session, confirm: call.confirm })(pipeline.run(call))

/** `effect` made for no client. */
export const asNobody = Caller.as(CurrentCaller.nobody)

/** `it`, whose `it.effect` bodies run for no client (stages read the call's own session). */
export const itEffect = Object.assign((name: string, body: () => unknown) => effectIt(name, body as () => void), {
  effect: (name: string, body: () => Effect.Effect<unknown, unknown, CurrentCaller>, timeout?: number) =>
    effectIt.effect(name, () => Effect.asVoid(asNobody(body())), timeout)
})
