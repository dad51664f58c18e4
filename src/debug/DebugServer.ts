/**
 * The debug UI and its API (`--debug-port`, env `DEBUG_PORT`, `initializationOptions.DEBUG_PORT`):
 * an HTTP server on effect/http, on 127.0.0.1 unless told otherwise (another host needs a
 * token), fed by the events hub through a `Recorder`.
 *
 *   GET  /                          the page
 *   GET  /api/status                version, pid, uptime, backends ready, what is recorded, config reloads
 *   GET  /api/backends              each backend's state (an idle one: remembered or stopped), address,
 *                                   sign-in, restarts, counts, calls, latency
 *   GET  /api/sessions              the sessions open: transport, client, opened, requests
 *   GET  /api/config                the configuration in force, secrets left out
 *   GET  /api/logs?level=&limit=&search=
 *   GET  /api/mcptrace?limit=&backend=&session=&method=
 *   GET  /api/orchestrations?limit=
 *   POST /api/backends/<id>/restart
 *   WS   /ws/logs?level=, /ws/mcptrace?backend=&session=&method= (orchestrations ride along)
 *
 * Nothing of this runs unless a debug port is configured: the hub has no subscriber then, and
 * producers build no event at all.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { Effect, Option, Queue } from "effect"
import { createServer } from "node:http"
import { Backends } from "../backend/Backends.js"
import { describeBackend, EXPOSURE_KEYS, GatewayConfig, type ResolvedConfig, transportOf } from "../config/Config.js"
import * as Secrets from "../observability/Secrets.js"
import * as Embeddings from "../catalog/semantic/Embeddings.js"
import { SERVER_VERSION } from "../gateway/methods/Aggregate.js"
import { makeGuards, tokenMatches } from "../transport/Guards.js"
import * as Listener from "../transport/Listener.js"
import type * as Http from "../transport/Http.js"
import * as BackendsView from "./BackendsView.js"
import { PAGE } from "./page.js"
import { LOG_CAPACITY, logMatches, Recorder, TRACE_CAPACITY, type TraceEntry } from "./Recorder.js"

/** As for `--http`; the token is AGENTIFY_DEBUG_TOKEN. */
export type Options = Http.Options

/** Entries waiting for a slow WebSocket reader before the oldest are dropped. */
const SOCKET_BUFFER = 4_096

const json = (body: unknown, status = 200) =>
  HttpServerResponse.text(JSON.stringify(body), { status, contentType: "application/json" })

const clamp = (raw: string | null, fallback: number, max: number) => {
  const n = raw === null ? fallback : Number(raw)
  return Number.isInteger(n) && n > 0 ? Math.min(n, max) : fallback
}

const traceMatches = (entry: TraceEntry, query: URLSearchParams): boolean => {
  const backend = query.get("backend")
  const session = query.get("session")
  const method = query.get("method")
  if (backend !== null && (entry.channel !== "backend" || entry.peer !== backend)) return false
  if (session !== null && (entry.channel !== "client" || entry.peer !== session)) return false
  if (method !== null && entry.method !== method) return false
  return true
}

/** The configuration as the UI may show it: no key, no env values, no header values, args masked. */
const publicConfig = (config: ResolvedConfig) => ({
  backendsSource: config.backendsSource,
  openaiApiKey: config.openaiApiKeySource === "none" ? "not set" : `set (from ${config.openaiApiKeySource})`,
  openaiBaseUrl: Option.getOrUndefined(Option.map(config.openaiBaseUrl, (url) => Secrets.scrub(url))),
  model: config.model,
  routing: config.routing,
  logLevel: config.logLevel,
  exposeBackendTools: config.exposeBackendTools,
  maxToolsPerRequest: config.maxToolsPerRequest,
  // Model, origin and whose key is sent: never the key, nor the URL's path or query.
  embeddings: Embeddings.summaryOf(config) ?? "off",
  requestTimeoutMs: config.requestTimeoutMs,
  startupTimeoutMs: config.startupTimeoutMs,
  maxSteps: config.maxSteps,
  confirmTools: config.confirmTools,
  profiles: config.profiles,
  backends: config.backends.map((b) => ({
    ...describeBackend(b),
    transport: transportOf(b),
    // What it exposes: names and globs, never values of env or headers.
    ...Object.fromEntries(EXPOSURE_KEYS.flatMap((key) => (b[key] === undefined ? [] : [[key, b[key]]])))
  }))
})

