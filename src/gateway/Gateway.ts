/**
 * The process-wide gateway: configuration, backends, orchestrator and events, built once, and the
 * sessions open on it. The clients behind the transports (clients/Clients) open a `Session` per
 * client and get its method table.
 *
 * What a backend sends is routed here: a call's progress goes to the request that carries its
 * token (tokens are rewritten on the way in, so two sessions' tokens never meet), a log message
 * goes with the calls in flight on that backend (to every session when there are none), and a
 * change of what a session sees (tools, resources, prompts: a backend's, a profile's, a reload's)
 * reaches that session (see ListChanged). It also runs the reload of the configuration on disk.
 *
 * Layers, for the CLI and for Effect apps that embed the gateway; all take the configuration and
 * the LLM as requirements (`GatewayConfig.layer`/`layerFromOptions`, `LlmClient.layerOpenAI`/
 * `layerScripted`).
 */
import { RunSlots } from "../sandbox/Slots.js"
import { RenewalTurns } from "../auth/Renewals.js"
import * as Store from "../store/Store.js"
import * as SharedFiles from "./SharedFiles.js"
import { Context, Deferred, Effect, Layer, type Scope, Stream } from "effect"
import { Backends, type BackendsService } from "../backend/Backends.js"
import { ClientAsk, SHARED_CLIENT_CAPABILITIES } from "./clientRequests/ClientAsk.js"
import { GatewayConfig, inForce } from "../config/Config.js"
import { Events, type EventsService } from "../observability/Events.js"
import { Policies } from "../policy/Policies.js"
import { SignIns } from "../auth/SignIns.js"
import type { LlmClient } from "../orchestration/model/Llm.js"
import { Orchestrator } from "../orchestration/Orchestrator.js"
import type { Handlers } from "../jsonrpc/Peer.js"
import type { Notification } from "../jsonrpc/JsonRpc.js"
import { InputBridge } from "./clientRequests/InputBridge.js"
import { RequestStates } from "./clientRequests/RequestStates.js"
import { Routes } from "./routing/Routes.js"
import { Sessions } from "./session/Sessions.js"
import { Launch } from "./Launch.js"
import * as Tasks from "./routing/Tasks.js"
import * as Audit from "./pipeline/Audit.js"
import { CallPipeline, layerPlanned } from "./pipeline/Pipeline.js"
import * as Caller from "./pipeline/Caller.js"
import { CurrentCaller } from "./pipeline/Caller.js"
import { Forwarder } from "./pipeline/Forwarding.js"
import type { BackendRequester } from "../backend/Requester.js"
import * as Methods from "./methods/Methods.js"
import * as Aggregate from "./methods/Aggregate.js"
import { AggregateMethods } from "./methods/Aggregate.js"
import { EndpointMethods } from "./methods/BackendEndpoint.js"
import { RelayLists } from "./methods/ContentLists.js"
import { Views } from "./methods/View.js"
import { ContentRows } from "./methods/ContentMethods.js"
import { SessionRows } from "./methods/SessionMethods.js"
import { TaskRows } from "./methods/TaskMethods.js"
import { ToolRows } from "./methods/ToolMethods.js"
import { OwnTasks } from "./routing/RunTasks.js"
import { Subscriptions, type SubscriptionsService } from "./routing/Subscriptions.js"
import { profileNamed, type Session, type Target } from "./session/Session.js"
import type { Tool } from "../protocol/Mcp.js"
import { catalogOf, describeConflict, inProfile, profileServes } from "../catalog/ToolCatalog.js"
import * as ListChanged from "./routing/ListChanged.js"
import * as Notifications from "./routing/Notifications.js"
import * as Reload from "./Reload.js"
import { waitsForStart } from "./methods/Lifecycle.js"

