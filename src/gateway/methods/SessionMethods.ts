/**
 * The aggregate's methods of the session itself: `initialize` (the owning client's start of the
 * backends, over stdio), `ping`, `shutdown` and `logging/setLevel` (the session's level, and the
 * backends' so that they send what some session may want).
 */
import { Context, Effect, Layer } from "effect"
import { Backends, type BackendsService } from "../../backend/Backends.js"
import { GatewayConfig } from "../../config/Config.js"
import { Forwarder, type ForwarderService } from "../pipeline/Forwarding.js"
import { Launch, type LaunchService } from "../Launch.js"
import type { Session } from "../session/Session.js"
import { type Mode, Sessions } from "../session/Sessions.js"
import { type Relay, RelayLists } from "./ContentLists.js"
import * as Methods from "./Methods.js"
import * as Params from "./Params.js"
import type { View } from "./View.js"
import { describeBackend, type ResolvedConfig } from "../../config/Config.js"
import * as Logging from "../../observability/Logging.js"
import { IMPLEMENTATION } from "../../protocol/Mcp.js"
import { field } from "../../json/Json.js"
import { relayableCapabilities } from "../clientRequests/ClientAsk.js"
import * as Tasks from "../routing/Tasks.js"
import { guardInitialize, recordClient, sessionOptions } from "./Lifecycle.js"

export const SERVER_NAME = IMPLEMENTATION.name
export const SERVER_VERSION = IMPLEMENTATION.version

/** What the aggregate offers: its tools, and the backends' resources, prompts, completion and logging. */
export const AGGREGATE_CAPABILITIES = {
  tools: { listChanged: true },
  resources: { subscribe: true, listChanged: true },
  prompts: { listChanged: true },
  completions: {},
  logging: {},
  tasks: Tasks.AGGREGATE_TASKS
}

export const INSTRUCTIONS =
  "Call agentify_orchestrate with a plain-language query to have the right backend tool chosen and run, or call a backend tool directly by its namespaced name."

/** What the session's own methods use of the gateway. */
export interface Deps {
  readonly mode: Mode
  readonly config: GatewayConfig["Service"]
  readonly backends: BackendsService
  /** Where the backends start (a single client's start with its `initialize`). */
  readonly launch: LaunchService
  readonly relay: Relay
  readonly forward: ForwarderService["forward"]
}

export const rows = (ctx: Deps, session: Session, view: View) => {
  const { backends } = ctx
  const { profile } = view
  const runInitialize = Effect.fn("Aggregate.initialize")(function* (p: Params.InitializeParams) {
    let config: ResolvedConfig
    if (ctx.mode === "single") {
      config = yield* ctx.config.applyInitializationOptions(p.initializationOptions)
      // What the client says it takes wins over a profile's (see Listing), as over a shared gateway.
      const listed = field(p.initializationOptions, "maxListedTools")
      if (typeof listed === "number") session.maxListedTools = listed
      yield* Logging.applyLevel(config.logLevel)
      yield* Logging.logNotes(config.notes)
    } else {
      yield* sessionOptions(session, p.initializationOptions)
      config = yield* ctx.config.current
    }
    const protocolVersion = recordClient(session, p)
    if (session.subject !== undefined) yield* Effect.annotateCurrentSpan({ subject: session.subject })
    yield* Effect.logInfo("initialize", {
      session: session.id,
      client: field(p.clientInfo, "name") ?? "unknown",
      ...(session.subject === undefined ? {} : { subject: session.subject }),
      protocolVersion,
      ...(ctx.mode === "single"
        ? {
            backendsFrom: config.backendsSource,
            backends: config.backends.map(describeBackend),
            model: config.model,
            routing: config.routing,
            openaiKey: config.openaiApiKeySource
          }
        : {})
    })
    // The backends are this client's alone: they are told what it can answer.
    if (ctx.mode === "single") yield* ctx.launch.start(relayableCapabilities(session.clientCapabilities))
    // What it is told changed from: the list now, unless backends are starting (its first
    // tools/list waits for them and gets them whole): then from when they are (see routing/ListChanged).
    session.toolsTold = backends.settling() ? undefined : session.listedTools?.()
    return {
      protocolVersion,
      capabilities: AGGREGATE_CAPABILITIES,
      serverInfo: { name: SERVER_NAME, version: SERVER_VERSION },
      instructions: INSTRUCTIONS
    }
  })

  const initialize = (params: Params.InitializeParams) =>
    guardInitialize(
      session,
      runInitialize(params),
      // A failed or cancelled initialize of the owning client stops what it started; a shared
      // gateway's backends belong to everyone.
      ctx.mode === "single"
        ? Effect.andThen(Effect.logInfo("initialize did not complete: stopping the backends it started"), backends.stopAll)
        : Effect.void
    )

  /** The session's own level, and the backends' (so they send what some session may want). */
  const setLevel = Effect.fn("Aggregate.setLevel")(function* ({ level }: typeof Params.SetLevelParams.Type) {
    session.setLogLevel(level)
    for (const backendId of yield* ctx.relay.loggingBackends(profile())) {
      yield* ctx
        .forward(undefined, backendId, "logging/setLevel", { level })
        .pipe(Effect.catch((error) => Effect.logDebug(`logging/setLevel not taken by ${backendId}: ${error.summary}`)))
    }
    return {}
  })

  const shutdown = Effect.gen(function* () {
    session.advance("shutdown")
    if (ctx.mode === "shared") {
      yield* Effect.logInfo("session shut down", { session: session.id })
      return null
    }
    yield* Effect.logInfo("shutdown requested: stopping backends")
    yield* backends.stopAll
    return null
  })

  return {
    initialize: Methods.method(Params.InitializeParams, (p) => initialize(p)),
    ping: Methods.constant(Effect.succeed({})),
    shutdown: Methods.constant(shutdown),
    "logging/setLevel": Methods.method(Params.SetLevelParams, setLevel)
  }
}

export class SessionRows extends Context.Service<
  SessionRows,
  { readonly rows: (session: Session, view: View) => ReturnType<typeof rows> }
>()("mcp-agentify/SessionRows") {
  /** Built from the services it uses (its layer, or the gateway's methods layer: see Gateway). */
  static readonly make: Effect.Effect<
    SessionRows["Service"],
    never,
    GatewayConfig | Backends | Launch | Sessions | RelayLists | Forwarder
  > = Methods.rowsOf(
    Effect.all({
      mode: Effect.map(Sessions, (sessions) => sessions.mode),
      config: GatewayConfig,
      backends: Backends,
      launch: Launch,
      relay: RelayLists,
      forward: Effect.map(Forwarder, (forwarder) => forwarder.forward)
    }),
    rows
  )
  static readonly layer: Layer.Layer<SessionRows, never, GatewayConfig | Backends | Launch | Sessions | RelayLists | Forwarder> =
    Layer.effect(SessionRows, SessionRows.make)
}