/** The sessions open now, oldest first (see Recorder's `SessionEntry`: nothing of their credentials). */
const sessionsOf = (recorder: Recorder) => [...recorder.sessions].map(([id, session]) => ({ id, ...session }))

/** A WebSocket that gets each new entry `pick` lets through, as JSON, until it closes. */
const streamOf = (recorder: Recorder) => (pick: (kind: "log" | "trace" | "orchestration", entry: unknown) => unknown) =>
  Effect.gen(function* () {
    const socket = yield* (yield* HttpServerRequest.HttpServerRequest).upgrade
    const { write } = yield* socket.writer
    const outbox = yield* Queue.sliding<string>(SOCKET_BUFFER)
    const unlisten = recorder.listen((kind, entry) => {
      const message = pick(kind, entry)
      if (message !== undefined) Queue.offerUnsafe(outbox, JSON.stringify(message))
    })
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(outbox), write)))
    // Reading must run for the socket to work; what the page sends is ignored. Every end of the
    // connection, a clean close included, is a failure of `pull`: the stream ends there.
    yield* Effect.flatMap(socket.reader, ({ pull }) => Effect.forever(pull)).pipe(
      Effect.catch(() => Effect.void),
      Effect.ensuring(Effect.sync(unlisten))
    )
    return HttpServerResponse.empty()
  }).pipe(Effect.scoped)

