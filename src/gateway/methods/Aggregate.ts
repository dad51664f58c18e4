/**
 * The aggregate's method table: what each JSON-RPC method does for one session of the gateway's
 * own surface (`agentify_orchestrate`, code mode, every backend's tools namespaced, resources,
 * prompts, tasks). One backend served as itself (`/servers/<id>/mcp`) is `BackendEndpoint`'s table.
 *
 * It knows nothing of stdio or HTTP, and nothing process-wide lives here: the Gateway hands it
 * what it needs (`Context`) and the session it serves. It only validates, routes and maps
 * failures (the lifecycle rules both tables keep are in Lifecycle). Longer than most modules:
 * the aggregate's orchestration entry points (progress, confirmation) sit with its tools.
 */
import { Effect } from "effect"
import type { BackendsService } from "../../backend/Backends.js"
import { relayableCapabilities } from "../ask/ClientAsk.js"
import { describeBackend, type GatewayConfig, namespaceOf, type Profile, type ResolvedConfig } from "../../config/Config.js"
import type { LaunchService } from "../Launch.js"
import { type BackendError, ErrorCode, type GatewayError, RpcError } from "../../protocol/Errors.js"
import type { Notification, Request } from "../../jsonrpc/JsonRpc.js"
import * as Logging from "../../observability/Logging.js"
import { IMPLEMENTATION } from "../../protocol/Mcp.js"
import { ORCHESTRATE_TOOL, type Orchestrator } from "../../orchestration/Orchestrator.js"
import * as RunCode from "../../orchestration/Code.js"
import type { CallPipelineService } from "../call/Pipeline.js"
import type { Handlers, RequestContext } from "../../jsonrpc/Peer.js"
import { guardInitialize, outOfPhase, recordClient, sessionOptions } from "./Lifecycle.js"
import * as Methods from "./Methods.js"
import type { Mode } from "../session/Sessions.js"
import * as Params from "./Params.js"
import type { Relay } from "./Relay.js"
import type { Session } from "../session/Session.js"
import { CurrentCaller } from "../call/Caller.js"
import type { ForwarderService } from "../call/Forwarding.js"
import { Apps, type Catalog, catalogOf, inProfile } from "../../catalog/ToolCatalog.js"
import { field } from "../../values/Json.js"
import * as Tasks from "../routing/Tasks.js"
import type * as RunTasks from "../routing/RunTasks.js"
import * as Audit from "../call/Audit.js"
import type { RoutesService } from "../routing/Routes.js"
import * as OwnWork from "./OwnWork.js"
import * as PolicyChecks from "../call/PolicyChecks.js"
export type { Mode } from "../session/Sessions.js"

export const SERVER_NAME = IMPLEMENTATION.name
export const SERVER_VERSION = IMPLEMENTATION.version

/** How sessions relate to the backends (see Sessions). */

/** What the method tables need from the process-wide Gateway. */
export interface Context {
  readonly mode: Mode
  readonly config: GatewayConfig["Type"]
  readonly backends: BackendsService
  /** Where the backends start (a single client's start with its `initialize`). */
  readonly launch: LaunchService
  readonly orchestrator: Orchestrator["Type"]
  /** The backends' resources, prompts and completion, merged and routed. */
  readonly relay: Relay
  /**
   * The profile a session is served (`/profiles/<name>/mcp`, `--profile`), as configured now;
   * undefined for the whole aggregate. A profile a reload removed admits nothing.
   */
  readonly profileOf: (session: Session) => Profile | undefined
  /** The routing tables (the aggregate's tasks are routed by them). */
  readonly routes: RoutesService
  /** The gateway's own tasks: orchestrations and scripts run for a client of the tasks extension. */
  readonly runTasks: RunTasks.RunTasks
  /** The audit log (off unless configured). */
  readonly audit: Audit.AuditService
  /** What the ids the gateway gives (sessions, tasks) start with: its `sessionIdPrefix`. */
  readonly idPrefix: () => string
  /** A team's word on a task another of its gateways gave (see routing/Tasks); absent alone. */
  readonly tasksElsewhere?: Tasks.Deps["elsewhere"]
  /** The road of every tool call on a backend (see call/Pipeline). */
  readonly pipeline: CallPipelineService
  /** The policies in force (`policies`), asked before the gateway's own work, reads and listings. */
  readonly policies: PolicyChecks.Settings
  /** A request on a backend for the current caller's request: progress and log messages follow it. */
  readonly forward: ForwarderService["forward"]
  /**
   * `resources/subscribe` or `unsubscribe` of a session on a backend: recorded, so the backend's
   * `notifications/resources/updated` reach only the sessions that subscribed, and passed on only
   * when it changes whether any session holds the URI.
   */
  readonly subscription: (
    session: Session,
    context: RequestContext,
    backendId: string,
    method: "resources/subscribe" | "resources/unsubscribe",
    params: unknown
  ) => Effect.Effect<unknown, BackendError, CurrentCaller>
}

