/**
 * Stand-ins for the pipeline's stages in unit tests that build a pipeline of a few stages: what a
 * stage they leave out would have provided to the ones they keep (see gateway/pipeline/Stage).
 */
import { Effect } from "effect"
import type { Found, Nothing, Stage } from "../../src/gateway/pipeline/Stage.js"
import { InvalidParams } from "../../src/protocol/Errors.js"

/** In `find`'s place: the target a test's call comes with (a planned call's), handed on as found. */
export const given: Stage<Nothing, Found, InvalidParams> = {
  name: "given",
  run: (call, next) =>
    call.target === undefined
      ? Effect.fail(new InvalidParams({ message: `the test's call of ${call.name} has no target`, issues: [] }))
      : next({ ...call, target: call.target })
}
