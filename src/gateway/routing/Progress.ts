/**
 * Progress tokens across the gateway, both ways: a request's token is swapped for one of the
 * gateway's own before the request goes on (a client's to a backend, a backend's to a client), so
 * two peers using the same token never see each other's progress; a notification that comes back
 * with the gateway's token is routed to whoever holds it, with the original token restored.
 */
import * as Meta from "../../json/Meta.js"
import type { RequestContext } from "../../jsonrpc/Peer.js"
import type { OnStep } from "../../orchestration/Steps.js"

/** The `_meta.progressToken` of a request's params, if any. */
export const tokenOf = (params: unknown): unknown => Meta.get(params, "progressToken")

/** The params with `_meta.progressToken` replaced by `token` (the rest of `_meta` kept). */
export const withToken = (params: unknown, token: string): unknown => Meta.merge(params, { progressToken: token })

/** With a progress token, one progress notification as each orchestration step starts. */
export const ofSteps = (context: RequestContext, progressToken: unknown): OnStep | undefined =>
  progressToken === undefined
    ? undefined
    : (step, maxSteps, tools) =>
        context.notify("notifications/progress", {
          progressToken,
          progress: step,
          total: maxSteps,
          message: `step ${step}/${maxSteps}: ${tools.join(", ")}`
        })
