/**
 * MCP over Streamable HTTP (protocol 2025-11-25, 2025-06-18 and 2025-03-26), on Effect's HTTP
 * server (`effect/http`): one shared gateway, many sessions.
 *
 * - `POST /mcp`: JSON-RPC in; the reply as JSON, or as an SSE stream when the request sends
 *   notifications before its result (progress, log messages). 202 for notifications and responses.
 * - `GET /mcp`: the session's own notification stream (SSE); `DELETE /mcp` ends the session.
 * - `/servers/<id>/mcp`: the same, for one backend served as itself; `/profiles/<name>/mcp` for the
 *   aggregate as a configured profile sees it.
 * - `GET /healthz` (serving) and `GET /readyz` (every enabled backend ready, else 503 with states).
 *
 * Every request passes the checks of who may reach it (HttpAccess: the token or an access token,
 * the Host and Origin checks) before anything else, then is handed to the gateway of a team that
 * holds it (HttpHandOff), then reaches its endpoint (HttpExchange). These modules carry bodies and
 * streams, and provide the Protocol (`layer`, `layerRouter`): what a body is, how it is answered
 * and every session's life are decided by the server the Protocol's run is given
 * (gateway/clients/Clients).
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpMiddleware from "effect/http/HttpMiddleware"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import type * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { Effect, Result, Layer, Option, Scope, type Redacted } from "effect"
import type * as NetAddress from "effect/net/NetAddress"
import { createServer, type Server } from "node:http"
import * as os from "node:os"
import { GatewayConfig } from "../config/Config.js"
import { ErrorCode } from "../protocol/Errors.js"
import { CALLBACK_PATH, Protocol, type Server as Clients, STOP_GRACE_MS } from "../gateway/clients/Protocol.js"
import * as HttpAccess from "./HttpAccess.js"
import type { Principal } from "./HttpAccess.js"
import * as HttpExchange from "./HttpExchange.js"
import * as HttpHandOff from "./HttpHandOff.js"
import { json, reject } from "./HttpWire.js"
import * as Listener from "./Listener.js"

export interface Options {
  /** The address to bind; 127.0.0.1 unless told otherwise. */
  readonly host: string
  /** 0 picks a free port (it is logged). */
  readonly port: number
  /** Required for a host other than loopback: every request must carry it as a bearer token. */
  readonly token?: Redacted.Redacted<string> | undefined
  /**
   * `--http-auth oauth`: every request carries an access token the configuration's `httpAuth`
   * accepts (see auth/ResourceServer); instead of `token`.
   */
  readonly oauth?: boolean | undefined
}

/** What the endpoint's handler needs to know of where it is served. */
interface AppOptions extends Omit<Options, "port"> {
  /** The port the server listens on (for the Host and Origin checks); undefined: not known. */
  readonly port: () => number | undefined
}

/**
 * The endpoint as an HttpApp (`/mcp`, `/servers/<id>/mcp`, `/profiles/<name>/mcp`, `/healthz`,
 * `/readyz`, the OAuth metadata), with its sessions living in the current scope.
 */
