/**
 * One backend served as itself, for one session (`/servers/<id>/mcp`): its names, capabilities,
 * results and errors unchanged. The gateway answers `initialize` (with the backend's own
 * capabilities), `ping`, `shutdown` and the subscriptions (shared with the aggregate's sessions);
 * everything else goes to the backend as the client sent it, its filters applied. Tasks are the
 * exception: the backend's task ids are its own for every client, so they are swapped for ids of
 * the gateway's, good only for the session that created the task, as at `/mcp` (see Tasks).
 */
import { Context, Effect, Layer } from "effect"
import { Backends, type BackendsService } from "../../backend/Backends.js"
import { Forwarder, type ForwarderService } from "../pipeline/Forwarding.js"
import { CallPipeline, type CallPipelineService } from "../pipeline/Pipeline.js"
import { Subscriptions, type SubscriptionsService } from "../routing/Subscriptions.js"
import { Views } from "./View.js"
import { BackendError, type GatewayError } from "../../protocol/Errors.js"
import type { Notification, Request } from "../../jsonrpc/JsonRpc.js"
import type { Handlers, RequestContext } from "../../jsonrpc/Peer.js"
import { field, objectOr, stringField } from "../../json/Json.js"
import * as Caller from "../pipeline/Caller.js"
import type { CurrentCaller } from "../pipeline/Caller.js"
import { catalogOf, filtersAnything } from "../../catalog/ToolCatalog.js"
import * as PolicyChecks from "../pipeline/PolicyChecks.js"
import { filteredList, hiddenBy } from "../../catalog/BackendFilters.js"
import * as Tasks from "../routing/Tasks.js"
import { guardInitialize, outOfPhase, recordClient, sessionOptions } from "./Lifecycle.js"
import * as Methods from "./Methods.js"
import * as TaskMethods from "./TaskMethods.js"
import * as Params from "./Params.js"
import { asBackendSent, type SubscriptionMethod } from "./RelayedFailure.js"
import type { Session } from "../session/Session.js"

/** The methods one backend's endpoint answers itself; every other one is forwarded to the backend. */
export const BACKEND_METHODS = [
  "initialize",
  "ping",
  "shutdown",
  "resources/subscribe",
  "resources/unsubscribe",
  "tools/call",
  ...Tasks.TASK_METHODS
] as const
type BackendMethod = (typeof BACKEND_METHODS)[number]

/** What a backend's endpoint uses of the gateway. */
export interface Deps {
  readonly backends: BackendsService
  readonly policies: PolicyChecks.Settings
  readonly forward: ForwarderService["forward"]
  readonly pipeline: CallPipelineService
  readonly subscription: SubscriptionsService["pass"]
  /** The tasks extension's rows (a backend's endpoint runs no tasks of the gateway's own). */
  readonly tasks: (session: Session) => ReturnType<typeof TaskMethods.rows>
}

/**
 * With policies: a resource read or prompt fetched only when they allow it, and a tool listing
 * without the tools the user may never call (each judged by its name in the aggregate, as calls are).
 */
const policedAt = <R>(
  ctx: Deps,
  session: Session,
  backendId: string,
  req: Request,
  sent: Effect.Effect<unknown, GatewayError, R>
): Effect.Effect<unknown, GatewayError, R> => {
  const { backends } = ctx
  if (ctx.policies.policies() === undefined) return sent
  const named = (type: "Resource" | "Prompt", key: string, action: "read" | "get") => {
    const id = stringField(req.params, key) ?? ""
    const check = PolicyChecks.allowed(
      ctx.policies,
      session,
      action,
      { type, id, backend: backendId },
      field(req.params, "arguments")
    )
    return Effect.andThen(check, sent)
  }
  if (req.method === "resources/read") return named("Resource", "uri", "read")
  if (req.method === "prompts/get") return named("Prompt", "name", "get")
  if (req.method !== "tools/list") return sent
  return Effect.map(sent, (result) => {
    const tools = field(result, "tools")
    if (!Array.isArray(tools)) return result
    const view = catalogOf(backends.toolsSync())
    const admitted = new Set(
      PolicyChecks.admitted(ctx.policies, session, view)
        .entries.filter((e) => e.backendId === backendId)
        .map((e) => e.toolName)
    )
    return { ...objectOr(result), tools: tools.filter((t) => admitted.has(stringField(t, "name") ?? "")) }
  })
}

/** The tools its pins hold back (quarantined), by their own names: listed here no more than at /mcp. */
const withoutHeldAt = <R>(
  backends: BackendsService,
  backendId: string,
  req: Request,
  sent: Effect.Effect<unknown, GatewayError, R>
): Effect.Effect<unknown, GatewayError, R> => {
  if (req.method !== "tools/list") return sent
  const listed = backends.toolsSync().find((l) => l.backendId === backendId)
  if (listed?.pinMode !== "quarantine" || listed.changed === undefined || listed.changed.length === 0) return sent
  const held = new Set(listed.changed.map((c) => c.name))
  return Effect.map(sent, (result) => {
    const tools = field(result, "tools")
    return Array.isArray(tools)
      ? { ...objectOr(result), tools: tools.filter((t) => !held.has(stringField(t, "name") ?? "")) }
      : result
  })
}