export interface GatewayService {
  readonly mode: Aggregate.Mode
  /**
   * Opens `session` for the current scope: it receives notifications until the scope closes.
   * Returns its method table, whose requests are made for the session's caller (provide
   * `CurrentCaller` where its requests' engine is made: see pipeline/Caller); the client's `exit`
   * completes `session.ended`.
   */
  readonly open: (session: Session) => Effect.Effect<Handlers<CurrentCaller>, never, Scope.Scope>
  /** The sessions open now. */
  readonly sessions: () => ReadonlyArray<Session>
  /** The tool a client at `target` knows as `name` (its exposed name there), if one is listed. */
  readonly toolOf: (target: Target, name: string) => Tool | undefined
}

/**
 * What the gateway keeps up with for its life: each session hears of the changes to what it sees,
 * a reload of the configuration on disk, a backend restarted after a crash gets its subscriptions
 * back, and the debug UI sees every backend's state.
 */
const watch = (deps: {
  readonly config: GatewayConfig["Service"]
  readonly backends: BackendsService
  readonly events: EventsService
  readonly sessions: Iterable<Session>
  readonly listChanged: ReturnType<typeof ListChanged.make>
  readonly subscriptions: SubscriptionsService
}) =>
  Effect.gen(function* () {
    const { config, backends, events, sessions, listChanged, subscriptions } = deps
    // Each session hears of the changes to what it sees (see ListChanged); a tool whose name
    // another backend already has is said once, when its backend lists it.
    const conflictsSaid = new Set<string>()
    yield* backends.toolsChanged.pipe(
      Stream.runForEach(() =>
        Effect.suspend(() => {
          listChanged.announce(sessions)
          const conflicts = catalogOf(backends.toolsSync()).conflicts.map(describeConflict)
          const fresh = conflicts.filter((c) => !conflictsSaid.has(c))
          for (const c of fresh) conflictsSaid.add(c)
          return Effect.forEach(fresh, (c) => Effect.logError(c), { discard: true })
        })
      ),
      // Started at once: the stream subscribes when it runs, and a change published before a
      // later turn (Effect 4 starts a fork a turn later) would be missed.
      Effect.forkScoped({ startImmediately: true })
    )
    // The configuration on disk, applied as it changes (see Reload).
    if (config.disk !== undefined) {
      yield* Reload.watch({ config, backends, events }).pipe(Effect.forkScoped({ startImmediately: true }))
    }
    const lastState = new Map<string, string>()
    yield* backends.statusChanges.pipe(
      Stream.runForEach((status) =>
        Effect.suspend(() => {
          if (events.active()) events.publish({ _tag: "BackendState", at: Date.now(), status })
          const was = lastState.get(status.id)
          lastState.set(status.id, status.state)
          // Ready again after a crash (a status is also published when its tools change).
          const restarted = status.state === "ready" && was !== undefined && was !== "ready" && status.restarts > 0
          return restarted ? Effect.forkDetach(subscriptions.renew(status.id)) : Effect.void
        })
      ),
      Effect.forkScoped({ startImmediately: true })
    )
  })

/** A session opened or closed, for the debug UI. */
const publish = (events: EventsService, session: Session, state: "opened" | "closed") => {
  if (events.active()) {
    events.publish({
      _tag: "Session",
      at: Date.now(),
      sessionId: session.id,
      transport: session.edge.name,
      state,
      ...(session.subject === undefined ? {} : { subject: session.subject })
    })
  }
}

/**
 * The method table, plus what concerns the gateway's own requests to the client: its answers,
 * its progress on them, its roots changing, and when it may be asked at all.
 */
const withClientRequests = (
  clientAsk: ClientAsk["Service"],
  backends: BackendsService,
  session: Session,
  table: Handlers<CurrentCaller>
): Handlers<CurrentCaller> => {
  // The session's first requests that need the backends wait for those still starting (see Launch).
  let started = false
  const afterStart = Effect.tap(backends.settle, () => Effect.sync(() => (started = true)))
  const initialized = (n: Notification) => {
    if (session.phase === "ready") session.markInitialized()
    return table.notification(n)
  }
  const notifications = Methods.notifications({
    "notifications/initialized": initialized,
    initialized,
    "notifications/progress": (n) => clientAsk.clientProgress(session, n.params),
    "notifications/roots/list_changed": () => (session.phase === "ready" ? clientAsk.rootsChanged(session) : Effect.void)
  })
  return {
    request: (request, context) => {
      if (session.phase === "ready") session.markInitialized()
      if (started || !waitsForStart(request.method)) return table.request(request, context)
      return Effect.andThen(afterStart, table.request(request, context))
    },
    notification: (n) => Methods.notify(notifications, n, table.notification),
    response: (id, payload) => session.resolve(id, payload)
  }
}