const makeApp = (options: AppOptions, clients: Clients) =>
  Effect.gen(function* () {
    const gatewayConfig = yield* GatewayConfig
    // The transport's own settings (bounds, hosts) are read once; what it serves (the backends and
    // profiles) is looked up as configured now, so a reload's backends are reachable.
    const config = yield* gatewayConfig.current
    const access = HttpAccess.make(options, config, gatewayConfig.current)
    // The endpoint's clients live in this scope: at shutdown their requests get a grace, then
    // they close.
    const sessions = yield* clients.shared
    // Where the other gateways of a team hand this one its sessions' requests.
    const port = options.port()
    if (port !== undefined) yield* sessions.directory.listeningAt(config.state?.address ?? reachableAt(options.host, port))
    const handOff = HttpHandOff.make(sessions, access.guards, config)
    const serveOn = HttpExchange.make(sessions, handOff, config)

    // A store that fails leaves this gateway ready (its own sessions go on), and says so: degraded.
    const readiness = Effect.zipWith(clients.readiness, sessions.directory.health, ({ ready, backends }, store) =>
      json(ready ? 200 : 503, {
        status: !ready ? "not ready" : (store?.ok ?? true) ? "ready" : "degraded",
        backends,
        ...(store === undefined ? {} : { state: store })
      })
    )

    const route = (request: HttpServerRequest.HttpServerRequest, path: string, principal: Principal) => {
      if (path === "/healthz" && (request.method === "GET" || request.method === "HEAD")) {
        return Effect.succeed(json(200, { status: "ok", sessions: sessions.size() }))
      }
      if (path === "/readyz" && (request.method === "GET" || request.method === "HEAD")) return readiness
      if (path === "/mcp") return serveOn(request, { _tag: "Aggregate" }, principal)
      const match = /^\/(servers|profiles)\/([^/]+)\/mcp$/.exec(path)
      const [, kind, encoded] = match ?? []
      if ((kind !== "servers" && kind !== "profiles") || encoded === undefined) {
        return Effect.succeed(reject(404, "Not Found: MCP is served at /mcp, /servers/<id>/mcp and /profiles/<name>/mcp"))
      }
      let name: string
      try {
        name = decodeURIComponent(encoded)
      } catch {
        return Effect.succeed(reject(404, "Not Found"))
      }
      return Effect.flatMap(clients.targetOf(kind, name), (target) =>
        "notFound" in target ? Effect.succeed(reject(404, target.notFound)) : serveOn(request, target, principal)
      )
    }

    /** A sign-in's redirect from an authorization server, in the user's browser (no token there). */
    const signedIn = (request: HttpServerRequest.HttpServerRequest) => {
      // Its `state` must be one a sign-in of this gateway waits for.
      const backend = clients.signIns.callback(request.url)
      const failed = new URL(request.url, "http://gateway").searchParams.get("error")
      const said =
        backend === undefined
          ? "No sign-in of this gateway waits for this page (it may have timed out)."
          : failed === null
            ? `mcp-agentify is signed in to ${backend}. You can close this tab.`
            : `The authorization server said: ${failed}. You can close this tab.`
      return HttpServerResponse.text(
        `<!doctype html><meta charset="utf-8"><title>mcp-agentify</title><p>${escapeHtml(said)}</p>`,
        {
          status: backend === undefined ? 404 : 200,
          contentType: "text/html; charset=utf-8"
        }
      )
    }

    // In order: what is public (the OAuth metadata, a sign-in's redirect: handed to the gateway
    // that waits for it), who may reach the rest (see HttpAccess), a session another gateway
    // holds (see HttpHandOff), then the endpoints.
    const app = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const queryAt = request.url.indexOf("?")
      const path = queryAt < 0 ? request.url : request.url.slice(0, queryAt)
      const metadata = access.metadata(request, path)
      if (metadata !== undefined) return metadata
      if (path === CALLBACK_PATH && request.method === "GET" && access.guards.hostAllowed(request.headers["host"])) {
        return (yield* handOff.signIn(request)) ?? signedIn(request)
      }
      const checked = yield* access.check(request, path)
      if (Result.isFailure(checked)) return checked.failure
      const handed = yield* handOff.session(request)
      if (handed !== undefined) return handed
      return yield* route(request, path, checked.success)
    }).pipe(
      Effect.catchCause((cause) =>
        Effect.andThen(
          Effect.logError("HTTP request failed", cause),
          Effect.succeed(reject(500, "Internal Server Error", {}, ErrorCode.InternalError))
        )
      )
    )

    return { app, handOn: handOff.handOn }
  })

/** This listener's address as another machine reaches it: a wildcard bind names the first outside address. */
const reachableAt = (host: string, port: number): string => {
  let reached = host
  if (host === "0.0.0.0" || host === "::") {
    const outside = Object.values(os.networkInterfaces())
      .flat()
      .find((i) => i !== undefined && !i.internal && i.family === "IPv4")
    reached = outside?.address ?? os.hostname()
  }
  return `http://${reached.includes(":") ? `[${reached}]` : reached}:${port}`
}

const escapeHtml = (text: string) => text.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`)

/** The port a server listens on; undefined on a Unix socket. */
const portOf = (address: NetAddress.SocketAddress): number | undefined =>
  address._tag === "UnixPathAddress" ? undefined : address.port

/** Serves `clients` over HTTP until the scope closes. */
const make = (options: Options, clients: Clients, connections?: Listener.Connections, node?: Server) =>
  Effect.gen(function* () {
    // Last of this server's finalizers, after every session closed: the connections still open
    // (keep-alive, streams a client never closed) would hold the listener's close for ever.
    // Then, as long again, for their responses to be written.
    if (connections !== undefined) yield* Effect.addFinalizer(() => connections.close(STOP_GRACE_MS))
    const server = yield* HttpServer.HttpServer
    const port = portOf(server.address) ?? options.port
    // The serving closes after the sessions (a scope made before them): at shutdown each session
    // answers its requests in flight (-32800) on their open responses; then the listener closes
    // and only then are the handlers still running interrupted.
    const serving = yield* Scope.fork(yield* Effect.scope, "sequential")
    const { app, handOn } = yield* makeApp({ ...options, port: () => port }, clients)
    const config = yield* Effect.flatMap(GatewayConfig, (c) => c.current)
    // No span per request: the gateway's own events and traces describe its exchanges, and the
    // platform's (URL parsing, a span and every header as an attribute) cost more than the rest.
    // Interruptible: the platform runs handlers uninterruptible, with the context captured where
    // this runs (the layer builds); without this no request could be stopped at shutdown. Served
    // with the server's own `serve`, not `HttpRouter.serve`: nothing logs "Listening on" (Effect's
    // default logger would write it to stdout; the line below says where it listens, to stderr).
    yield* server.serve(Effect.interruptible(app)).pipe(
      Effect.provideService(HttpMiddleware.TracerDisabledWhen, () => true),
      Scope.provide(serving)
    )
    if (node !== undefined) yield* Listener.first(node, handOn)
    const shown = options.host.includes(":") ? `[${options.host}]` : options.host
    // Sign-ins come back here: to the public address the gateway is known by (its OAuth audience's
    // origin, when it has one), else the address it listens on; an address that names no host
    // (0.0.0.0, ::) is no address for a browser: those sign-ins keep their loopback listener.
    const publicBase =
      config.httpAuth !== undefined
        ? new URL(config.httpAuth.audience).origin
        : options.host === "0.0.0.0" || options.host === "::"
          ? undefined
          : `http://${shown}:${port}`
    if (publicBase !== undefined) clients.signIns.callbacksAt(publicBase)
    yield* Effect.logInfo(`serving MCP over Streamable HTTP at http://${shown}:${port}/mcp`, {
      host: options.host,
      port,
      token: options.token === undefined ? "none" : "required",
      ...(options.oauth !== true || config.httpAuth === undefined
        ? {}
        : { oauth: `access tokens of ${config.httpAuth.issuer} for ${config.httpAuth.audience}` }),
      backends: `/servers/<id>/mcp for ${config.backends.map((b) => b.id).join(", ")}`,
      profiles:
        Object.keys(config.profiles).length === 0 ? "none" : `/profiles/<name>/mcp for ${Object.keys(config.profiles).join(", ")}`
    })
  })

