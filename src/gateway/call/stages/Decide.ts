/**
 * `decide`: the rules that may refuse a call for what it is and where its data came from: a table
 * of named rules, each seeing the call and saying nothing (pass) or why it refuses. Empty today; the
 * policy engine and the flow guard are rules here.
 */
import { Effect } from "effect"
import { RpcError } from "../../../protocol/Errors.js"
import type { ToolCall } from "../Call.js"
import type { Stage } from "../Stage.js"

export interface Rule {
  readonly name: string
  /** Why the call may not run, or undefined. */
  readonly refuses: (call: ToolCall) => Effect.Effect<string | undefined>
}

export const make = (rules: ReadonlyArray<Rule> = []): Stage => ({
  name: "decide",
  run: (call, next) => {
    if (rules.length === 0) return next(call)
    return Effect.flatMap(
      Effect.forEach(rules, (rule) => Effect.map(rule.refuses(call), (why) => (why === undefined ? undefined : { rule, why }))),
      (verdicts) => {
        const refusal = verdicts.find((v) => v !== undefined)
        if (refusal === undefined) return next(call)
        const message = `${call.name} refused by ${refusal.rule.name}: ${refusal.why}`
        call.decisions.push({ stage: "decide", said: message, refused: true })
        return Effect.fail(new RpcError({ code: -32602, message, data: { stage: "decide", rule: refusal.rule.name } }))
      }
    )
  }
})