export const backend = (ctx: Deps, session: Session, backendId: string, onExit: Effect.Effect<void>): Handlers<CurrentCaller> => {
  const { backends } = ctx

  const initialize = (p: Params.InitializeParams) =>
    guardInitialize(
      session,
      Effect.gen(function* () {
        yield* sessionOptions(session, p.initializationOptions)
        // The answer is the backend's own (its capabilities, its server's name): one still starting
        // is waited for, within its start-up timeout, as a session's first request waits at /mcp.
        if (backends.backend(backendId) === undefined) yield* backends.settle
        const running = backends.backend(backendId)
        if (running === undefined) {
          // Says why (starting, failed, disabled...) through the same path as a call would.
          return yield* Caller.as({ session })(ctx.forward(undefined, backendId, "initialize", undefined))
        }
        const protocolVersion = recordClient(session, p)
        yield* Effect.logInfo("initialize", {
          session: session.id,
          backend: backendId,
          client: field(p.clientInfo, "name") ?? "unknown",
          protocolVersion
        })
        return {
          protocolVersion,
          capabilities: running.serverCapabilities,
          serverInfo: running.serverInfo,
          ...(running.instructions === undefined ? {} : { instructions: running.instructions })
        }
      }),
      Effect.void
    )

  const subscription =
    (method: SubscriptionMethod) =>
    (params: unknown, context: RequestContext): Effect.Effect<unknown, GatewayError, CurrentCaller> => {
      const hidden = hiddenBy(backends.configOf(backendId), method, params)
      if (hidden !== undefined) return Effect.fail(hidden)
      return Effect.mapError(ctx.subscription(session, context, backendId, method, params), asBackendSent)
    }

  const policed = <R>(req: Request, sent: Effect.Effect<unknown, GatewayError, R>) =>
    policedAt(ctx, session, backendId, req, sent)
  const withoutHeld = <R>(req: Request, sent: Effect.Effect<unknown, GatewayError, R>) =>
    withoutHeldAt(backends, backendId, req, sent)

  /** Anything else goes to the backend as the client sent it; its filters apply to what it names and lists. */
  const forwarded = (req: Request, context: RequestContext): Effect.Effect<unknown, GatewayError, CurrentCaller> => {
    const config = backends.configOf(backendId)
    const forwarded = withoutHeld(
      req,
      policed(req, Effect.mapError(ctx.forward(context, backendId, req.method, req.params), asBackendSent))
    )
    // The common case, no filter: the result passes through untouched.
    if (!filtersAnything(config)) return forwarded
    const hidden = hiddenBy(config, req.method, req.params)
    if (hidden !== undefined) return Effect.fail(hidden)
    return Effect.map(forwarded, (result) => filteredList(config, req.method, result))
  }

  /** A tool call takes the road every call takes (see pipeline/Pipeline), under the backend's own name. */
  const callTool = (params: unknown, context: RequestContext): Effect.Effect<unknown, GatewayError, CurrentCaller> =>
    Effect.mapError(
      ctx.pipeline.run({ context, via: "backend-endpoint", name: stringField(params, "name") ?? "", params: objectOr(params) }),
      (error) => (error instanceof BackendError ? asBackendSent(error) : error)
    )

  const methods = Methods.table({
    initialize: Methods.method(Params.InitializeParams, (p) => initialize(p)),
    // Answered here: the backend's liveness is the gateway's concern, not the client's.
    ping: Methods.constant(Effect.succeed({})),
    shutdown: Methods.constant(
      Effect.sync(() => {
        session.advance("shutdown")
        return null
      })
    ),
    "resources/subscribe": Methods.relayed(subscription("resources/subscribe")),
    "resources/unsubscribe": Methods.relayed(subscription("resources/unsubscribe")),
    "tools/call": Methods.relayed(callTool),
    ...ctx.tasks(session)
  } satisfies Record<BackendMethod, Methods.Method<CurrentCaller>>)

  const request = (req: Request, context: RequestContext): Effect.Effect<unknown, GatewayError, CurrentCaller> => {
    const refused = outOfPhase(session, req.method)
    if (refused !== undefined) return Effect.fail(refused)
    return Methods.run(methods, req, context, forwarded)
  }

  const notifications = Methods.notifications({ exit: () => onExit })

  const notification = (n: Notification): Effect.Effect<void> =>
    Methods.notify(notifications, n, (n) => Effect.logDebug("ignoring notification", { method: n.method, backend: backendId }))

  return { request, notification }
}

export class EndpointMethods extends Context.Service<
  EndpointMethods,
  { readonly open: (session: Session, backendId: string, onExit: Effect.Effect<void>) => Handlers<CurrentCaller> }
>()("mcp-agentify/EndpointMethods") {
  /** Built from the services it uses (its layer, or the gateway's methods layer: see Gateway). */
  static readonly make: Effect.Effect<
    EndpointMethods["Service"],
    never,
    Backends | Views | Forwarder | CallPipeline | Subscriptions | TaskMethods.TaskRows
  > = Effect.gen(function* () {
    const taskRows = yield* TaskMethods.TaskRows
    const deps: Deps = {
      backends: yield* Backends,
      policies: (yield* Views).policies,
      forward: (yield* Forwarder).forward,
      pipeline: yield* CallPipeline,
      subscription: (yield* Subscriptions).pass,
      tasks: (session) => taskRows.rows(session, undefined)
    }
    return { open: (session, backendId, onExit) => backend(deps, session, backendId, onExit) }
  })
  static readonly layer: Layer.Layer<
    EndpointMethods,
    never,
    Backends | Views | Forwarder | CallPipeline | Subscriptions | TaskMethods.TaskRows
  > = Layer.effect(EndpointMethods, EndpointMethods.make)
}
