/**
 * MCP 2026-07-28, the stateless era, served beside the session era: no `initialize` and no
 * session; every request carries its protocol version, client capabilities and log level in
 * `_meta`. `server/discover` says what the gateway offers; list results carry caching hints and
 * every result its `resultType`.
 *
 * A request is served on an ephemeral session of its own whose questions to the client (a
 * backend's `sampling/createMessage`, `elicitation/create`, `roots/list`) go to the input bridge
 * (`InputBridge`): the client gets an InputRequiredResult and answers with its retry. What every
 * transport shares of this era (checks, cancellation, one reply per id) is `Dispatch`.
 */
import { Effect, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import type { BackendsService } from "../../backend/Backends.js"
import { isOwnState } from "../clientRequests/BridgeTokens.js"
import * as InputBridge from "../clientRequests/InputBridge.js"
import { BackendError, ErrorCode, type GatewayError, toRpcError } from "../../protocol/Errors.js"
import type { GatewayService } from "../Gateway.js"
import { failure, notification, type Request, type Response, success } from "../../jsonrpc/JsonRpc.js"
import * as Mcp from "../../protocol/Mcp.js"
import type { Outbox, RequestContext } from "../../jsonrpc/Peer.js"
import * as Aggregate from "../methods/Aggregate.js"
import { type Edge, type Identity, servedState, Session, type Target } from "../session/Session.js"
import * as Json from "../../json/Json.js"
import { field, isObject, objectField, objectOr, stringField } from "../../json/Json.js"
import * as Meta from "../../json/Meta.js"
import * as Era from "../session/Era.js"
import * as Tasks from "../routing/Tasks.js"
import * as Caller from "../pipeline/Caller.js"

/** What `server/discover` lists: this era, and the session era's versions (served with `initialize`). */
export const SUPPORTED_VERSIONS: ReadonlyArray<string> = [Mcp.STATELESS_PROTOCOL_VERSION, ...Mcp.SUPPORTED_PROTOCOL_VERSIONS]

/**
 * Methods of the session era that 2026-07-28 removed: -32601 (HTTP 404). SEP-1686's `tasks/result`
 * and `tasks/list` too: the tasks extension inlines results in `tasks/get` and lists nothing.
 */
const REMOVED = new Set([
  "initialize",
  "ping",
  "logging/setLevel",
  "resources/subscribe",
  "resources/unsubscribe",
  "shutdown",
  "tasks/result",
  "tasks/list"
])
export interface Stateless {
  /**
   * Serves one stateless request (already checked) on `target`: its notifications go to `out`, its
   * one reply is the result (never a failure).
   */
  readonly serve: (
    request: Request,
    /** What its `_meta` says of its client (see Era.decode). */
    context: Era.Context,
    target: Target,
    edge: Edge,
    out: Outbox,
    /** Who the request's OAuth access token speaks for (`--http-auth oauth`). */
    identity?: Identity
  ) => Effect.Effect<Response>
  /**
   * `subscriptions/listen`: acknowledges, then relays the notifications asked for to `out` while
   * the current scope is open (the stream that carries them).
   */
  readonly listen: (request: Request, target: Target, edge: Edge, out: Outbox) => Effect.Effect<void, never, Scope.Scope>
  /** Calls open now (for tests and the debug UI). */
  readonly openCalls: () => number
}

/** What the aggregate offers a stateless client: no subscribe (subscriptions/listen replaced it), no logging/setLevel. */
const STATELESS_CAPABILITIES = {
  tools: { listChanged: true },
  resources: { listChanged: true },
  prompts: { listChanged: true },
  completions: {}
}

/** Capabilities of a backend as a 2026-07-28 server states them. */
const statelessCapabilities = (capabilities: Readonly<Record<string, unknown>>) => {
  const { logging: _logging, resources, ...rest } = capabilities
  if (!isObject(resources)) return rest
  const { subscribe: _subscribe, ...resourceRest } = resources
  return { ...rest, resources: resourceRest }
}

const describe = (
  backends: BackendsService,
  target: Target
): Effect.Effect<{ capabilities: unknown; instructions?: string; serverInfo: unknown }, GatewayError> => {
  if (target._tag === "Aggregate") {
    // The gateway runs orchestrations and scripts as tasks, and routes its backends' tasks.
    return Effect.succeed({
      capabilities: { ...STATELESS_CAPABILITIES, extensions: { [Tasks.EXTENSION]: {} } },
      instructions: Aggregate.INSTRUCTIONS,
      serverInfo: { name: Aggregate.SERVER_NAME, version: Aggregate.SERVER_VERSION }
    })
  }
  const running = backends.backend(target.backendId)
  if (running === undefined) {
    return Effect.fail(
      new BackendError({ backendId: target.backendId, reason: "not_ready", method: "server/discover", summary: "not running" })
    )
  }
  return Effect.succeed({
    capabilities: statelessCapabilities(running.serverCapabilities),
    ...(running.instructions === undefined ? {} : { instructions: running.instructions }),
    serverInfo: running.serverInfo
  })
}

/** What the stateless era is served with: the gateway's sessions, its backends, the input bridge. */
interface Deps {
  readonly gateway: GatewayService
  readonly backends: BackendsService
  readonly bridge: InputBridge.InputBridgeService
}

/** A new stateless request: an ephemeral session on the gateway, its call run in a scope of its own. */
const start = (
  { gateway, bridge }: Deps,
  request: Request,
  client: Era.Context,
  target: Target,
  edge: Edge,
  out: Outbox,
  identity?: Identity
): Effect.Effect<InputBridge.Call | Response> =>
  Effect.gen(function* () {
    const capabilities = client.clientCapabilities
    const call = yield* bridge.open(request, capabilities, out)
    if ("jsonrpc" in call) return call
    const session = new Session({
      id: `stateless-${call.id}`,
      edge,
      target,
      identity,
      send: () => false,
      ask: call.ask,
      // Ready at once, its client as the request's _meta says; no level: no log messages for
      // this request (2026-07-28 makes them opt-in per request).
      state: servedState(
        { protocolVersion: client.protocolVersion, clientInfo: client.clientInfo, capabilities },
        client.logLevel
      )
    })
    session.parked = call.parked
    session.markInitialized()
    const context: RequestContext = {
      id: request.id,
      notifyUnsafe: (method, p) => call.send(notification(method, p)),
      notify: (method, p) => Effect.sync(() => call.send(notification(method, p))),
      send: () => false
    }
    // Passed as the client sent it: a stateless backend gets its _meta (and a requestState of
    // its own, on a retry); a session-era backend never sees the era's _meta keys (Backend).
    yield* bridge.run(
      call,
      Effect.flatMap(gateway.open(session), (handlers) => Caller.as({ session })(handlers.request(request, context)))
    )
    return call
  })

/** `server/discover`'s reply: the versions served, what `target` offers, and that anyone may cache it. */
const discover = (backends: BackendsService, request: Request, target: Target) =>
  Effect.map(describe(backends, target), (d) => {
    return success(request.id, {
      supportedVersions: SUPPORTED_VERSIONS,
      capabilities: d.capabilities,
      ...(d.instructions === undefined ? {} : { instructions: d.instructions }),
      resultType: "complete",
      ttlMs: 0,
      cacheScope: "public",
      _meta: { [Mcp.Meta.serverInfo]: d.serverInfo }
    })
  })

/** Serves one stateless request; see `Stateless.serve`. */
const serve = (
  deps: Deps,
  request: Request,
  context: Era.Context,
  target: Target,
  edge: Edge,
  out: Outbox,
  identity?: Identity
): Effect.Effect<Response> =>
  Effect.gen(function* () {
    if (REMOVED.has(request.method)) {
      return failure(request.id, {
        code: ErrorCode.MethodNotFound,
        message: `Method not found: ${request.method} (removed in ${Mcp.STATELESS_PROTOCOL_VERSION})`
      })
    }
    if (request.method === "server/discover") {
      return yield* discover(deps.backends, request, target).pipe(
        Effect.catch((e) => Effect.succeed(failure(request.id, toRpcError(e, [request.method, request.params]))))
      )
    }
    const params = objectOr(request.params)
    const call =
      isOwnState(params.requestState) && InputBridge.MAY_ASK.has(request.method)
        ? yield* deps.bridge.resume(request, out)
        : yield* start(deps, request, context, target, edge, out, identity)
    if ("jsonrpc" in call) return call
    // The call's failure reaches the wire here, as a reply.
    return yield* deps.bridge
      .round(call, request)
      .pipe(Effect.catch((e) => Effect.succeed(failure(request.id, toRpcError(e, [request.method, request.params])))))
  })

/**
 * The list-changed notifications a `subscriptions/listen` request asked for (`wanted`) that the
 * target offers (`capabilities`): each notification's method, to the field of `wanted` that asked.
 */
const honoredOf = (wanted: Readonly<Record<string, unknown>>, capabilities: unknown): Record<string, string> => {
  const honored: Record<string, string> = {}
  for (const [field, capability, method] of [
    ["toolsListChanged", "tools", "notifications/tools/list_changed"],
    ["promptsListChanged", "prompts", "notifications/prompts/list_changed"],
    ["resourcesListChanged", "resources", "notifications/resources/list_changed"]
  ] as const) {
    if (wanted[field] === true && Json.field(Json.field(capabilities, capability), "listChanged") === true) {
      honored[method] = field
    }
  }
  return honored
}

/**
 * `subscriptions/listen`: the acknowledgement, then the notifications the client opted in to,
 * each tagged with the subscription's id, for as long as the current scope is open (the
 * transport's stream).
 */
const listen = ({ gateway, backends }: Deps, request: Request, target: Target, edge: Edge, out: Outbox) =>
  Effect.gen(function* () {
    const wanted = objectField(request.params, "notifications")
    if (wanted === undefined) {
      return out.send(
        failure(request.id, { code: ErrorCode.InvalidParams, message: "Invalid params: notifications must be an object" })
      )
    }
    const described = yield* Effect.result(describe(backends, target))
    if (described._tag === "Failure")
      return out.send(failure(request.id, toRpcError(described.failure, [request.method, request.params])))
    const honored = honoredOf(wanted, described.success.capabilities)
    const subscriptionId = randomBytes(12).toString("hex")
    const tagged = (params: unknown) => Meta.merge(params, { [Mcp.Meta.subscriptionId]: subscriptionId })
    out.send(
      notification("notifications/subscriptions/acknowledged", {
        notifications: Object.fromEntries(Object.values(honored).map((field) => [field, true])),
        _meta: { [Mcp.Meta.subscriptionId]: subscriptionId }
      })
    )
    const session = new Session({
      id: `listen-${subscriptionId}`,
      edge,
      target,
      state: servedState({ protocolVersion: Mcp.STATELESS_PROTOCOL_VERSION, clientInfo: undefined, capabilities: {} }, "none"),
      send: (message) => {
        const method = stringField(message, "method")
        // Only what the client asked for, whatever the gateway broadcasts.
        if (method === undefined || honored[method] === undefined) return true
        out.send(notification(method, tagged(field(message, "params"))))
        return true
      }
    })
    yield* gateway.open(session)
  })

export const make = (
  gateway: GatewayService,
  backends: BackendsService,
  bridge: InputBridge.InputBridgeService
): Effect.Effect<Stateless> =>
  Effect.sync(() => {
    const deps: Deps = { gateway, backends, bridge }
    const service: Stateless = {
      serve: (request, context, target, edge, out, identity) => serve(deps, request, context, target, edge, out, identity),
      listen: (request, target, edge, out) => listen(deps, request, target, edge, out),
      openCalls: bridge.size
    }
    return service
  })
