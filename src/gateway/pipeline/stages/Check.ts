/**
 * `check`: a planned call's arguments against the tool's inputSchema, before any backend sees them.
 * An orchestration checks a turn's calls as it plans them (to give the model one repair turn);
 * this is where a call that reaches a backend is held to it, whoever planned it. A client's own
 * call does not meet this stage (see its row): the backend judges its arguments, as it would
 * without the gateway. It needs the tool `find` found (its schema); it fails with InvalidParams.
 */
import { Effect } from "effect"
import * as Arguments from "../../../orchestration/Arguments.js"
import { type GatewayError, InvalidParams } from "../../../protocol/Errors.js"
import { argumentsOf, type ToolCall } from "../Call.js"
import { type Found, type Next, type Nothing, type Ran, row, type Stage } from "../Stage.js"
import type { Page } from "../Trail.js"

export const make = (): Stage<Found, Nothing, InvalidParams> => ({
  name: "check",
  run: <C extends ToolCall & Found, E2 extends GatewayError>(call: C, next: Next<C, E2>, trail: Page) => {
    const schema = call.target.entry?.tool.inputSchema
    if (schema === undefined) return next(call)
    return Effect.flatMap(Arguments.check(call.name, schema, argumentsOf(call)), (problems): Ran<InvalidParams | E2> => {
      if (problems === undefined || problems.length === 0) return next(call)
      const message = `Invalid arguments for ${call.name}: ${problems.join("; ")}`
      trail.note({ said: message, refused: true })
      return Effect.fail(new InvalidParams({ message, issues: [...problems] }))
    })
  }
})

/** Only a planned call meets it. */
export const stage = row("check", () => Effect.succeed(make()), ["planned"])