/** The Protocol on a Node listener: its run serves the clients until the scope it runs in closes. */
export const layer = (options: Options): Layer.Layer<Protocol, HttpServerError.ServeError, GatewayConfig> =>
  Layer.unwrap(
    Effect.sync(() => {
      const node = createServer({ keepAliveTimeout: 65_000 })
      // Before the server listens: every connection is tracked.
      const connections = Listener.track(node)
      return Layer.effect(
        Protocol,
        Effect.map(Effect.context<HttpServer.HttpServer | GatewayConfig>(), (context) => ({
          run: (clients: Clients) => make(options, clients, connections, node).pipe(Effect.provide(context))
        }))
      ).pipe(
        // Its close waits for open responses as long as the sessions' own grace, not Effect's 20 s.
        Layer.provide(
          NodeHttpServer.layerServer(() => node, {
            host: options.host,
            port: options.port,
            gracefulShutdownTimeout: STOP_GRACE_MS
          })
        )
      )
    })
  )

/** Where an app mounts the gateway on its own router, and who may reach it there. */
export interface MountOptions {
  /** The prefix: `/agentify` serves `/agentify/mcp`, `/agentify/servers/<id>/mcp`... Default: `/`. */
  readonly path?: `/${string}` | undefined
  /** The address the app's server binds (the Host and Origin checks); default 127.0.0.1. */
  readonly host?: string | undefined
  /** Every request must carry it as a bearer token. */
  readonly token?: Redacted.Redacted<string> | undefined
  /** Every request carries an access token the configuration's `httpAuth` accepts. */
  readonly oauth?: boolean | undefined
}

/**
 * The gateway's Streamable HTTP endpoints on the app's own `HttpRouter`: the app serves the router
 * with its server (`HttpRouter.serve(layer, { disableListenLog: true })`: its "Listening on" line
 * goes to the app's loggers), and closing the layer closes the sessions. The port for the Host
 * checks is the app's server's, when it has one.
 */
export const layerRouter = (options: MountOptions = {}): Layer.Layer<Protocol, never, GatewayConfig | HttpRouter.HttpRouter> =>
  Layer.effect(
    Protocol,
    Effect.map(Effect.context<GatewayConfig | HttpRouter.HttpRouter>(), (context) => ({
      run: (clients: Clients) => mount(options, clients).pipe(Effect.provide(context))
    }))
  )

/** The endpoints added to the app's router, their sessions living in the current scope. */
const mount = (options: MountOptions, clients: Clients) =>
  Effect.flatMap(HttpRouter.HttpRouter, (router) =>
    Effect.gen(function* () {
      // The platform's service, not ours to give a default: an app may mount the router on a server of its own.
      const server = yield* Effect.serviceOption(HttpServer.HttpServer)
      const port = () => (Option.isSome(server) ? portOf(server.value.address) : undefined)
      const { app } = yield* makeApp(
        { host: options.host ?? "127.0.0.1", token: options.token, oauth: options.oauth, port },
        clients
      )
      const served = Effect.interruptible(app)
      const path = options.path ?? "/"
      if (path === "/") return yield* router.add("*", "/*", served)
      // Mounted: the endpoints see the URL under the prefix (`/agentify/mcp` as `/mcp`).
      const prefix: `/${string}` = `/${path.slice(1).replace(/\/+$/, "")}`
      const mounted = (request: HttpServerRequest.HttpServerRequest) => {
        const rest = request.url.slice(prefix.length)
        const url = rest.startsWith("/") ? rest : `/${rest}`
        return Effect.provideService(served, HttpServerRequest.HttpServerRequest, request.modify({ url }))
      }
      // One route: Effect 4's router matches `/agentify/*` for `/agentify` too (both would conflict).
      yield* router.add("*", `${prefix}/*`, mounted)
    })
  )