/** Serves the debug UI from `recorder` until the scope closes; resolves once it listens. */
export const serve = (options: Options, recorder: Recorder) =>
  Effect.gen(function* () {
    const backends = yield* Backends
    const gatewayConfig = yield* GatewayConfig
    const started = Date.now()

    const backendsView = BackendsView.make(backends, recorder)

    const stream = streamOf(recorder)

    const port = { value: options.port }
    // Only this server's own names and this machine's pages: the MCP transport's allowances do not apply.
    const guards = makeGuards(options, () => port.value, { allowedHosts: [], allowedOrigins: [] })
    // The page and its WebSockets cannot set headers: `?token=` stands for the bearer header.
    const authorized = (request: HttpServerRequest.HttpServerRequest, query: URLSearchParams) => {
      if (options.token === undefined) return true
      const fromQuery = query.get("token")
      return tokenMatches(fromQuery === null ? request.headers["authorization"] : `Bearer ${fromQuery}`, options.token)
    }

    const app = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      // A page on another site must not read the gateway's traffic (DNS rebinding, cross-site WebSocket).
      if (!guards.hostAllowed(request.headers["host"])) return json({ error: "Host not allowed" }, 403)
      if (!guards.originAllowed(request.headers["origin"])) return json({ error: "Origin not allowed" }, 403)
      const url = new URL(request.url, "http://localhost")
      const query = url.searchParams
      if (!authorized(request, query)) return json({ error: "a bearer token is required" }, 401)
      const path = url.pathname
      if (request.method === "GET") {
        switch (path) {
          case "/":
            return HttpServerResponse.text(PAGE, {
              contentType: "text/html; charset=utf-8",
              headers: {
                // Never framed: a page of another site could lure a click on a restart button.
                "content-security-policy":
                  "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; " +
                  "frame-ancestors 'none'",
                "x-frame-options": "DENY"
              }
            })
          case "/favicon.ico":
            // No icon, and no 404 in the browser's console for it.
            return HttpServerResponse.empty({ status: 204 })
          case "/api/status": {
            const states = yield* backends.states
            return json({
              version: SERVER_VERSION,
              pid: process.pid,
              uptimeMs: Date.now() - started,
              backends: {
                total: states.length,
                enabled: states.filter((s) => s.enabled).length,
                ready: states.filter((s) => s.state === "ready").length,
                // Not running, their tools known: never started in this run, or stopped unused.
                idle: {
                  remembered: states.filter((s) => s.idle === "remembered").length,
                  stopped: states.filter((s) => s.idle === "stopped").length
                }
              },
              recorded: {
                logs: recorder.logs.length,
                trace: recorder.trace.length,
                orchestrations: recorder.orchestrations.length
              },
              reloads: recorder.reloads.toArray(),
              sessions: sessionsOf(recorder)
            })
          }
          case "/api/sessions":
            return json(sessionsOf(recorder))
          case "/api/backends":
            return json(yield* backendsView)
          case "/api/config":
            return json(publicConfig(yield* gatewayConfig.current))
          case "/api/logs": {
            const level = query.get("level") ?? undefined
            const search = query.get("search") ?? undefined
            const limit = clamp(query.get("limit"), 500, LOG_CAPACITY)
            return json(
              recorder.logs
                .toArray()
                .filter((e) => logMatches(e, level, search))
                .slice(-limit)
            )
          }
          case "/api/mcptrace": {
            const limit = clamp(query.get("limit"), 500, TRACE_CAPACITY)
            const newest = recorder.trace
              .toArray()
              .filter((e) => traceMatches(e, query))
              .slice(-limit)
            return json(query.get("order") === "newest" ? newest.reverse() : newest)
          }
          case "/api/orchestrations":
            return json(recorder.orchestrations.toArray().slice(-clamp(query.get("limit"), 100, 500)))
          case "/ws/logs": {
            const level = query.get("level") ?? undefined
            return yield* stream((kind, entry) =>
              kind === "log" && logMatches(entry as Parameters<typeof logMatches>[0], level, undefined) ? entry : undefined
            )
          }
          case "/ws/mcptrace":
            return yield* stream((kind, entry) =>
              kind === "trace"
                ? traceMatches(entry as TraceEntry, query)
                  ? entry
                  : undefined
                : kind === "orchestration"
                  ? { kind: "orchestration", entry }
                  : undefined
            )
        }
      }
      const restart = /^\/api\/backends\/([^/]+)\/restart$/.exec(path)
      if (restart !== null && request.method === "POST") {
        let id: string
        try {
          id = decodeURIComponent(restart[1]!)
        } catch {
          return json({ error: "not found" }, 404)
        }
        const outcome = yield* backends.restart(id)
        return outcome === "restarting"
          ? json({ id, state: "restarting" }, 202)
          : json(
              { error: outcome === "unknown" ? `no backend '${id}'` : `backend '${id}' is disabled` },
              outcome === "unknown" ? 404 : 409
            )
      }
      return json({ error: "not found" }, 404)
    })

    const server = yield* HttpServer.HttpServer
    if (server.address._tag !== "UnixPathAddress") port.value = server.address.port
    // Interruptible: the platform forks WebSocket handlers with a runtime captured in an
    // uninterruptible region, and a page's socket must not hold the server's stop.
    yield* server.serve(
      app.pipe(
        Effect.catchCause(() => Effect.succeed(json({ error: "internal error" }, 500))),
        Effect.interruptible
      )
    )
    const shown = options.host.includes(":") ? `[${options.host}]` : options.host
    yield* Effect.logInfo(`debug UI at http://${shown}:${port.value}/`, {
      token: options.token === undefined ? "none" : "required"
    })
  })

/** The debug server on a Node listener of its own, until interrupted. */
export const make = (options: Options, recorder: Recorder): Effect.Effect<never, unknown, GatewayConfig | Backends> =>
  Effect.gen(function* () {
    const node = createServer()
    const connections = Listener.track(node)
    return yield* serve(options, recorder).pipe(
      Effect.andThen(Effect.never),
      // Before the listener closes (it waits for every connection): a page's WebSockets and
      // keep-alive requests end now, or stopping the gateway would wait for the page to go.
      Effect.ensuring(connections.close(0)),
      Effect.provide(NodeHttpServer.layerServer(() => node, { host: options.host, port: options.port }))
    )
  }).pipe(Effect.scoped)
