/**
 * `record`: the call's line in the audit log (how it was made, who asked, the backend and tool, the
 * arguments as configured, the outcome, the backend's time) and its span's attributes. It stands
 * first, around every other stage, so that a call refused by any of them is recorded like any
 * other, naming the stage: it needs nothing of the call and provides nothing, and reads the
 * finished trail (see Trail) as the call ends. With the audit log off it adds nothing to the
 * call's way.
 */
import { Effect, Exit } from "effect"
import { randomUUID } from "node:crypto"
import { field } from "../../../json/Json.js"
import * as Audit from "../Audit.js"
import { argumentsOf, type ToolCall, wasHeldBack } from "../Call.js"
import { ErrorCode } from "../../../protocol/Errors.js"
import { row, type Stage } from "../Stage.js"

/**
 * What the client gets of a result: a client whose transport bounds replies is sent none over
 * `maxReplyBytes` (see transport/ReplyBound); it gets -32603 instead, and that is the call's
 * outcome as it saw it.
 */
const delivered = (call: ToolCall, result: unknown, maxReplyBytes: number): "ok" | "isError" | number => {
  if (
    call.session?.edge.boundsReplies === true &&
    call.context !== undefined &&
    call.via !== "orchestration" &&
    call.via !== "script"
  ) {
    const text = JSON.stringify(result) ?? ""
    if (text.length * 3 > maxReplyBytes && Buffer.byteLength(text, "utf8") > maxReplyBytes) return ErrorCode.InternalError
  }
  return field(result, "isError") === true ? "isError" : "ok"
}

export const make = (audit: Audit.AuditService, maxReplyBytes: () => number = () => Infinity): Stage => ({
  name: "record",
  run: (call, next, trail) => {
    if (!audit.enabled) return next(call)
    return Effect.suspend(() => {
      const id = randomUUID()
      return Effect.andThen(
        Effect.annotateCurrentSpan({ "agentify.audit.id": id, "agentify.call.via": call.via }),
        next(call)
      ).pipe(
        Effect.onExit((exit) =>
          Effect.flatMap(audit.parent, (parent) =>
            Effect.sync(() => {
              const decisions = trail.decisions()
              const refused = decisions.find((d) => d.refused === true)
              // What the stages after this one found, from the trail they left.
              const target = call.target ?? decisions.find((d) => d.target !== undefined)?.target
              const consent = decisions.flatMap((d) =>
                d.stage === "decide" && d.refused !== true && d.rule !== undefined ? [d.rule] : []
              )
              const sentAt = decisions.find((d) => d.at !== undefined)?.at
              audit.call({
                id,
                ...(parent === undefined ? {} : { parent }),
                ...(call.session === undefined ? { session: "embedded" } : Audit.whoOf(call.session)),
                via: call.via,
                request: call.context?.id ?? null,
                backend: target?.backendId,
                tool: {
                  exposed: target?.entry?.name ?? (call.via === "backend-endpoint" ? undefined : call.name),
                  own: target?.own
                },
                arguments: argumentsOf(call),
                outcome: Exit.isSuccess(exit)
                  ? wasHeldBack(decisions)
                    ? "held"
                    : delivered(call, exit.value, maxReplyBytes())
                  : Audit.outcomeOf(exit.cause),
                ...(refused === undefined ? {} : { refusedBy: refused.stage }),
                ...(consent.length === 0 && refused?.rule === undefined
                  ? {}
                  : { heldBy: [...new Set([...consent, ...(refused?.rule === undefined ? [] : [refused.rule])])] }),
                // The backend's time; a call refused before it was sent took none of it.
                ms: sentAt === undefined ? 0 : Math.round(performance.now() - sentAt)
              })
            })
          )
        )
      )
    })
  }
})

export const stage = row("record", (current) => Effect.map(Audit.Audit, (audit) => make(audit, () => current().maxReplyBytes)))
