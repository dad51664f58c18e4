/**
 * One backend: an MCP server run as a child process, and the MCP client session the gateway holds
 * with it over the process's stdio (newline-delimited JSON-RPC).
 *
 * `make` is a scoped resource: it spawns the process, runs the handshake (`server/discover` for a
 * 2026-07-28 server, else `initialize` with version fallback and `notifications/initialized`; then
 * `tools/list`) and returns a `Backend`; closing the scope stops the process and every process it
 * started. Every request is sent in the backend's era (see `paramsFor`).
 *
 * Why raw `node:child_process` inside `Effect.acquireRelease` and not Effect's `ChildProcess`
 * (`effect/process`):
 * - The hot path stays synchronous. A reply is parsed in the stdout `data` callback and resumes
 *   the waiting fiber directly from the request engine's table of pending ids; a request is one `stdin.write` of a
 *   whole frame. `ChildProcess` gives stdout as a Stream and stdin as a Sink, which puts a stream
 *   pipeline and a writer fiber on every call (the gateway has a budget of 0.3 ms per call).
 * - Exit codes and signals arrive as values (`exit` gives both), spawn errors as errno codes;
 *   `ChildProcess`'s `exitCode` fails with a PlatformError for an exit by signal (so after a kill).
 * - The kill path is ours anyway: processes that left the group (found by their marker, see
 *   Reaper) are stopped too, with the same grace; it lives in one place (`terminate`).
 * - No `ChildProcessSpawner`/`FileSystem` requirement leaks into the layers above.
 *
 * Frames never interleave: a frame is written with a single `write` call on the one stdin
 * Writable, which queues whole chunks in order; that Writable is the single writer.
 *
 * This module is the public interface and assembles the parts: `Contract` (what a backend is to
 * the rest of the gateway), `Channel` (what carries its frames: `ProcessChannel`, or a remote
 * transport under `remote/`), `Connection` (its JSON-RPC client over the channel, on the request
 * engine of jsonrpc/Requests), `Process` (spawn, connect, stop) and `Handshake` (the MCP session);
 * here are `make` and the `maxInstances` pool.
 */
import { Cause, Deferred, Effect, Exit, Queue, type Scope, Semaphore } from "effect"
import type { BackendConfig } from "../config/Config.js"
import { DEFAULT_MAX_BACKEND_FRAME_BYTES, DEFAULT_REQUEST_TIMEOUT_MS, transportOf } from "../config/Config.js"
import { BackendError } from "../protocol/Errors.js"
import * as Mcp from "../protocol/Mcp.js"
import * as Telemetry from "../observability/Telemetry.js"
import { Backend, DEFAULT_CLIENT_INFO, DEFAULT_KILL_GRACE_MS, Options, RequestOptions, paramsFor } from "./Contract.js"
import { type Connection, Inbound, LogLine } from "./Connection.js"
import { connectRemote, spawnConnection, terminate } from "./Process.js"
import { Requester, discover, initialize, isSessionLost, listAllTools, logPump, serveRequests } from "./Handshake.js"

export {
  type Backend,
  type RunningBackend,
  type ClientInfo,
  DEFAULT_CLIENT_INFO,
  DEFAULT_KILL_GRACE_MS,
  type Era,
  type ExitInfo,
  isPermanentFailure,
  type Options,
  type RequestOptions
} from "./Contract.js"
import { field } from "../json/Json.js"
export { MAX_QUEUED_BYTES, STALLED_AFTER_MS } from "./ProcessChannel.js"

/**
 * Starts the backend (spawns its process or connects to it) and opens its MCP session. The
 * returned Backend lives as long as the scope; closing the scope stops the process tree (SIGTERM,
 * then SIGKILL after the grace period). With `maxInstances` > 1, a pool (see `makePool`).
 */
export const make = (config: BackendConfig, options: Options = {}): Effect.Effect<Backend, BackendError, Scope.Scope> =>
  (config.maxInstances ?? 1) > 1 ? makePool(config, options) : makeOne(config, options)

/**
 * `maxInstances` processes of a server that keeps no state between calls, as one Backend: each
 * request goes to the member with the fewest in flight, notifications go to all. Their tools,
 * capabilities and change notices are the first one's. When one member exits the pool is over
 * (`exited`), and the supervisor starts it afresh: simpler than healing members one by one, and a
 * crash is rare where it matters.
 */
