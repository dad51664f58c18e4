/**
 * `ask`: the user's consent for a call the gateway planned (an orchestration's step, a script's
 * call), on two grounds: `confirmTools` (the tool's kind), and a rule of `decide` that holds the
 * call (the flow guard), whose question names the rule and why. Whatever grounds a call has, the
 * user is asked once, in one message naming every reason, and the answer counts for all of them. A
 * client's own call does not meet this stage (see its row): the client is the user's agent, and
 * asks them itself. A call the user already agreed to (`confirmed`) is asked only for a rule's
 * hold. It needs the tool `find` found (its kind) and the holds `decide` provides (`Consent`); it
 * fails with CallRefused.
 */
import { Effect } from "effect"
import type { ConfirmTools } from "../../../config/Config.js"
import { needsConfirmation } from "../../../orchestration/Steps.js"
import * as Secrets from "../../../observability/Secrets.js"
import { objectField } from "../../../json/Json.js"
import { argumentsOf, CallRefused, heldBack, type ToolCall } from "../Call.js"
import { type Consent, type Found, type Next, type Nothing, type Ran, row, type Stage } from "../Stage.js"
import type { Page } from "../Trail.js"
import type { GatewayError } from "../../../protocol/Errors.js"

/** The call on, or the user's refusal. */
type Asked<E> = Ran<CallRefused | E>

const askUser = (call: ToolCall, why: string | undefined) =>
  call.confirm === undefined
    ? Effect.succeed("unavailable" as const)
    : call.confirm({
        tool: call.name,
        arguments: Secrets.scrubArguments(argumentsOf(call)),
        ...(why === undefined ? {} : { why })
      })

/** The flow rules' holds: one question naming every rule and why. */
const consented = <C extends ToolCall & Consent, E extends GatewayError>(call: C, next: Next<C, E>, trail: Page): Asked<E> => {
  if (call.consent.length === 0) return next(call)
  const why = call.consent.map((c) => `${c.rule}: ${c.why}`).join("\n")
  const rules = call.consent.map((c) => c.rule)
  return Effect.flatMap(askUser(call, why), (answer): Asked<E> => {
    if (answer === "accepted") {
      trail.note({ said: `the user agreed (${rules.join(", ")})` })
      return next(call)
    }
    const message =
      answer === "declined"
        ? `Not run: ${call.name} was held by ${rules.join(", ")} and the user declined. ${why}`
        : `Not run: ${call.name} was held by ${rules.join(", ")} and this client cannot be asked (flowGuard: "confirm"). ${why}`
    trail.note({ said: message, refused: true, rule: rules[0]! })
    return Effect.fail(new CallRefused({ stage: "ask", code: -32602, message, rule: rules[0], detail: { held: rules, answer } }))
  })
}

export const make = (confirmTools: () => ConfirmTools): Stage<Found & Consent, Nothing, CallRefused> => ({
  name: "ask",
  run: <C extends ToolCall & Found & Consent, E2 extends GatewayError>(call: C, next: Next<C, E2>, trail: Page): Asked<E2> => {
    // A preview's call that will be held back is not asked about: it will not run.
    if (heldBack(call)) return next(call)
    const mode = confirmTools()
    if (!needsConfirmation(mode, objectField(call.target.entry?.tool, "annotations"))) return consented(call, next, trail)
    if (call.confirmed === true) {
      trail.note({ said: "agreed before the turn ran" })
      return consented(call, next, trail)
    }
    // One question for both grounds.
    const why = call.consent.length === 0 ? undefined : call.consent.map((c) => `${c.rule}: ${c.why}`).join("\n")
    return Effect.flatMap(askUser(call, why), (answer): Asked<E2> => {
      if (answer === "accepted") {
        trail.note({ said: "the user agreed" })
        return next(call)
      }
      const message =
        answer === "declined"
          ? `Not run: the user declined to run ${call.name} (confirmTools: "${mode}")`
          : `Not run: ${call.name} runs only after the user agrees (confirmTools: "${mode}"), and this client cannot be asked`
      trail.note({ said: message, refused: true })
      return Effect.fail(new CallRefused({ stage: "ask", code: -32602, message, detail: { answer, confirmTools: mode } }))
    })
  }
})

/** Only a planned call meets it. */
export const stage = row("ask", (current) => Effect.succeed(make(() => current().confirmTools)), ["planned"])
