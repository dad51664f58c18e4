/**
 * `ask`: `confirmTools` for a call the gateway planned (an orchestration's step, a script's call):
 * a tool it gates runs only once the user agreed. A client's own call is not asked about: the
 * client is the user's agent, and asks them itself. An orchestration asks for a whole turn before
 * any of it runs, and says so (`confirmed`).
 */
import { Effect } from "effect"
import type { ConfirmTools } from "../../../config/Config.js"
import { needsConfirmation } from "../../../orchestration/Steps.js"
import * as Secrets from "../../../observability/Secrets.js"
import { RpcError } from "../../../protocol/Errors.js"
import { objectField } from "../../../data/Json.js"
import { argumentsOf, heldBack } from "../Call.js"
import type { Stage } from "../Stage.js"

export const make = (confirmTools: () => ConfirmTools): Stage => ({
  name: "ask",
  run: (call, next) => {
    // A preview's call that will be held back is not asked about: it will not run.
    if ((call.via !== "orchestration" && call.via !== "script") || heldBack(call)) return next(call)
    const mode = confirmTools()
    if (!needsConfirmation(mode, objectField(call.target?.entry?.tool, "annotations"))) return next(call)
    if (call.confirmed === true) {
      call.decisions.push({ stage: "ask", said: "agreed before the turn ran" })
      return next(call)
    }
    const asked =
      call.confirm === undefined
        ? Effect.succeed("unavailable" as const)
        : call.confirm({ tool: call.name, arguments: Secrets.scrubArguments(argumentsOf(call)) })
    return Effect.flatMap(asked, (answer) => {
      if (answer === "accepted") {
        call.decisions.push({ stage: "ask", said: "the user agreed" })
        return next(call)
      }
      const message =
        answer === "declined"
          ? `Not run: the user declined to run ${call.name} (confirmTools: "${mode}")`
          : `Not run: ${call.name} runs only after the user agrees (confirmTools: "${mode}"), and this client cannot be asked`
      call.decisions.push({ stage: "ask", said: message, refused: true })
      return Effect.fail(new RpcError({ code: -32602, message, data: { stage: "ask", answer } }))
    })
  }
})