const makePool = Effect.fn("Backend.makePool")(function* (config: BackendConfig, options: Options) {
  const size = config.maxInstances ?? 1
  const single = { ...config, maxInstances: 1 }
  const members = yield* Effect.forEach(
    Array.from({ length: size }, (_, i) => i),
    (i) => makeOne(single, i === 0 ? options : { ...options, onToolsChanged: undefined }),
    { concurrency: "unbounded" }
  )
  const [first] = members
  if (first === undefined) return yield* Effect.die(new Error("a pool has at least one member"))
  const inFlight = members.map(() => 0)
  const leastBusy = (): number => {
    let best = 0
    for (let i = 1; i < members.length; i++) if ((inFlight[i] ?? 0) < (inFlight[best] ?? 0)) best = i
    return best
  }
  const onLeastBusy = <A>(run: (member: Backend) => Effect.Effect<A, BackendError>): Effect.Effect<A, BackendError> =>
    Effect.suspend(() => {
      const i = leastBusy()
      const member = members[i] ?? first
      inFlight[i] = (inFlight[i] ?? 0) + 1
      return Effect.ensuring(
        run(member),
        Effect.sync(() => (inFlight[i] = (inFlight[i] ?? 1) - 1))
      )
    })
  yield* Effect.logInfo(`pool of ${size}: ${members.map((m) => m.address).join(", ")}`)
  const pool: Backend = {
    ...first,
    address: members.map((m) => m.address).join(", "),
    request: (method, params, requestOptions) => onLeastBusy((m) => m.request(method, params, requestOptions)),
    callTool: (name, args, callOptions) => onLeastBusy((m) => m.callTool(name, args, callOptions)),
    notify: (method, params) => Effect.forEach(members, (m) => m.notify(method, params), { discard: true }),
    ping: Effect.forEach(members, (m) => m.ping, { discard: true, concurrency: "unbounded" }),
    // The pool is as alive as its most silent member.
    activity: () => ({
      heardAt: Math.min(...members.map((m) => m.activity().heardAt)),
      timedOutAt: Math.max(...members.map((m) => m.activity().timedOutAt))
    }),
    probe: (timeoutMs) =>
      Effect.map(
        Effect.forEach(members, (m) => m.probe(timeoutMs), { concurrency: "unbounded" }),
        (answers) => (answers.includes("silent") ? "silent" : "alive")
      ),
    exited: Effect.raceAll(members.map((m) => m.exited)),
    isRunning: () => members.every((m) => m.isRunning())
  }
  return pool
})

/**
 * The backend's era and session: `server/discover` for one that may be of the stateless era (one
 * known to be of the session era is not asked again: a round trip less per restart; one pinned to
 * a version is asked only in that version's era), else `initialize` and `notifications/initialized`.
 */
const handshake = (
  connection: Connection,
  config: BackendConfig,
  options: Options,
  capabilities: Readonly<Record<string, unknown>>,
  timeoutMs: number
) =>
  Effect.gen(function* () {
    const clientInfo = options.clientInfo ?? DEFAULT_CLIENT_INFO
    const pinned = config.protocolVersion
    const era =
      pinned === undefined ? (options.era ?? "auto") : pinned === Mcp.STATELESS_PROTOCOL_VERSION ? "stateless" : "session"
    const discovered = era === "session" ? undefined : yield* discover(connection, clientInfo, capabilities, timeoutMs)
    if (discovered === undefined && era === "stateless") {
      return yield* new BackendError({
        backendId: config.id,
        reason: "call_failed",
        method: "initialize",
        summary: `server/discover did not offer ${Mcp.STATELESS_PROTOCOL_VERSION}, the protocolVersion it is pinned to`
      })
    }
    const stateless = discovered !== undefined
    const versions = pinned === undefined ? Mcp.SUPPORTED_PROTOCOL_VERSIONS : [pinned]
    const session = discovered ?? (yield* initialize(connection, clientInfo, capabilities, timeoutMs, versions))
    if (!stateless) connection.notify("notifications/initialized", undefined)
    return { session, stateless, versions }
  })

/**
 * How the backend is asked, once its session is up: in its era (the stateless one's `_meta`, or
 * none of it), traced when telemetry is exported, a lost session initialized again (once however
 * many calls noticed, each retried once), and each call's outcome published while an observer
 * (the debug UI) listens. `sendNow` is a request as it is, for liveness probes.
 */
