/**
 * `decide`: the rules that may hold a call for what it is and where its data came from: a table of
 * named rules, each seeing the call and saying nothing (pass) or why it holds it. A rule that
 * `ask`s makes the call wait for the user's consent (the `ask` stage puts the question, naming the
 * rule and why); any other refuses it here. The flow guard's rules are here (see FlowRules); the
 * policy engine's go here too.
 */
import { Effect } from "effect"
import { CallRefused, type ToolCall } from "../Call.js"
import type { Stage } from "../Stage.js"

/** Why a rule holds a call, and what its refusal's `data` adds (the policies that forbid it). */
export interface Held {
  readonly why: string
  readonly data?: Readonly<Record<string, unknown>> | undefined
}

export interface Rule {
  readonly name: string
  /** Why the call may not run as it is, or undefined. */
  readonly refuses: (call: ToolCall) => Effect.Effect<string | Held | undefined>
  /** The call may run once the user agreed (asked by the `ask` stage); false or absent: refused. */
  readonly ask?: (() => boolean) | undefined
  /**
   * Whether the rule has anything to say of such a call at all, answered at once (no policies
   * loaded, a client's own call for the flow guard): absent, it is asked every time. A call no rule
   * concerns passes without an effect run for it (the passthrough's hot path).
   */
  readonly concerns?: ((call: ToolCall) => boolean) | undefined
}

export const make = (rules: ReadonlyArray<Rule> = []): Stage => ({
  name: "decide",
  run: (call, next) => {
    const asked = rules.filter((rule) => rule.concerns === undefined || rule.concerns(call))
    if (asked.length === 0) return next(call)
    return Effect.flatMap(
      Effect.forEach(asked, (rule) =>
        Effect.map(rule.refuses(call), (held) =>
          held === undefined ? undefined : typeof held === "string" ? { rule, why: held, data: undefined } : { rule, ...held }
        )
      ),
      (verdicts) => {
        const held = verdicts.filter((v) => v !== undefined)
        const refusal = held.find((v) => v.rule.ask?.() !== true)
        if (refusal !== undefined) {
          const message = `${call.name} refused by ${refusal.rule.name}: ${refusal.why}`
          call.decisions.push({ stage: "decide", said: message, refused: true, rule: refusal.rule.name })
          return Effect.zipRight(
            Effect.annotateCurrentSpan("agentify.call.held_by", refusal.rule.name),
            Effect.fail(
              new CallRefused({ stage: "decide", code: -32602, message, rule: refusal.rule.name, detail: refusal.data })
            )
          )
        }
        if (held.length === 0) return next(call)
        for (const { rule, why } of held) {
          call.decisions.push({ stage: "decide", said: `needs the user's consent: ${why}`, rule: rule.name })
        }
        // What `ask` asks the user for; the rules that held it on its span (and in its audit line: see Record).
        const consent = [...call.consent, ...held.map(({ rule, why }) => ({ rule: rule.name, why }))]
        return Effect.zipRight(
          Effect.annotateCurrentSpan("agentify.call.held_by", held.map((h) => h.rule.name).join(",")),
          next({ ...call, consent })
        )
      }
    )
  }
})
