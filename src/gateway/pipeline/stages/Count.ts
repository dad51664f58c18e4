/**
 * `count`: how many calls a subject, a tool or a backend may make per minute and at once
 * (`limits`), counted at every call however it was made. Past a limit the call is refused with
 * -32029 naming the limit and when to retry (`data.retryAfterMs`); a call's place in flight is
 * given back when it ends, whatever its end. It needs the tool `find` found (its backend, its
 * name); it fails with CallRefused.
 */
import { Effect } from "effect"
import { matchesGlob } from "../../../catalog/Exposure.js"
import type { Limits } from "../../../config/Limits.js"
import { ErrorCode, type GatewayError } from "../../../protocol/Errors.js"
import { CallRefused, isRequest, type ToolCall, userOf } from "../Call.js"
import { type Counted, type Taken, TeamQuotas } from "../../../store/TeamQuotas.js"
import { type Found, type Next, type Nothing, type Ran, row, type Stage } from "../Stage.js"
import type { Page } from "../Trail.js"

/** The keys a call counts against under `limits`. */
export const countedOf = (call: ToolCall, limits: Limits): ReadonlyArray<Counted> => {
  const counted: Array<Counted> = []
  if (limits.subject !== undefined) {
    counted.push({ key: `subject\u0000${userOf(call.session)}`, named: "limits.subject", limit: limits.subject })
  }
  const tool = call.target?.entry?.name ?? call.name
  // A tool's limit counts its calls; the model's reads and prompts count against the backend's.
  const tools = isRequest(call) ? {} : (limits.tools ?? {})
  const glob = Object.keys(tools).find((g) => matchesGlob(g, tool))
  const toolLimit = glob === undefined ? undefined : tools[glob]
  if (glob !== undefined && toolLimit !== undefined) {
    counted.push({ key: `tool\u0000${tool}`, named: `limits.tools["${glob}"]`, limit: toolLimit })
  }
  const backendId = call.target?.backendId
  const backends = limits.backends ?? {}
  const backend = backendId === undefined || !Object.hasOwn(backends, backendId) ? undefined : backends[backendId]
  if (backend !== undefined) {
    counted.push({ key: `backend\u0000${backendId}`, named: `limits.backends["${backendId}"]`, limit: backend })
  }
  return counted
}

/** `take`: the counters (this gateway's, or a team's: see Pipeline). */
export const make = (
  limits: () => Limits | undefined,
  take: (counted: ReadonlyArray<Counted>) => Effect.Effect<Taken>
): Stage<Found, Nothing, CallRefused> => ({
  name: "count",
  run: <C extends ToolCall & Found, E2 extends GatewayError>(call: C, next: Next<C, E2>, trail: Page) => {
    const configured = limits()
    if (configured === undefined) return next(call)
    const counted = countedOf(call, configured)
    if (counted.length === 0) return next(call)
    return Effect.flatMap(take(counted), (taken): Ran<CallRefused | E2> => {
      if (taken._tag === "Refused") {
        const seconds = Math.ceil(taken.retryAfterMs / 1_000)
        const message = `Too many calls: ${call.name} is past ${taken.named} (${taken.why}); retry in ${seconds} s`
        trail.note({ said: message, refused: true })
        return Effect.fail(
          new CallRefused({
            stage: "count",
            code: ErrorCode.QuotaExceeded,
            message,
            detail: { limit: taken.named, retryAfterMs: taken.retryAfterMs }
          })
        )
      }
      return next(call).pipe(Effect.ensuring(Effect.sync(taken.release)))
    })
  }
})

/** On this gateway's counters, or the team's in its store (see store/TeamQuotas). */
export const stage = row("count", (current) => Effect.map(TeamQuotas, (quotas) => make(() => current().limits, quotas.take)))