const requestsOf = (
  connection: Connection,
  config: BackendConfig,
  options: Options,
  era: {
    readonly stateless: boolean
    readonly versions: ReadonlyArray<string>
    readonly capabilities: Readonly<Record<string, unknown>>
    readonly timeoutMs: number
  }
) =>
  Effect.gen(function* () {
    const { stateless, versions, capabilities, timeoutMs } = era
    const clientInfo = options.clientInfo ?? DEFAULT_CLIENT_INFO
    const sendNow = (method: string, params: unknown, requestOptions: RequestOptions | undefined) =>
      connection.orderedRequest(
        method,
        paramsFor(stateless, params, capabilities, clientInfo),
        requestOptions?.timeoutMs ?? timeoutMs
      )
    // Traced (a client span, `_meta.traceparent` passed on) only when telemetry is exported.
    const send = (method: string, params: unknown, requestOptions: RequestOptions | undefined) =>
      Telemetry.isActive()
        ? Telemetry.clientSpan(config.id, method, params, (traced) => sendNow(method, traced, requestOptions))
        : sendNow(method, params, requestOptions)
    // A server that forgot the session (restarted behind a URL, expired it, or lost its state) says
    // so: it is initialized again, once however many calls noticed, and each call is retried once.
    let generation = 0
    const reinitializing = yield* Semaphore.make(1)
    const reinitialize = (seen: number) =>
      reinitializing.withPermits(1)(
        Effect.suspend(() => {
          if (generation !== seen) return Effect.void
          return initialize(connection, clientInfo, capabilities, timeoutMs, versions).pipe(
            Effect.flatMap(() => {
              connection.notify("notifications/initialized", undefined)
              generation++
              return Effect.logWarning("the backend had lost its session: initialized it again")
            })
          )
        })
      )
    const requestOnce = (method: string, params?: unknown, requestOptions?: RequestOptions) => {
      if (stateless) return send(method, params, requestOptions)
      const seen = generation
      return send(method, params, requestOptions).pipe(
        Effect.catchIf(isSessionLost, () => Effect.andThen(reinitialize(seen), send(method, params, requestOptions)))
      )
    }
    // Each call's outcome for observers (the debug UI's calls and errors), only while one listens.
    const events = options.events
    const request = (method: string, params?: unknown, requestOptions?: RequestOptions) => {
      if (events === undefined || !events.active()) return requestOnce(method, params, requestOptions)
      const started = Date.now()
      const publish = (outcome: "ok" | "error" | "isError" | "cancelled", detail?: string) =>
        Effect.sync(() =>
          events.publish({
            _tag: "BackendCall",
            at: Date.now(),
            backendId: config.id,
            method,
            ms: Date.now() - started,
            outcome,
            detail
          })
        )
      return requestOnce(method, params, requestOptions).pipe(
        Effect.onExit((exit) => {
          if (Exit.isSuccess(exit)) {
            return Mcp.isCallToolResult(exit.value) && exit.value.isError === true
              ? publish("isError", Mcp.resultText(exit.value).slice(0, 500) || "the tool reported an error")
              : publish("ok")
          }
          if (Cause.hasInterruptsOnly(exit.cause)) return publish("cancelled")
          const failure = Cause.findErrorOption(exit.cause)
          return publish("error", failure._tag === "Some" ? failure.value.message : "the call failed")
        })
      )
    }
    return { sendNow, request }
  })

