/**
 * MCP over Streamable HTTP (protocol 2025-11-25, 2025-06-18 and 2025-03-26), on @effect/platform's
 * HTTP server: one shared gateway, many sessions.
 *
 * - `POST /mcp`: JSON-RPC in; the reply as JSON, or as an SSE stream when the request sends
 *   notifications before its result (progress, log messages). 202 for notifications and responses.
 * - `GET /mcp`: the session's own notification stream (SSE); `DELETE /mcp` ends the session.
 * - `/servers/<id>/mcp`: the same, for one backend served as itself; `/profiles/<name>/mcp` for the
 *   aggregate as a configured profile sees it.
 * - `GET /healthz` (serving) and `GET /readyz` (every enabled backend ready, else 503 with states).
 *
 * Every request passes the token check (when a token is set), the Host check and the Origin
 * check (DNS rebinding) before anything else. This module carries bodies and streams; what a body
 * is and every session's life (issued on `initialize` as `Mcp-Session-Id`, ended when idle,
 * bounded in number) are the Protocol's (gateway/edge/SharedSessions).
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Chunk, Effect, Either, type Fiber, FiberId, Layer, Option, Queue, Redacted, Stream } from "effect"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import * as os from "node:os"
import { GatewayConfig } from "../config/Config.js"
import { ErrorCode } from "../protocol/Errors.js"
import {
  CALLBACK_PATH,
  Protocol,
  type SharedSession,
  STOP_GRACE_MS,
  STORE_SILENT,
  type Target
} from "../gateway/edge/Protocol.js"
import { classify, failure, stringify } from "../jsonrpc/JsonRpc.js"
import { makeGuards, tokenMatches } from "./Guards.js"
import {
  accepts,
  acceptsOf,
  encoder,
  exchangeWith,
  json,
  KEEPALIVE_MS,
  readBody,
  reject,
  SESSION_HEADER,
  SSE_HEADERS,
  sseEvent,
  STREAM_BUFFER,
  VERSION_HEADER
} from "./HttpWire.js"
import * as Forward from "./Forward.js"
import * as Replica from "../store/Replica.js"
import * as Listener from "./Listener.js"
import * as ResourceServer from "../auth/ResourceServer.js"
import { messageOf } from "../values/Json.js"

/** Who the request's access token speaks for (`--http-auth oauth`); undefined otherwise. */
type Principal = ResourceServer.Principal | undefined