const make = Effect.gen(function* () {
  const config = yield* GatewayConfig
  const backends = yield* Backends
  const events = yield* Events
  const routes = yield* Routes
  const registry = yield* Sessions
  const { mode } = registry
  const sessions = registry.all()
  const clientAsk = yield* ClientAsk
  // A task the gateway forgets would run on at its backend with nobody to read it: cancelled there.
  const services = yield* Effect.context<never>()
  const forwarder = yield* Forwarder
  routes.onEvicted((route) =>
    Effect.runForkWith(services)(
      Caller.as(CurrentCaller.gateway)(
        forwarder.forward(undefined, route.backendId, "tasks/cancel", { taskId: route.backendTaskId })
      ).pipe(
        Effect.catch((error) =>
          Effect.logDebug("a forgotten task was not cancelled", { backend: route.backendId, error: error.message })
        )
      )
    )
  )
  const subscriptions = yield* Subscriptions
  const relay = yield* RelayLists
  const { profileOf } = yield* Views
  // A session's method table: the aggregate's, or a backend's endpoint's (each wired by its layer).
  const aggregate = yield* AggregateMethods
  const endpoint = yield* EndpointMethods
  // The configuration in force, for `toolOf` (a tool of a profile as configured now).
  const current = yield* inForce
  const listChanged = ListChanged.make(backends, profileOf)

  yield* backends.serveRequests(clientAsk.handle)

  // Runs before the backend's later replies are delivered, so a call's progress reaches its client
  // before the result. Never blocks.
  const route = Notifications.make({ sessions, routes, invalidate: relay.invalidate })
  yield* backends.relayNotifications((notification) => Effect.sync(() => route(notification)))

  yield* watch({ config, backends, events, sessions, listChanged, subscriptions })

  const publishSession = (session: Session, state: "opened" | "closed") => publish(events, session, state)

  const open = (session: Session): Effect.Effect<Handlers<CurrentCaller>, never, Scope.Scope> =>
    Effect.acquireRelease(
      Effect.sync(() => {
        registry.add(session)
        if (session.target._tag === "Aggregate" && session.target.profile !== undefined) {
          session.scope = (backendId) => profileServes(profileOf(session), backendId)
        }
        listChanged.remember(session)
        publishSession(session, "opened")
      }),
      () =>
        Effect.sync(() => {
          registry.remove(session)
          publishSession(session, "closed")
          session.failPending()
          // A session's tasks are nobody's once it ends: cancelled at their backends (see Routes.onEvicted).
          // (A 2026-07-28 request's tasks are its subject's: they outlive the request.)
          const owner = Tasks.ownerOf(session)
          if (owner.session !== undefined) routes.forgetTasks(owner)
        }).pipe(Effect.andThen(subscriptions.drop(session)))
    ).pipe(
      Effect.as(
        withClientRequests(
          clientAsk,
          backends,
          session,
          session.target._tag === "Aggregate"
            ? aggregate.open(session, endSession(session))
            : endpoint.open(session, session.target.backendId, endSession(session))
        )
      )
    )

  const toolOf = (target: Target, name: string): Tool | undefined => {
    if (target._tag === "Backend") {
      return backends
        .toolsSync()
        .find((b) => b.backendId === target.backendId)
        ?.tools.find((tool) => tool.name === name)
    }
    const profile = profileNamed(current(), target.profile)
    return inProfile(catalogOf(backends.toolsSync()), profile).byName.get(name)?.tool
  }
  const service: GatewayService = { mode, open, sessions: () => [...sessions], toolOf }
  return service
})

const endSession = (session: Session): Effect.Effect<void> => Effect.asVoid(Deferred.succeed(session.ended, undefined))