/** The methods the aggregate answers itself (its table must have exactly these rows). */
export const AGGREGATE_METHODS = [
  "initialize",
  "ping",
  "shutdown",
  "tools/list",
  "tools/call",
  "agentify/orchestrateTask",
  "resources/list",
  "resources/templates/list",
  "prompts/list",
  "resources/read",
  "resources/subscribe",
  "resources/unsubscribe",
  "prompts/get",
  "completion/complete",
  "logging/setLevel",
  ...Tasks.TASK_METHODS
] as const
type AggregateMethod = (typeof AGGREGATE_METHODS)[number]

const unknownMethod = (request: Request) => Effect.fail(methodNotFound(request.method))
const ignored = (n: Notification) => Effect.logDebug("ignoring notification", { method: n.method })

export type SubscriptionMethod = "resources/subscribe" | "resources/unsubscribe"

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

const methodNotFound = (method: string) =>
  new RpcError({ code: ErrorCode.MethodNotFound, message: `Method not found: ${method}` })

/** The gateway's own surface for one session. */
export const aggregate = (ctx: Context, session: Session, onExit: Effect.Effect<void>): Handlers<CurrentCaller> => {
  const { backends } = ctx
  const profile = () => ctx.profileOf(session)
  // What the user may ever call of the profile's tools (listed, and offered to scripts).
  const catalog = (): Catalog =>
    PolicyChecks.admitted(ctx.policies, session, inProfile(catalogOf(backends.toolsSync()), profile()))
  /** The profile as the gateway's model may use it: without the tools the user may never call. */
  const modelProfile = (): Profile | undefined => {
    const view = inProfile(catalogOf(backends.toolsSync()), profile())
    const denied = PolicyChecks.neverCallable(ctx.policies, session, view)
    if (denied.length === 0) return profile()
    return { ...profile(), denyTools: [...(profile()?.denyTools ?? []), ...denied] }
  }
  /** Refused before it starts when the policies deny it (see PolicyChecks). */
  const allowed = (action: "orchestrate" | "run_code", name: string, args: unknown) =>
    PolicyChecks.allowed(ctx.policies, session, action, PolicyChecks.ownTool(name), args)

  const runInitialize = Effect.fn("Aggregate.initialize")(function* (p: Params.InitializeParams) {
    let config: ResolvedConfig
    if (ctx.mode === "single") {
      config = yield* ctx.config.applyInitializationOptions(p.initializationOptions)
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
        ? Effect.zipRight(Effect.logInfo("initialize did not complete: stopping the backends it started"), backends.stopAll)
        : Effect.void
    )

  /** A backend's namespace in the exposed names (its id unless configured otherwise). */
  const namespaceOfBackend = (backendId: string) => {
    const config = backends.configOf(backendId)
    return config === undefined ? backendId : namespaceOf(config)
  }

  /** Its own tools and orchestrations (see OwnWork). */
  const ownWork = OwnWork.make(ctx, session, { profile, catalog: () => catalog(), modelProfile, allowed, namespaceOfBackend })

  const listTools = Effect.gen(function* () {
    const config = yield* ctx.config.current
    const view = catalog()
    const rendersApps = Apps.rendersApps(session.clientCapabilities)
    const backendTools = config.exposeBackendTools
      ? view.entries.flatMap((e) =>
          Apps.listedFor(e.tool, rendersApps, ctx.mode === "shared")
            ? [Tasks.toolFor(e.tool, session, backendFacts(e.backendId))]
            : []
        )
      : []
    // Code mode's tool declares what this session's scripts can call (its profile's tools, no app-only one).
    const runCode =
      config.codeMode === false || !PolicyChecks.mayUseOwn(ctx.policies, session, "run_code", RunCode.RUN_CODE_TOOL_NAME)
        ? []
        : [RunCode.runCodeToolFor(Apps.forModel(view), namespaceOfBackend)]
    const orchestrate = PolicyChecks.mayUseOwn(ctx.policies, session, "orchestrate", ORCHESTRATE_TOOL.name)
      ? [ORCHESTRATE_TOOL]
      : []
    // A client of the tasks extension may get either of the gateway's own as a task (see RunTasks).
    // A session-era client may ask for one with `task` (the aggregate declares task-run tool calls).
    const own =
      Tasks.wantsTask(session) || !Tasks.statelessClient(session)
        ? [...orchestrate, ...runCode].map((tool) => ({ ...tool, execution: { taskSupport: "optional" } }))
        : [...orchestrate, ...runCode]
    return { tools: [...own, ...backendTools] }
  })

  // A plain function rather than a traced generator: this is the passthrough hot path, where a
  // span per call (and the stack captured for it) cost more than the rest of the gateway's work.
  const callTool = (p: Params.CallToolParams, context: RequestContext): Effect.Effect<unknown, GatewayError, CurrentCaller> => {
    const own = ownWork.call(p, context)
    if (own !== undefined) return own
    // Forwarded unchanged but for the backend's own tool name (_meta, a progressToken, included).
    return ctx.pipeline.run({ context, via: p.task === undefined ? "client" : "task", name: p.name, params: p })
  }

  const backendFacts = Tasks.factsOf(backends)

  /** What a task's methods use of the gateway: this session's requests on backends. */
  const taskDeps = (context: RequestContext): Tasks.Deps => ({
    routes: ctx.routes,
    forward: (backendId, method, params) => ctx.forward(context, backendId, method, params),
    backend: backendFacts,
    idPrefix: ctx.idPrefix(),
    elsewhere: ctx.tasksElsewhere
  })
  const onTask =
    (method: "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/update") =>
    (params: Params.TaskParams, context: RequestContext): Effect.Effect<unknown, GatewayError, CurrentCaller> =>
      Effect.mapError(Tasks.onTask(taskDeps(context), session, method, params, ctx.runTasks), (error) =>
        error._tag === "BackendError" ? asBackendSent(error) : error
      )

  /** A request routed to the backend that owns what it names; the backend's own errors unchanged. */
  const relayed = (
    route: Effect.Effect<{ readonly backendId: string; readonly params: unknown }, GatewayError>,
    method: string,
    context: RequestContext
  ): Effect.Effect<unknown, GatewayError, CurrentCaller> =>
    Effect.flatMap(route, ({ backendId, params }) =>
      Effect.mapError(ctx.forward(context, backendId, method, params), asBackendSent)
    )

  /** The session's own level, and the backends' (so they send what some session may want). */
  const setLevel = Effect.fn("Aggregate.setLevel")(function* ({ level }: typeof Params.SetLevelParams.Type) {
    session.setLogLevel(level)
    for (const backendId of yield* ctx.relay.loggingBackends(profile())) {
      yield* backends
        .executeOnBackend(backendId, "logging/setLevel", { level })
        .pipe(Effect.catchAll((error) => Effect.logDebug(`logging/setLevel not taken by ${backendId}: ${error.summary}`)))
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

  const subscription =
    (method: SubscriptionMethod) =>
    (params: Params.UriParams, context: RequestContext): Effect.Effect<unknown, GatewayError, CurrentCaller> =>
      Effect.flatMap(ctx.relay.routeUri(params, profile()), ({ backendId, params }) =>
        Effect.mapError(ctx.subscription(session, context, backendId, method, params), asBackendSent)
      )

  const methods = Methods.table({
    initialize: Methods.method(Params.InitializeParams, (p) => initialize(p)),
    ping: Methods.constant(Effect.succeed({})),
    shutdown: Methods.constant(shutdown),
    "tools/list": Methods.constant(listTools),
    "tools/call": Methods.method(Params.CallToolParams, callTool),
    "agentify/orchestrateTask": Methods.relayed(ownWork.orchestrateTask),
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
    ),
    "logging/setLevel": Methods.method(Params.SetLevelParams, setLevel),
    "tasks/get": Methods.method(Params.TaskParams, onTask("tasks/get")),
    "tasks/result": Methods.method(Params.TaskParams, onTask("tasks/result")),
    "tasks/cancel": Methods.method(Params.TaskParams, onTask("tasks/cancel")),
    "tasks/update": Methods.method(Params.TaskParams, onTask("tasks/update")),
    "tasks/list": Methods.relayed((_params, context) => Tasks.list(taskDeps(context), session, ctx.runTasks))
  } satisfies Record<AggregateMethod, Methods.Method<CurrentCaller>>)

  const request = (req: Request, context: RequestContext): Effect.Effect<unknown, GatewayError, CurrentCaller> => {
    const refused = outOfPhase(session, req.method)
    if (refused !== undefined) return Effect.fail(refused)
    return Methods.run(methods, req, context, unknownMethod)
  }

  const notifications = Methods.notifications({
    "notifications/initialized": () => Effect.logDebug("client initialized", { session: session.id }),
    initialized: () => Effect.logDebug("client initialized", { session: session.id }),
    exit: () => Effect.zipRight(Effect.logInfo("exit requested", { session: session.id }), onExit)
  })

  const notification = (n: Notification): Effect.Effect<void> => Methods.notify(notifications, n, ignored)

  return { request, notification }
}

/**
 * A backend's own failure, relayed as the backend sent it (code, message, data); the gateway's
 * failures (timeout, crash, not ready) stay -32004.
 */
export const asBackendSent = (error: BackendError): GatewayError => {
  const code = field(error.detail, "code")
  const message = field(error.detail, "message")
  const data = field(error.detail, "data")
  if (error.reason === "call_failed" && typeof code === "number" && typeof message === "string") {
    return new RpcError({ code, message, ...(data === undefined ? {} : { data }) })
  }
  return error
}