const safeDecode = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

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
const makeApp = (options: AppOptions) =>
  Effect.gen(function* () {
    const protocol = yield* Protocol
    const gatewayConfig = yield* GatewayConfig
    // The transport's own settings (bounds, hosts) are read once; what it serves (the backends and
    // profiles) is looked up as configured now, so a reload's backends are reachable.
    const config = yield* gatewayConfig.current
    const resourceServer =
      options.oauth === true && config.httpAuth !== undefined
        ? ResourceServer.make(
            config.httpAuth,
            Object.values(config.profiles).flatMap((p) => p.scopes ?? [])
          )
        : undefined
    /** The scopes a profile's endpoint needs beside the configured ones (as configured now). */
    const scopesFor = (path: string) =>
      Effect.map(gatewayConfig.current, ({ profiles }) => {
        const name = /^\/profiles\/([^/]+)\/mcp$/.exec(path)?.[1]
        return name === undefined ? [] : (profiles[safeDecode(name)]?.scopes ?? [])
      })
    const guards = makeGuards(options, options.port, config)
    // The sessions, their idle sweep and the stateless era's requests live in this scope: at
    // shutdown their requests get a grace, then the sessions close.
    const sessions = yield* protocol.shared
    // Where the other gateways of a team hand this one its sessions' requests.
    const port = options.port()
    if (port !== undefined) yield* sessions.directory.listeningAt(config.state?.address ?? reachableAt(options.host, port))

    /** Where something is, the team's store could not say: the client tries again (nothing is lost). */
    const storeSilent = () =>
      reject(503, "Service Unavailable: the store of this team's gateways did not answer; try again", { "retry-after": "1" })

    /** The session a request names, or the response that refuses it. */
    const findSession = (request: HttpServerRequest.HttpServerRequest, target: Target, principal: Principal) => {
      const found = sessions.find(request.headers[SESSION_HEADER], target, principal?.subject, request.headers[VERSION_HEADER])
      return "status" in found ? { refused: reject(found.status, found.message) } : { session: found }
    }

    /**
     * Dispatches a body that expects replies and answers with them: JSON when the reply comes
     * first, an SSE stream when a notification does (and the client accepts one), or always a
     * stream when the client ranks it first (`alwaysStream`).
     */
    const exchange = (
      session: SharedSession,
      value: unknown,
      sse: boolean,
      headers: Record<string, string>,
      alwaysStream = false
    ): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
      exchangeWith(
        (out) => session.receive(value, out),
        sse,
        headers,
        () => 200,
        alwaysStream
      )

    const post = (request: HttpServerRequest.HttpServerRequest, target: Target, principal: Principal) =>
      Effect.gen(function* () {
        const contentType = request.headers["content-type"] ?? ""
        if (!/^application\/json\s*(;|$)/i.test(contentType)) {
          return reject(415, "Unsupported Media Type: Content-Type must be application/json")
        }
        const { json: json_, sse, prefersSse } = acceptsOf(request.headers["accept"])
        if (!json_ && !sse) return reject(406, "Not Acceptable: Accept must include application/json or text/event-stream")
        const body = yield* readBody(request, config.maxFrameBytes)
        if (body === null) return reject(400, "Bad Request: the request body could not be read")
        if (body === undefined) {
          // The rest of the body is not worth reading: the connection closes after this reply.
          return reject(413, `Payload Too Large: the body exceeds the limit of ${config.maxFrameBytes} bytes`, {
            connection: "close"
          })
        }
        let value: unknown
        try {
          value = JSON.parse(body)
        } catch (error) {
          return json(400, failure(null, { code: ErrorCode.ParseError, message: `Parse error: ${messageOf(error)}` }))
        }
        const items = Array.isArray(value) ? value : [value]
        const kind = sessions.kindOf(value, request.headers[SESSION_HEADER], request.headers[VERSION_HEADER])
        if (kind === "initialize") {
          if (items.length > 1) return reject(400, "Bad Request: initialize must be sent alone, not in a batch")
          if (request.headers[SESSION_HEADER] !== undefined) {
            return reject(400, "Bad Request: initialize starts a session: send it without Mcp-Session-Id")
          }
          const opened = yield* sessions.open(target, principal)
          if ("status" in opened) return reject(opened.status, opened.message, opened.headers, opened.code)
          // Always JSON: the session exists only if initialize succeeded, known once it replied.
          const response = yield* exchange(opened, value, false, {}).pipe(
            // The client went away before it learned the session's id: nobody can use it.
            Effect.onInterrupt(() => opened.close("initialize abandoned"))
          )
          if (!opened.ready()) {
            yield* opened.close("initialize failed")
            return response
          }
          return HttpServerResponse.setHeader(response, SESSION_HEADER, opened.id)
        }
        if (kind === "stateless") {
          // A round's answers for a call, or a task, another gateway of the team holds: handed to it.
          const holder = sessions.heldElsewhere(value)
          if (holder !== undefined && !Forward.wasForwarded(request)) {
            const at = yield* sessions.directory.addressOf(holder)
            if (at === "unknown") return storeSilent()
            if (at !== "none") return yield* Forward.forward(request, at.at, sessions.directory.replicaId, reject, body)
            // Its gateway is gone (its lease ran out): a task of it is what the store kept when it
            // finished, else failed.
            const lost = yield* sessions.lostTask(value, holder, principal?.subject)
            if (lost === STORE_SILENT) return storeSilent()
            if (lost !== undefined) return json(200, lost)
          }
          const admitted = sessions.admit(value, request.headers, request.headers[VERSION_HEADER], target)
          if (Either.isLeft(admitted)) return json(admitted.left.status, admitted.left.response)
          if (admitted.right.request.method === "subscriptions/listen") {
            if (!sse) return reject(406, "Not Acceptable: subscriptions/listen answers with a stream: accept text/event-stream")
            const refusal = sessions.listenRefusal()
            if (refusal !== undefined) return reject(refusal.status, refusal.message, refusal.headers, ErrorCode.InternalError)
            // The listener lives as long as the stream: a client that goes away ends it.
            const events = Stream.unwrapScoped(
              Effect.gen(function* () {
                const q = yield* Queue.sliding<unknown>(STREAM_BUFFER)
                yield* sessions.listen(admitted.right, target, { send: (m: unknown) => Queue.unsafeOffer(q, m) })
                return Stream.fromQueue(q)
              })
            ).pipe(Stream.map(sseEvent))
            return HttpServerResponse.stream(events, { contentType: "text/event-stream", headers: SSE_HEADERS })
          }
          let served: Fiber.RuntimeFiber<unknown, unknown> | undefined
          // A client that goes away mid-call cancels it (the backend hears notifications/cancelled):
          // the connection closing before the response ended says so, whatever the response's form.
          const response = NodeHttpServerRequest.toServerResponse(request)
          response.once("close", () => {
            if (!response.writableFinished) served?.unsafeInterruptAsFork(FiberId.none)
          })
          return yield* exchangeWith(
            (out) => {
              served = sessions.serve(admitted.right, target, out, principal)
            },
            sse,
            {},
            sessions.statusOf
          )
        }
        const found = findSession(request, target, principal)
        if (found.refused) return found.refused
        const expectsReply =
          items.length === 0 ||
          items.some((item) => {
            const tag = classify(item)._tag
            return tag === "Request" || tag === "Invalid"
          })
        if (!expectsReply) {
          found.session.receive(value, { send: () => {} })
          return HttpServerResponse.empty({ status: 202 })
        }
        return yield* exchange(found.session, value, sse, {}, prefersSse)
      })

    const get = (request: HttpServerRequest.HttpServerRequest, target: Target, principal: Principal) =>
      Effect.gen(function* () {
        if (!accepts(request.headers["accept"], "text/event-stream") || request.headers["accept"] === undefined) {
          return reject(406, "Not Acceptable: Accept must include text/event-stream")
        }
        const found = findSession(request, target, principal)
        if (found.refused) return found.refused
        const queue = yield* Queue.sliding<unknown>(STREAM_BUFFER)
        const detach = found.session.attach({ send: (m) => Queue.unsafeOffer(queue, m), end: Queue.shutdown(queue) })
        if (detach === undefined) return reject(409, "Conflict: this session already has a GET stream open")
        const keepalive = Stream.tick(KEEPALIVE_MS).pipe(Stream.drop(1), Stream.as(encoder.encode(": keepalive\n\n")))
        const body = Stream.fromQueue(queue).pipe(
          Stream.map(sseEvent),
          Stream.merge(keepalive, { haltStrategy: "left" }),
          // A first comment sends the headers now: a client waits for them before it reads on.
          Stream.prepend(Chunk.of(encoder.encode(": stream open\n\n"))),
          Stream.ensuring(Effect.sync(detach))
        )
        return HttpServerResponse.stream(body, { contentType: "text/event-stream", headers: SSE_HEADERS })
      })

    const del = (request: HttpServerRequest.HttpServerRequest, target: Target, principal: Principal) =>
      Effect.gen(function* () {
        const found = findSession(request, target, principal)
        if (found.refused) return found.refused
        yield* found.session.close("ended by the client (DELETE)")
        return HttpServerResponse.empty({ status: 204 })
      })

    // A store that fails leaves this gateway ready (its own sessions go on), and says so: degraded.
    const readiness = Effect.zipWith(protocol.readiness, sessions.directory.health, ({ ready, backends }, store) =>
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
      if (match === null) {
        return Effect.succeed(reject(404, "Not Found: MCP is served at /mcp, /servers/<id>/mcp and /profiles/<name>/mcp"))
      }
      let name: string
      try {
        name = decodeURIComponent(match[2]!)
      } catch {
        return Effect.succeed(reject(404, "Not Found"))
      }
      return Effect.flatMap(protocol.targetOf(match[1] as "servers" | "profiles", name), (target) =>
        "notFound" in target ? Effect.succeed(reject(404, target.notFound)) : serveOn(request, target, principal)
      )
    }

    const serveOn = (request: HttpServerRequest.HttpServerRequest, target: Target, principal: Principal) => {
      switch (request.method) {
        case "POST":
          return post(request, target, principal)
        case "GET":
          return get(request, target, principal)
        case "DELETE":
          return del(request, target, principal)
        default:
          return Effect.succeed(reject(405, "Method Not Allowed", { allow: "GET, POST, DELETE" }))
      }
    }

    const app = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const queryAt = request.url.indexOf("?")
      const path = queryAt < 0 ? request.url : request.url.slice(0, queryAt)
      // Where to get a token is public: a client reads it before it has one (any origin may: it
      // holds nothing but URLs and scope names).
      if (
        resourceServer !== undefined &&
        (path === ResourceServer.METADATA_PATH || path.startsWith(`${ResourceServer.METADATA_PATH}/`))
      ) {
        return request.method === "GET" || request.method === "HEAD"
          ? json(200, resourceServer.metadata, { "access-control-allow-origin": "*", "cache-control": "max-age=3600" })
          : reject(405, "Method Not Allowed", { allow: "GET" })
      }
      // A sign-in's redirect from an authorization server, in the user's browser (no token there):
      // its `state` must be one a sign-in of this gateway waits for.
      if (path === CALLBACK_PATH && request.method === "GET" && guards.hostAllowed(request.headers["host"])) {
        // A sign-in another gateway of the team waits for (its `state` names it): handed to it.
        const waiting = Replica.givenElsewhere(
          { sessionIdPrefix: "", state: config.state },
          new URL(request.url, "http://gateway").searchParams.get("state")
        )
        if (waiting !== undefined && !Forward.wasForwarded(request)) {
          const at = yield* sessions.directory.addressOf(waiting)
          if (at === "unknown") return storeSilent()
          if (at !== "none") return yield* Forward.forward(request, at.at, sessions.directory.replicaId, reject)
        }
        const backend = protocol.signIns.callback(request.url)
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
      if (options.token !== undefined && !tokenMatches(request.headers["authorization"], options.token)) {
        return reject(401, "Unauthorized: a bearer token is required", { "www-authenticate": 'Bearer realm="mcp-agentify"' })
      }
      let principal: Principal = undefined
      if (resourceServer !== undefined) {
        const checked = yield* Effect.either(resourceServer.verify(request.headers["authorization"], yield* scopesFor(path)))
        if (Either.isLeft(checked)) {
          const refused = checked.left
          return reject(refused.status, `${refused.status === 401 ? "Unauthorized" : "Forbidden"}: ${refused.description}`, {
            "www-authenticate": ResourceServer.challenge(refused, config.httpAuth!.audience)
          })
        }
        principal = checked.right
      }
      if (!guards.hostAllowed(request.headers["host"])) {
        return reject(403, "Forbidden: the Host header does not name this server (add it to allowedHosts)")
      }
      if (!guards.originAllowed(request.headers["origin"])) {
        return reject(403, "Forbidden: Origin not allowed (add it to allowedOrigins)")
      }
      // A session another gateway of the team holds: handed to it (any load balancer will do).
      const named = request.headers[SESSION_HEADER]
      if (
        typeof named === "string" &&
        !sessions.holds(named) &&
        !Forward.wasForwarded(request)
      ) {
        const holder = yield* sessions.directory.ownerOf(named)
        if (holder === "unknown") return storeSilent()
        if (holder !== "none") return yield* Forward.forward(request, holder.at, sessions.directory.replicaId, reject)
      }
      return yield* route(request, path, principal)
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.zipRight(
          Effect.logError("HTTP request failed", cause),
          Effect.succeed(reject(500, "Internal Server Error", {}, ErrorCode.InternalError))
        )
      )
    )

    /**
     * A request for a session another gateway holds, as the store named it a moment ago: handed on
     * at the listener, before anything here parses it. What only this gateway can check (the
     * Host the client named, its Origin) is checked here; its holder checks the rest (the
     * token, the body) as for a request of its own. Else false: the app serves it.
     */
    const handOn = (incoming: IncomingMessage, response: ServerResponse): boolean => {
      const named = incoming.headers[SESSION_HEADER]
      if (typeof named !== "string" || incoming.headers[Forward.FORWARDED_HEADER] !== undefined || sessions.holds(named)) {
        return false
      }
      const holder = sessions.directory.ownerKnown(named)
      if (holder === undefined || typeof holder === "string") return false
      if (!guards.hostAllowed(incoming.headers.host) || !guards.originAllowed(incoming.headers.origin)) return false
      Forward.handOn(incoming, response, holder.at, sessions.directory.replicaId, (message) =>
        stringify(failure(null, { code: ErrorCode.InvalidRequest, message }))
      )
      return true
    }

    return { app, handOn }
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

/** Serves the gateway over HTTP until the scope closes. */
export const make = (options: Options, connections?: Listener.Connections, node?: Server) =>
  Effect.gen(function* () {
    // Last of this server's finalizers, after every session closed: the connections still open
    // (keep-alive, streams a client never closed) would hold the listener's close for ever.
    // Then, as long again, for their responses to be written.
    if (connections !== undefined) yield* Effect.addFinalizer(() => connections.close(STOP_GRACE_MS))
    const server = yield* HttpServer.HttpServer
    const port = server.address._tag === "TcpAddress" ? server.address.port : options.port
    const { app, handOn } = yield* makeApp({ ...options, port: () => port })
    const config = yield* Effect.flatMap(GatewayConfig, (c) => c.current)
    // No span per request: the gateway's own events and traces describe its exchanges, and the
    // platform's (URL parsing, a span and every header as an attribute) cost more than the rest.
    // Interruptible: the platform forks handlers with a runtime captured where this runs, while
    // the layer builds (uninterruptible); without this no request could be stopped at shutdown.
    yield* HttpMiddleware.withTracerDisabledWhenEffect(server.serve(Effect.interruptible(app)), () => true)
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
    if (publicBase !== undefined)
      yield* Effect.flatMap(Protocol, (protocol) => Effect.sync(() => protocol.signIns.callbacksAt(publicBase)))
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

/** The HTTP server on a Node listener, serving until the layer's scope closes. */
export const layer = (options: Options): Layer.Layer<never, HttpServerError.ServeError, Protocol | GatewayConfig> =>
  Layer.unwrapEffect(
    Effect.sync(() => {
      const node = createServer({ keepAliveTimeout: 65_000 })
      return Layer.scopedDiscard(make(options, Listener.track(node), node)).pipe(
        Layer.provide(NodeHttpServer.layerServer(() => node, { host: options.host, port: options.port }))
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
 * The gateway's Streamable HTTP endpoints on the app's own `HttpRouter.Default`: the app serves
 * the router with its server (`HttpRouter.Default.unwrap(HttpServer.serve())`), and closing the
 * layer closes the sessions. The port for the Host checks is the app's server's, when it has one.
 */
export const layerRouter = (options: MountOptions = {}): Layer.Layer<never, never, Protocol | GatewayConfig> =>
  HttpRouter.Default.use((router) =>
    Effect.gen(function* () {
      const server = yield* Effect.serviceOption(HttpServer.HttpServer)
      const port = () =>
        Option.isSome(server) && server.value.address._tag === "TcpAddress" ? server.value.address.port : undefined
      const { app } = yield* makeApp({ host: options.host ?? "127.0.0.1", token: options.token, oauth: options.oauth, port })
      const path = options.path ?? "/"
      yield* path === "/" ? router.all("*", Effect.interruptible(app)) : router.mountApp(path, Effect.interruptible(app))
    })
  )