/** Backends, the events hub and the policies in force: what every way of running the gateway stands on. */
const layerBase: Layer.Layer<Backends | BackendRequester | Policies | SignIns, never, GatewayConfig> = Backends.layerNode.pipe(
  Layer.provideMerge(Events.layer),
  Layer.merge(Policies.layer),
  Layer.merge(SignIns.layer),
  Layer.merge(RunSlots.layer)
)

/**
 * The services a gateway is wired from, one registry and one set of tables shared by all, the road
 * of its tool calls (whose last step is the session's request: see Forwarding) and the orchestrator
 * that takes it.
 */
const services = (sessions: Layer.Layer<Sessions>) =>
  Orchestrator.layer.pipe(
    Layer.provide(layerPlanned),
    Layer.provideMerge(CallPipeline.layer),
    Layer.provideMerge(Forwarder.layer),
    Layer.provideMerge(
      Layer.mergeAll(
        ClientAsk.layer.pipe(Layer.provideMerge(Layer.merge(sessions, Routes.layer))),
        Audit.Audit.layer,
        Launch.layer
      )
    )
  )

/**
 * A session's method tables (the aggregate's, a backend's endpoint's) over each concern's rows,
 * and what the rows share: the relay's lists, the subscriptions, the gateway's own tasks and what
 * each session may see. Each is a service made from the services it uses (see methods/Aggregate),
 * with a layer of its own for an app or a test; the gateway makes them in one layer, in the order
 * they need each other: ten layers cost its start about 7 ms more than the same services made in
 * one (stdio ping then EOF, whole process, median of 30 pairs).
 */
const methods = Layer.effectContext(
  Effect.gen(function* () {
    const shared = Context.make(Views, yield* Views.make).pipe(
      Context.add(OwnTasks, yield* OwnTasks.make),
      Context.add(Subscriptions, yield* Subscriptions.make),
      Context.add(RelayLists, yield* RelayLists.make)
    )
    const rows = yield* Effect.provide(
      Effect.map(
        Effect.all([SessionRows.make, ToolRows.make, ContentRows.make, TaskRows.make]),
        ([session, tools, content, tasks]) =>
          shared.pipe(
            Context.add(SessionRows, session),
            Context.add(ToolRows, tools),
            Context.add(ContentRows, content),
            Context.add(TaskRows, tasks)
          )
      ),
      shared
    )
    return yield* Effect.provide(
      Effect.map(Effect.all([AggregateMethods.make, EndpointMethods.make]), ([aggregate, endpoint]) =>
        rows.pipe(Context.add(AggregateMethods, aggregate), Context.add(EndpointMethods, endpoint))
      ),
      rows
    )
  })
)

/** The input bridge with the request states it seals (the team's key, when it shares a store). */
const bridge = InputBridge.layer.pipe(Layer.provideMerge(RequestStates.layer))

export class Gateway extends Context.Service<Gateway, GatewayService>()("mcp-agentify/Gateway") {
  /**
   * The gateway over its services: the sessions' registry (which says whether one client owns it),
   * the routing tables, what it asks of clients and the call pipeline. A test provides any of them itself.
   */
  static readonly layer: Layer.Layer<
    Gateway,
    never,
    | GatewayConfig
    | Backends
    | Routes
    | Sessions
    | ClientAsk
    | Forwarder
    | Subscriptions
    | RelayLists
    | Views
    | AggregateMethods
    | EndpointMethods
  > = Layer.effect(Gateway, make)
  /**
   * One client owns the gateway (stdio): its `initialize` configures and starts the backends. With
   * the input bridge its transport serves 2026-07-28 requests on.
   */
  static readonly layerSingle: Layer.Layer<
    Gateway | InputBridge | RequestStates | Orchestrator | Launch,
    never,
    GatewayConfig | Backends | BackendRequester | Policies | SignIns | LlmClient | Store.Store
  > = Gateway.layer.pipe(Layer.provideMerge(methods), Layer.provideMerge(services(Sessions.layerSingle)), Layer.merge(bridge))
  /** Every session shares backends started with the gateway (HTTP); with the input bridge. */
  static readonly layerShared: Layer.Layer<
    Gateway | InputBridge | RequestStates | Orchestrator | Launch,
    never,
    GatewayConfig | Backends | BackendRequester | Policies | SignIns | LlmClient | Store.Store
  > = Gateway.layer.pipe(Layer.provideMerge(methods), Layer.provideMerge(services(Sessions.layerShared)), Layer.merge(bridge))
}

