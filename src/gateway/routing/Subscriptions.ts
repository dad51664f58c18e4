/**
 * Resource subscriptions shared by the sessions: a backend hears `resources/subscribe` when the
 * first session holds a URI and `unsubscribe` when the last lets go (or ends); a restarted backend
 * is subscribed again to what sessions still hold.
 */
import { Context, Effect, Layer } from "effect"
import type { BackendError } from "../../protocol/Errors.js"
import { field } from "../../json/Json.js"
import type { RequestContext } from "../../jsonrpc/Peer.js"
import type { Session } from "../session/Session.js"
import * as Caller from "../pipeline/Caller.js"
import { CurrentCaller } from "../pipeline/Caller.js"
import { Forwarder, type ForwarderService } from "../pipeline/Forwarding.js"
import { Routes, type RoutesService } from "./Routes.js"

export interface Options {
  readonly routes: RoutesService
  /** A request on a backend for the current caller (see pipeline/Forwarding). */
  readonly forward: ForwarderService["forward"]
}

export const make = ({ routes, forward }: Options) => {
  /** A subscription is every holder's: the backend hears of it as the gateway's own request. */
  const ownRequest = (backendId: string, method: string, params: unknown) =>
    Caller.as(CurrentCaller.gateway)(forward(undefined, backendId, method, params))
  /** A client's (un)subscribe: passed on only when it changes whether any session holds the URI. */
  const pass = (
    session: Session,
    context: RequestContext,
    backendId: string,
    method: "resources/subscribe" | "resources/unsubscribe",
    params: unknown
  ): Effect.Effect<unknown, BackendError, CurrentCaller> =>
    Effect.suspend(() => {
      const uri = field(params, "uri")
      // Without a URI the backend says what is wrong.
      if (typeof uri !== "string") return forward(context, backendId, method, params)
      if (method === "resources/subscribe") {
        const first = !routes.held(backendId, uri)
        return Effect.tap(first ? forward(context, backendId, method, params) : Effect.succeed({}), () =>
          Effect.sync(() => routes.subscribe(session, backendId, uri))
        )
      }
      if (!routes.unsubscribe(session, backendId, uri)) return Effect.succeed({})
      return forward(context, backendId, method, params)
    })

  /** A closed session's subscriptions: the backend hears of the ones nobody holds any more. */
  const drop = (session: Session) =>
    Effect.forEach(
      routes.dropSession(session),
      ({ backendId, uri }) =>
        // Not awaited: a session's end must not wait on a slow backend.
        ownRequest(backendId, "resources/unsubscribe", { uri }).pipe(Effect.timeout(5_000), Effect.ignore, Effect.forkDetach),
      { discard: true }
    )

  /** A restarted backend forgot its subscriptions: the ones sessions still hold are made again. */
  const renew = (backendId: string) =>
    Effect.forEach(
      routes.subscribedOn(backendId),
      (uri) =>
        ownRequest(backendId, "resources/subscribe", { uri }).pipe(
          Effect.timeout(10_000),
          Effect.catch((error) =>
            Effect.logWarning("could not subscribe again after a restart", { backendId, uri, error: String(error) })
          )
        ),
      { discard: true }
    )

  return { pass, drop, renew }
}

export type SubscriptionsService = ReturnType<typeof make>

export class Subscriptions extends Context.Service<Subscriptions, SubscriptionsService>()("mcp-agentify/Subscriptions") {
  /** Built from the services it uses (its layer, or the gateway's methods layer: see Gateway). */
  static readonly make: Effect.Effect<Subscriptions["Service"], never, Routes | Forwarder> = Effect.map(
    Effect.all([Routes, Forwarder]),
    ([routes, forwarder]) => make({ routes, forward: forwarder.forward })
  )
  static readonly layer: Layer.Layer<Subscriptions, never, Routes | Forwarder> = Layer.effect(Subscriptions, Subscriptions.make)
}
