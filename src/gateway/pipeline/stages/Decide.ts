/**
 * `decide`: the rules that may hold a call for what it is and where its data came from: a table of
 * named rules, each seeing the call and saying nothing (pass) or why it holds it. A rule that
 * `ask`s makes the call wait for the user's consent (the `ask` stage puts the question, naming the
 * rule and why); any other refuses it here. The flow guard's rules are here (see FlowRules); the
 * policy engine's go here too. It needs the tool `find` found (the rules judge it), provides the
 * holds that need the user's consent (`Consent`, none when no rule holds the call) to `ask`, and
 * fails with CallRefused.
 */
import { Effect } from "effect"
import { Backends } from "../../../backend/Backends.js"
import { Policies } from "../../../policy/Policies.js"
import type { GatewayError } from "../../../protocol/Errors.js"
import { CallRefused, type ToolCall } from "../Call.js"
import * as FlowRules from "../FlowRules.js"
import * as PolicyChecks from "../PolicyChecks.js"
import { AppRules, type Rule } from "../Rule.js"
import { type Consent, type Found, type Next, type Ran, row, type Stage } from "../Stage.js"
import type { Page } from "../Trail.js"

export type { Held, Rule } from "../Rule.js"

/** No rule holds the call: nothing to ask the user. */
const NONE: Consent["consent"] = []

export const make = (rules: ReadonlyArray<Rule> = []): Stage<Found, Consent, CallRefused> => ({
  name: "decide",
  run: <C extends ToolCall & Found, E2 extends GatewayError>(call: C, next: Next<C & Consent, E2>, trail: Page) => {
    const asked = rules.filter((rule) => rule.concerns === undefined || rule.concerns(call))
    if (asked.length === 0) return next({ ...call, consent: NONE })
    return Effect.flatMap(
      Effect.forEach(asked, (rule) =>
        Effect.map(rule.refuses(call), (held) =>
          held === undefined ? undefined : typeof held === "string" ? { rule, why: held, data: undefined } : { rule, ...held }
        )
      ),
      (verdicts): Ran<CallRefused | E2> => {
        const held = verdicts.filter((v) => v !== undefined)
        const refusal = held.find((v) => v.rule.ask?.() !== true)
        if (refusal !== undefined) {
          const message = `${call.name} refused by ${refusal.rule.name}: ${refusal.why}`
          trail.note({ said: message, refused: true, rule: refusal.rule.name })
          return Effect.andThen(
            Effect.annotateCurrentSpan("agentify.call.held_by", refusal.rule.name),
            Effect.fail(
              new CallRefused({ stage: "decide", code: -32602, message, rule: refusal.rule.name, detail: refusal.data })
            )
          )
        }
        if (held.length === 0) return next({ ...call, consent: NONE })
        for (const { rule, why } of held) trail.note({ said: `needs the user's consent: ${why}`, rule: rule.name })
        // What `ask` asks the user for; the rules that held it on its span (and in its audit line: see Record).
        const consent = held.map(({ rule, why }) => ({ rule: rule.name, why }))
        return Effect.andThen(
          Effect.annotateCurrentSpan("agentify.call.held_by", held.map((h) => h.rule.name).join(",")),
          next({ ...call, consent })
        )
      }
    )
  }
})

/** The policies' rule, the flow guard's, then an app's own (see Rule's `AppRules`). */
export const stage = row("decide", (current) =>
  Effect.gen(function* () {
    const policies = yield* Policies
    const backends = yield* Backends
    const own = yield* AppRules
    const flowOf = (backendId: string) => backends.configOf(backendId)?.flow
    return make([
      PolicyChecks.rule({ policies: policies.current, flowOf }, backends.configOf),
      ...FlowRules.rules({ mode: () => current().flowGuard, flowOf }),
      ...own
    ])
  })
)
