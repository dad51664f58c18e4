/**
 * `forward`: the call to its backend, under the backend's own name, as the session's request (its
 * progress, log messages and questions reach the session's client). A call that may create a task
 * (the client asked for one, or a 2026-07-28 backend creates them itself) has the task adopted for
 * the session: an id of the gateway's, good only for its owner (see gateway/Tasks). It needs the
 * tool `find` found, so a pipeline that puts it before `find` does not compile; it is the last
 * stage (it calls no `next`) and fails with the backend's errors.
 */
import { Effect } from "effect"
import { Backends, type BackendsService } from "../../../backend/Backends.js"
import { idPrefixOf } from "../../../store/Replica.js"
import { Forwarder, type ForwarderService } from "../Forwarding.js"
import { Routes, type RoutesService } from "../../routing/Routes.js"
import * as Tasks from "../../routing/Tasks.js"
import type { GatewayError } from "../../../protocol/Errors.js"
import { HELD, HELD_BACK, heldBack, isRequest, SENT } from "../Call.js"
import { type Found, type Nothing, row, type Stage } from "../Stage.js"

export interface Deps {
  readonly forwarder: ForwarderService
  readonly backends: BackendsService
  readonly routes: RoutesService
  readonly idPrefix: () => string
}

export const make = ({ forwarder, backends, routes, idPrefix }: Deps): Stage<Found, Nothing, GatewayError> => {
  const facts = Tasks.factsOf(backends)
  return {
    name: "forward",
    run: (call, _next, trail) => {
      const target = call.target
      // The model's other requests (`routing: "backend"`) go as it made them.
      if (call.method !== undefined && isRequest(call)) {
        trail.note({ said: SENT.said, at: performance.now() })
        return forwarder.forward(call.context, target.backendId, call.method, call.params)
      }
      const params = call.params.name === target.own ? call.params : { ...call.params, name: target.own }
      const { session, context } = call
      if (heldBack(call)) {
        trail.note({ said: HELD_BACK.said })
        return Effect.succeed(HELD)
      }
      trail.note({ said: SENT.said, at: performance.now() })
      return session !== undefined && context !== undefined && Tasks.concerns(params, facts(target.backendId))
        ? Tasks.callTool(
            {
              routes,
              forward: (backendId, method, p) => forwarder.forward(context, backendId, method, p),
              backend: facts,
              idPrefix: idPrefix()
            },
            session,
            target.backendId,
            params
          )
        : forwarder.forward(context, target.backendId, "tools/call", params)
    }
  }
}

export const stage = row("forward", (current) =>
  Effect.map(Effect.all([Forwarder, Backends, Routes]), ([forwarder, backends, routes]) =>
    make({ forwarder, backends, routes, idPrefix: () => idPrefixOf(current()) })
  )
)