/**
 * Backends, Orchestrator and the events hub, with the call pipeline straight to the backends (no
 * sessions: `check`, `trust`, an app that embeds the orchestrator); nothing started yet.
 */
export const layerCore: Layer.Layer<Orchestrator | Backends | CallPipeline, never, GatewayConfig | LlmClient> =
  Orchestrator.layer.pipe(
    Layer.provide(layerPlanned),
    Layer.provideMerge(CallPipeline.layer),
    Layer.provide(Layer.mergeAll(Forwarder.layerDirect, Routes.layer, Audit.Audit.layer, Store.layerLocal)),
    Layer.provideMerge(layerBase)
  )

/**
 * Starts every configured backend while the layer builds, telling them the client capabilities
 * given; `wait`: the layer is built once they are ready or failed, or `startupTimeoutMs` has passed
 * (an app that embeds the orchestrator uses their tools at once), else as soon as they are on
 * their way (a listener must listen at once).
 */
const startConfigured = (clientCapabilities: Readonly<Record<string, unknown>>, wait: boolean) =>
  Layer.effectDiscard(
    Effect.flatMap(Launch, (launch) => launch.start(clientCapabilities)).pipe(
      Effect.andThen(wait ? Effect.flatMap(Backends, (backends) => backends.settle) : Effect.void)
    )
  )

/**
 * For embedding: the core with every configured backend started while the layer builds, and
 * stopped when its scope closes. Use `Orchestrator` and `Backends` from it. No client is there to
 * answer backends' requests: `roots/list` gets a backend's configured `roots`, the rest -32601.
 */
export const layer: Layer.Layer<Orchestrator | Backends | CallPipeline, never, GatewayConfig | LlmClient> = startConfigured(
  {},
  true
).pipe(Layer.provide(Launch.layer), Layer.provideMerge(layerCore))

/** The stdio gateway: backends start with the client's `initialize` or first 2026-07-28 request (see Launch). */
export const layerStdio: Layer.Layer<
  Gateway | InputBridge | RequestStates | Orchestrator | Launch | Backends | SignIns | Store.Store,
  never,
  GatewayConfig | LlmClient
> = Gateway.layerSingle.pipe(Layer.provideMerge(layerBase), Layer.provideMerge(Store.layerLocal))

/**
 * The shared gateway with `observer` (the debug UI) built before the backends start, so it sees
 * their start-up.
 */
export const layerSharedWith = (
  observer: Layer.Layer<never, never, GatewayConfig | Backends>
): Layer.Layer<
  Gateway | InputBridge | RequestStates | Orchestrator | Launch | Backends | SignIns | Store.Store,
  never,
  GatewayConfig | LlmClient
> =>
  // The gateway is in place before the backends start: their first requests find it.
  startConfigured(SHARED_CLIENT_CAPABILITIES, false).pipe(
    Layer.provideMerge(Gateway.layerShared),
    // The team's tokens and pins on disk before the backends start (see SharedFiles).
    Layer.provideMerge(SharedFiles.layer),
    Layer.provideMerge(observer.pipe(Layer.provideMerge(layerBase))),
    // A token the team shares is renewed by one gateway at a time (see auth/Renewals).
    Layer.provideMerge(RenewalTurns.layerFor(process.env)),
    // What the gateways of a team share (the sessions' holders, the quotas' counts), if anything.
    Layer.provideMerge(Store.layer)
  )

/** The shared gateway: backends started with it, every session served by them (see clients/SharedSessions). */
export const layerShared: Layer.Layer<
  Gateway | InputBridge | RequestStates | Orchestrator | Launch | Backends | SignIns | Store.Store,
  never,
  GatewayConfig | LlmClient
> = layerSharedWith(Layer.empty)