const makeOne = Effect.fn("Backend.make")(
  function* (config: BackendConfig, options: Options = {}) {
    const timeoutMs = config.requestTimeoutMs ?? options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
    const graceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS
    const clientInfo = options.clientInfo ?? DEFAULT_CLIENT_INFO
    const logs = yield* Queue.dropping<LogLine>(1_024)
    const inbound = yield* Queue.unbounded<Inbound>()

    const open = transportOf(config) === "stdio" ? spawnConnection : connectRemote
    const connection = yield* Effect.acquireRelease(
      open(
        config,
        config.maxFrameBytes ?? options.maxFrameBytes ?? DEFAULT_MAX_BACKEND_FRAME_BYTES,
        logs,
        inbound,
        options.events,
        options.subject,
        options.files
      ),
      (connection) => terminate(connection, graceMs)
    )
    if (options.maxRequestBytes !== undefined) connection.maxRequestBytes = options.maxRequestBytes
    const address = connection.channel.address
    yield* Effect.annotateCurrentSpan({ backend: config.id, address })
    yield* Effect.logDebug(!connection.channel.remote ? `spawned ${address}` : `connected to ${address}`)
    yield* Effect.forkScoped(logPump(connection, logs))

    if (options.onRequest !== undefined) yield* serveRequests(connection, options.onRequest)
    // Some servers read their stdin (or listen) only a while after they start.
    if (config.startupDelayMs !== undefined) yield* Effect.sleep(config.startupDelayMs)
    const capabilities = options.clientCapabilities ?? {}
    const { session, stateless, versions } = yield* handshake(connection, config, options, capabilities, timeoutMs)
    // Every request in the backend's era: the stateless one's _meta, or none of it.
    const requester: Requester = (method, params, ms) =>
      connection.request(method, paramsFor(stateless, params, capabilities, clientInfo), ms)
    let tools = yield* listAllTools(requester, timeoutMs).pipe(
      // A server without tools may not implement tools/list at all.
      Effect.catchIf(
        (e) => e.reason === "call_failed" && field(e.detail, "code") === -32601,
        () => Effect.succeed<ReadonlyArray<Mcp.Tool>>([])
      )
    )
    connection.channel.toolsListed?.(tools)
    connection.starting = false

    const relist = listAllTools(requester, timeoutMs).pipe(
      Effect.flatMap((listed) => {
        tools = listed
        connection.channel.toolsListed?.(listed)
        return options.onToolsChanged?.(listed) ?? Effect.void
      }),
      Effect.catchCause((cause) => Effect.logWarning("could not list the tools again", cause))
    )
    // Re-listing runs beside the relay, never in it: replies wait for the relay (see
    // `Connection.orderedRequest`), so it must not wait on a backend request itself. A burst of
    // list_changed is one re-listing, and one more after it when some came in while it ran.
    const scope = yield* Effect.scope
    const relistLock = yield* Semaphore.make(1)
    let relistQueued = false
    const requestRelist = Effect.suspend(() => {
      if (relistQueued) return Effect.void
      relistQueued = true
      return Effect.asVoid(
        Effect.forkIn(
          relistLock.withPermits(1)(
            Effect.andThen(
              Effect.sync(() => (relistQueued = false)),
              relist
            )
          ),
          scope
        )
      )
    })
    const relay = (event: Inbound): Effect.Effect<void> =>
      event._tag === "ToolsChanged"
        ? requestRelist
        : options.onNotification === undefined
          ? Effect.sync(() => connection.markRelayed())
          : options.onNotification(event.method, event.params).pipe(
              Effect.catchCause((cause) => Effect.logDebug(cause)),
              Effect.ensuring(Effect.sync(() => connection.markRelayed()))
            )
    yield* Effect.forkScoped(
      Effect.forever(Effect.flatMap(Queue.take(inbound), relay)).pipe(Effect.ensuring(Effect.sync(() => connection.stopRelay())))
    )

    if (stateless) {
      // The stateless era says what changed only on a `subscriptions/listen` stream: one for the
      // life of the process, for the list changes it can announce.
      const listChanged = (name: string) => field(session.capabilities[name], "listChanged") === true
      const notifications = {
        ...(listChanged("tools") ? { toolsListChanged: true } : {}),
        ...(listChanged("prompts") ? { promptsListChanged: true } : {}),
        ...(listChanged("resources") ? { resourcesListChanged: true } : {})
      }
      if (Object.keys(notifications).length > 0) {
        connection.openStream("subscriptions/listen", paramsFor(true, { notifications }, capabilities, clientInfo))
      }
    }
    yield* Effect.logDebug(`session ready: protocol ${session.protocolVersion}, ${tools.length} tools`)

    const { sendNow, request } = yield* requestsOf(connection, config, options, { stateless, versions, capabilities, timeoutMs })

    const backend: Backend = {
      id: config.id,
      pid: connection.pid,
      address,
      protocolVersion: session.protocolVersion,
      era: stateless ? "stateless" : "session",
      serverInfo: session.serverInfo,
      serverCapabilities: session.capabilities,
      instructions: session.instructions,
      tools: () => tools,
      request,
      notify: (method, params) => Effect.sync(() => connection.notify(method, params)),
      listTools: listAllTools(requester, timeoutMs).pipe(
        Effect.tap((listed) =>
          Effect.sync(() => {
            tools = listed
            connection.channel.toolsListed?.(listed)
          })
        )
      ),
      callTool: (name, args, callOptions) =>
        request(
          "tools/call",
          callOptions?.meta === undefined
            ? { name, arguments: args ?? {} }
            : { name, arguments: args ?? {}, _meta: callOptions.meta },
          callOptions
        ),
      // The stateless era removed ping: asking what it offers is its liveness check.
      ping: Effect.asVoid(stateless ? request("server/discover", {}) : request("ping")),
      activity: () => ({ heardAt: connection.heardAt, timedOutAt: connection.timedOutAt }),
      probe: (probeTimeoutMs) =>
        sendNow(stateless ? "server/discover" : "ping", stateless ? {} : undefined, { timeoutMs: probeTimeoutMs }).pipe(
          Effect.as("alive" as const),
          // A backend whose input is stuck cannot even be asked: as silent as one that does not answer.
          Effect.catch((error) =>
            Effect.succeed(error.reason === "timeout" || error.reason === "overloaded" ? ("silent" as const) : ("alive" as const))
          )
        ),
      exited: Deferred.await(connection.exitDeferred),
      isRunning: () => !connection.hasExited
    }
    return backend
  },
  (effect, ...[config]) => Effect.annotateLogs(effect, { backend: config.id })
)
