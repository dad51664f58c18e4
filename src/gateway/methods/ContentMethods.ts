/**
 * The backends' resources, prompts and completion at the aggregate: listed merged (as the policies
 * let the session list them), each request routed to the backend that owns what it names (reads
 * and prompts judged by the policies first), subscriptions recorded per session.
 */
import { Context, Effect, Layer } from "effect"
import type { GatewayError } from "../../protocol/Errors.js"
import type { RequestContext } from "../../jsonrpc/Peer.js"
import type { CurrentCaller } from "../pipeline/Caller.js"
import type { Session } from "../session/Session.js"
import { Forwarder, type ForwarderService } from "../pipeline/Forwarding.js"
import { Subscriptions, type SubscriptionsService } from "../routing/Subscriptions.js"
import { type Relay, RelayLists } from "./ContentLists.js"
import * as Methods from "./Methods.js"
import * as Params from "./Params.js"
import { type View, Views } from "./View.js"
import { field } from "../../json/Json.js"
import * as PolicyChecks from "../pipeline/PolicyChecks.js"
import { asBackendSent, type SubscriptionMethod } from "./RelayedFailure.js"

/** What the backends' content at the aggregate uses of the gateway. */
export interface Deps {
  readonly relay: Relay
  readonly forward: ForwarderService["forward"]
  readonly policies: PolicyChecks.Settings
  /** A session's (un)subscribe: recorded, and passed on only when it changes whether any session holds the URI. */
  readonly subscription: SubscriptionsService["pass"]
}

export const rows = (ctx: Deps, session: Session, view: View) => {
  const { profile } = view
  /** A request routed to the backend that owns what it names; the backend's own errors unchanged. */
  const relayed = (
    route: Effect.Effect<{ readonly backendId: string; readonly params: unknown }, GatewayError>,
    method: string,
    context: RequestContext
  ): Effect.Effect<unknown, GatewayError, CurrentCaller> =>
    Effect.flatMap(route, ({ backendId, params }) =>
      Effect.mapError(ctx.forward(context, backendId, method, params), asBackendSent)
    )

  const subscription =
    (method: SubscriptionMethod) =>
    (params: Params.UriParams, context: RequestContext): Effect.Effect<unknown, GatewayError, CurrentCaller> =>
      Effect.flatMap(ctx.relay.routeUri(params, profile()), ({ backendId, params }) =>
        Effect.mapError(ctx.subscription(session, context, backendId, method, params), asBackendSent)
      )

  return {
    "resources/list": Methods.constant(
      Effect.suspend(() => ctx.relay.listResources(profile(), PolicyChecks.mayList(ctx.policies, session, "Resource")))
    ),
    "resources/templates/list": Methods.constant(Effect.suspend(() => ctx.relay.listResourceTemplates(profile()))),
    "prompts/list": Methods.constant(
      Effect.suspend(() => ctx.relay.listPrompts(profile(), PolicyChecks.mayList(ctx.policies, session, "Prompt")))
    ),
    "resources/read": Methods.method(Params.UriParams, (params, context, method) =>
      relayed(
        Effect.tap(ctx.relay.routeUri(params, profile()), ({ backendId }) =>
          PolicyChecks.allowed(ctx.policies, session, "read", { type: "Resource", id: params.uri, backend: backendId }, {})
        ),
        method,
        context
      )
    ),
    "resources/subscribe": Methods.method(Params.UriParams, subscription("resources/subscribe")),
    "resources/unsubscribe": Methods.method(Params.UriParams, subscription("resources/unsubscribe")),
    "prompts/get": Methods.method(Params.GetPromptParams, (params, context, method) =>
      relayed(
        Effect.tap(ctx.relay.routePrompt(params, profile()), ({ backendId }) =>
          PolicyChecks.allowed(
            ctx.policies,
            session,
            "get",
            { type: "Prompt", id: params.name, backend: backendId },
            field(params, "arguments")
          )
        ),
        method,
        context
      )
    ),
    "completion/complete": Methods.method(Params.CompleteParams, (params, context, method) =>
      relayed(ctx.relay.routeCompletion(params, profile()), method, context)
    )
  }
}

export class ContentRows extends Context.Service<
  ContentRows,
  { readonly rows: (session: Session, view: View) => ReturnType<typeof rows> }
>()("mcp-agentify/ContentRows") {
  /** Built from the services it uses (its layer, or the gateway's methods layer: see Gateway). */
  static readonly make: Effect.Effect<ContentRows["Service"], never, RelayLists | Forwarder | Views | Subscriptions> =
    Methods.rowsOf(
      Effect.all({
        relay: RelayLists,
        forward: Effect.map(Forwarder, (forwarder) => forwarder.forward),
        policies: Effect.map(Views, (views) => views.policies),
        subscription: Effect.map(Subscriptions, (subscriptions) => subscriptions.pass)
      }),
      rows
    )
  static readonly layer: Layer.Layer<ContentRows, never, RelayLists | Forwarder | Views | Subscriptions> = Layer.effect(
    ContentRows,
    ContentRows.make
  )
}
