/**
 * All backends: starts every enabled backend in parallel, keeps each one's state, restarts
 * crashed ones with exponential backoff, and routes calls to them (`executeOnBackend`).
 *
 * Each backend's lifecycle runs in its own fiber, forked into the layer's scope, and each run of
 * its process in its own scope, so a backend failing never touches another and closing the layer
 * stops every process tree. Calls go straight to the ready `Backend` (a Map lookup and one
 * write), so this module adds nothing measurable to the hot path.
 *
 * Longer than most modules: start, restart, replace, apply (a reload's difference) and stop are one
 * state machine over one table of entries under one lock, and splitting it would hand that table
 * around. The parts it uses are apart: the heartbeat (`Heartbeat`), one backend (`Backend`), the
 * restart policy and its `Schedule` (`Restart`), what a new set changes (`Diff`), an entry of the
 * table (`Entry`), each user's own connection to a `perUser` backend (`Lanes`).
 */
import {
  Context,
  Deferred,
  Duration,
  Effect,
  ExecutionStrategy,
  Fiber,
  Layer,
  Option,
  PubSub,
  Schedule,
  Scope,
  Stream
} from "effect"
import * as Backend from "./Backend.js"
import * as Heartbeat from "./Heartbeat.js"
import * as Lanes from "./Lanes.js"
import { type Entry, notReady, statusOf } from "./Entry.js"
import { needsAuthOf } from "./Channel.js"
import * as Store from "../auth/Store.js"
import { type Applied, diff, NOTHING_APPLIED } from "./Diff.js"
import { answerAlone, type BackendRequestHandler, capabilitiesFor } from "./BackendRequests.js"
import { DEFAULT_RESTART_POLICY, type RestartPolicy, restartDelays } from "./Restart.js"
import { type BackendConfig, describeBackend, type Exposure, healthCheckOf, oauthOf, rootsOf } from "../config/Config.js"
import { BackendError } from "../protocol/Errors.js"
import { Events } from "../observability/Events.js"
import * as Logging from "../observability/Logging.js"
import type { BackendState, BackendStatus } from "../observability/BackendStatus.js"
import type { Tool } from "../protocol/Mcp.js"
import { field } from "../values/Json.js"
import * as Pins from "./Pins.js"

export type { BackendState, BackendStatus } from "../observability/BackendStatus.js"
export { type Applied, diff, runsTheSame } from "./Diff.js"
export type { BackendRequest, BackendRequestHandler } from "./BackendRequests.js"
export { DEFAULT_RESTART_POLICY, type RestartPolicy, restartDelays } from "./Restart.js"
export { countListed, type Hidden, hiddenIn } from "./Listing.js"
import type { StartOptions } from "./StartOptions.js"
export { type StartOptions, startOptionsOf } from "./StartOptions.js"

export interface BackendTools {
  readonly backendId: string
  readonly description?: string | undefined
  readonly tools: ReadonlyArray<Tool>
  /** Its filters, overrides and namespace (from its configuration); none: all tools, its id as namespace. */
  readonly exposure?: Exposure | undefined
  /**
   * Tools whose definitions differ from their pins: held back from `tools` under `toolPins:
   * "quarantine"`, in `tools` and only flagged under "warn".
   */
  readonly changed?: ReadonlyArray<Pins.Changed> | undefined
  readonly pinMode?: Pins.Mode | undefined
  /** What its pins' review said besides changes: its id now names another server, a tool listed twice. */
  readonly pinNotes?: ReadonlyArray<string> | undefined
}

export interface BackendNotification {
  readonly backendId: string
  readonly method: string
  readonly params: unknown
}

export interface ManagerOptions {
  /** SIGTERM-to-SIGKILL grace when a backend is stopped (default 2 s). */
  readonly killGraceMs?: number | undefined
  readonly restart?: Partial<RestartPolicy> | undefined
  readonly clientInfo?: Backend.ClientInfo | undefined
  readonly maxFrameBytes?: number | undefined
}

export interface BackendsService {
  /**
   * Starts every enabled backend in parallel (stopping a previous set first). Returns when each
   * is ready or failed, or after `startupTimeoutMs`; the rest go on starting in the background
   * and `toolsChanged` tells when they are ready. Never fails.
   */
  readonly start: (configs: ReadonlyArray<BackendConfig>, options: StartOptions) => Effect.Effect<void>
  /** The tools of the ready backends, in configuration order. */
  readonly tools: Effect.Effect<ReadonlyArray<BackendTools>>
  /** The same, synchronously, for hot paths. */
  readonly toolsSync: () => ReadonlyArray<BackendTools>
  readonly states: Effect.Effect<ReadonlyArray<BackendStatus>>
  /** A backend's configuration in force (its exposure settings, for the lists and routes). */
  readonly configOf: (backendId: string) => BackendConfig | undefined
  /** The backend's running client when it is ready (its capabilities, server info, instructions). */
  readonly backend: (backendId: string) => Backend.Backend | undefined
  /**
   * Any MCP request on a ready backend; the result passes through unchanged. `subject`: whose it
   * is, for a backend that acts as each user (`perUser`): it goes on that user's lane (see Lanes).
   */
  readonly executeOnBackend: (
    backendId: string,
    method: string,
    params: unknown,
    subject?: string
  ) => Effect.Effect<unknown, BackendError>
  /** Emits whenever the ready backends' tools change (ready, re-listed, crashed, restarted, stopped). */
  readonly toolsChanged: Stream.Stream<void>
  /** Backend notifications (progress, log messages), for observers such as the debug UI. */
  readonly notifications: Stream.Stream<BackendNotification>
  /**
   * Relays backend notifications to `listener` while the current scope is open. It runs in order
   * and before the backend's later replies are delivered, so a client sees a call's progress before
   * its result; it must not block (a queue offer).
   */
  readonly relayNotifications: (
    listener: (notification: BackendNotification) => Effect.Effect<void>
  ) => Effect.Effect<void, never, Scope.Scope>
  /**
   * Answers backends' own requests with `handler` while the current scope is open (the gateway
   * relays them to clients). Without one, `roots/list` gets the backend's configured roots and
   * anything else -32601.
   */
  readonly serveRequests: (handler: BackendRequestHandler) => Effect.Effect<void, never, Scope.Scope>
  /** Every state change, for the debug UI. */
  readonly statusChanges: Stream.Stream<BackendStatus>
  /** Stops every backend in parallel and waits for the processes to exit. */
  readonly stopAll: Effect.Effect<void>
  /**
   * Stops one backend (if running) and starts it afresh, as after a crash but at once and with its
   * failure count reset. "unknown" for an id not configured, "disabled" for a disabled one.
   */
  readonly restart: (backendId: string) => Effect.Effect<"restarting" | "unknown" | "disabled">
  /**
   * Makes `configs` the set in force as a difference from the running one (a configuration
   * reload): added backends start, removed ones stop (their calls in flight fail with "backend
   * removed"), those whose way of running changed restart, and the rest keep their process, with
   * only their exposure settings (filters, overrides, namespace, description) replaced. Does
   * nothing but record the set before the first `start`. Does not wait for new backends.
   */
  readonly apply: (configs: ReadonlyArray<BackendConfig>) => Effect.Effect<Applied>
  /** Holds every ready backend's tools against their pins again (pins another gateway changed: a `trust`). */
  readonly reviewPins: Effect.Effect<void>
}

// ---------------------------------------------------------------------------------------------

/** Builds the service; its backends live in the current scope. */
export const make = (options: ManagerOptions = {}) =>
  Effect.gen(function* () {
    const policy: RestartPolicy = { ...DEFAULT_RESTART_POLICY, ...options.restart }
    // Optional: a Backends used on its own publishes nowhere.
    const events = Option.getOrUndefined(yield* Effect.serviceOption(Events))
    // Lifecycle fibers live in a child scope closed in parallel: stopping N stubborn backends
    // then takes one kill grace, not N.
    const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.parallel)
    const toolsPubSub = yield* PubSub.sliding<void>(1)
    const notificationsPubSub = yield* PubSub.sliding<BackendNotification>(4_096)
    const statusPubSub = yield* PubSub.sliding<BackendStatus>(1_024)
    const listeners = new Set<(notification: BackendNotification) => Effect.Effect<void>>()
    let requestHandler: BackendRequestHandler | undefined = undefined
    // start and stopAll replace the whole set; they must not overlap.
    const lock = yield* Effect.makeSemaphore(1)

    let entries: ReadonlyArray<Entry> = []
    let byId = new Map<string, Entry>()
    let toolsCache: ReadonlyArray<BackendTools> | undefined = undefined

    const toolsSync = (): ReadonlyArray<BackendTools> => {
      if (toolsCache === undefined) {
        toolsCache = entries
          .filter((e) => e.state === "ready")
          .map((e) => ({
            backendId: e.config.id,
            ...(e.config.description === undefined ? {} : { description: e.config.description }),
            tools: e.tools,
            exposure: e.config,
            ...(e.changed.length === 0 ? {} : { changed: e.changed, pinMode: lastStartOptions?.pins?.mode }),
            ...(e.pinNotes.length === 0 ? {} : { pinNotes: e.pinNotes })
          }))
      }
      return toolsCache
    }

    const toolsChangedNow = Effect.suspend(() => {
      toolsCache = undefined
      return PubSub.publish(toolsPubSub, undefined)
    })

    const setState = (entry: Entry, state: BackendState, lastError?: string) =>
      Effect.suspend(() => {
        const wasReady = entry.state === "ready"
        entry.state = state
        if (lastError !== undefined) entry.lastError = lastError
        if (state !== "ready") {
          entry.backend = undefined
          entry.pid = undefined
        }
        const status = statusOf(entry)
        return Effect.zipRight(
          PubSub.publish(statusPubSub, status),
          wasReady || state === "ready" ? toolsChangedNow : Effect.void
        )
      })

    /**
     * A backend's tools as listed, held against their pins: those it may offer become its tools;
     * a definition that changed since it was pinned is said (once per change) at warn.
     */
    const reviewTools = (entry: Entry, tools: ReadonlyArray<Tool>, pins: Pins.Settings | undefined) =>
      Effect.suspend(() => {
        const reviewed = Pins.recheck(pins, Pins.serverOf(entry.config), tools, entry.changed)
        entry.tools = reviewed.admitted
        entry.changed = reviewed.changed
        if (reviewed.notes.length > 0) entry.pinNotes = reviewed.notes
        return Effect.forEach(reviewed.warnings, (warning) => Effect.logWarning(warning), { discard: true })
      })

    /** How a backend is made (but for what it does when its tools change). */
    const optionsFor = (entry: Entry, startOptions: StartOptions): Backend.Options => ({
      requestTimeoutMs: startOptions.requestTimeoutMs,
      killGraceMs: options.killGraceMs,
      clientInfo: options.clientInfo,
      maxFrameBytes: startOptions.maxBackendFrameBytes ?? options.maxFrameBytes,
      maxRequestBytes: startOptions.maxBackendRequestBytes,
      events,
      clientCapabilities: capabilitiesFor(entry.config, startOptions.clientCapabilities),
      era: entry.era,
      onRequest: (method, params) => {
        const request = { backendId: entry.config.id, method, params, roots: rootsOf(entry.config) }
        return requestHandler === undefined ? answerAlone(request) : requestHandler(request)
      },
      onNotification: (method, params) => {
        const notification = { backendId: entry.config.id, method, params }
        return Effect.zipRight(
          PubSub.publish(notificationsPubSub, notification),
          Effect.forEach([...listeners], (listener) => listener(notification), { discard: true })
        )
      }
    })

    // Each user's own connection to a backend that acts as each user (its tools listed by the shared one).
    const lanes = yield* Lanes.make((backendId, subject) =>
      Effect.suspend(() => {
        const entry = byId.get(backendId)
        const startOptions = lastStartOptions
        if (entry === undefined || startOptions === undefined) {
          return Effect.fail(new BackendError({ backendId, reason: "not_ready", method: "connect", summary: "stopped" }))
        }
        return Effect.annotateLogs(Backend.make(entry.config, { ...optionsFor(entry, startOptions), subject }), { subject })
      })
    )

    /** One run of the process: start, be ready, wait for the exit. Fails if it never became ready. */
    const runOnce = (entry: Entry, startOptions: StartOptions) =>
      Effect.scoped(
        Effect.gen(function* () {
          const backend = yield* Backend.make(entry.config, {
            ...optionsFor(entry, startOptions),
            onToolsChanged: (tools) =>
              Effect.suspend(() => {
                if (entry.backend !== backend) return Effect.void
                const said = reviewTools(entry, tools, startOptions.pins)
                return Effect.zipRight(
                  Effect.zipRight(said, Effect.logInfo(`tools changed: ${tools.length} tools`)),
                  Effect.zipRight(PubSub.publish(statusPubSub, statusOf(entry)), toolsChangedNow)
                )
              })
          })
          entry.backend = backend
          entry.pid = backend.pid
          entry.protocolVersion = backend.protocolVersion
          entry.era = backend.era
          yield* reviewTools(entry, backend.tools(), startOptions.pins)
          entry.lastError = undefined
          yield* setState(entry, "ready")
          yield* Effect.logInfo(
            `backend ready: ${backend.address}, protocol ${backend.protocolVersion}, ${entry.tools.length} tools`
          )
          yield* Deferred.succeed(entry.settled, undefined)
          const readyAt = Date.now()
          const check = healthCheckOf(entry.config)
          const exit = yield* check === undefined
            ? backend.exited
            : Effect.raceFirst(backend.exited, Heartbeat.watch(backend, check))
          return { exit, readyMs: Date.now() - readyAt }
        })
      )

    const lifecycle = (entry: Entry, startOptions: StartOptions): Effect.Effect<void> =>
      Effect.gen(function* () {
        const { config } = entry
        let failures = 0
        if (config.refused !== undefined) {
          // Said once: the configuration's own warning may have said it already.
          if (Logging.firstTime(config.refused)) yield* Effect.logError(`backend not started: ${config.refused}`)
          return yield* setState(entry, "failed", config.refused)
        }
        yield* Effect.logInfo("starting backend", describeBackend(config))
        yield* setState(entry, "starting")
        // Said and shown before each wait (the schedule's output is the wait it is about to take).
        let announce: (delay: Duration.Duration) => Effect.Effect<void> = () => Effect.void
        const restarts = yield* Schedule.driver(restartDelays(policy).pipe(Schedule.tapOutput((delay) => announce(delay))))
        while (true) {
          const outcome = yield* Effect.either(runOnce(entry, startOptions))
          let lastError: string
          if (outcome._tag === "Left") {
            lastError = outcome.left.summary
            // A person must sign in first: said once, then it waits for the token, not the backoff.
            if (needsAuthOf(outcome.left.detail)) {
              // Its own words ("needs auth: no token yet; run `mcp-agentify auth linear`"), not the handshake's.
              const said = field(outcome.left.detail, "message")
              if (typeof said === "string") lastError = said
              yield* Effect.logWarning(`backend ${lastError}`)
              yield* setState(entry, "needs auth", lastError)
              yield* Deferred.succeed(entry.settled, undefined)
              yield* Store.written(Store.directory(), config.id)
              yield* Effect.logInfo("a token was stored: starting again")
              yield* setState(entry, "starting")
              continue
            }
            // A server that died of server/discover is of the session era: its restart does not ask again.
            if (outcome.left.method === "server/discover" && config.url === undefined) entry.era = "session"
            if (Backend.isPermanentFailure(outcome.left)) {
              yield* Effect.logError(`backend failed: ${lastError}`)
              return yield* setState(entry, "failed", lastError)
            }
          } else {
            lastError = outcome.right.exit.description
            if (outcome.right.readyMs >= policy.healthyAfterMs) {
              failures = 0
              yield* restarts.reset
            }
          }
          failures++
          if (!config.restartOnCrash) {
            yield* Effect.logError(`backend failed: ${lastError} (restartOnCrash is off)`)
            return yield* setState(entry, "failed", lastError)
          }
          if (failures >= policy.maxConsecutiveFailures) {
            const gaveUp = `${lastError} (gave up after ${failures} consecutive failures)`
            yield* Effect.logError(`backend failed: ${gaveUp}`)
            return yield* setState(entry, "failed", gaveUp)
          }
          const what = outcome._tag === "Left" ? "could not start" : "crashed"
          announce = (delay) =>
            Effect.gen(function* () {
              yield* Effect.logWarning(`backend ${what}: ${lastError}; restarting in ${Duration.toMillis(delay)} ms`)
              yield* setState(entry, "restarting", lastError)
              // start() does not wait through backoff: the backend shows up later via toolsChanged.
              yield* Deferred.succeed(entry.settled, undefined)
            })
          yield* restarts.next(undefined)
          entry.restarts++
        }
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.zipRight(Effect.logError("backend lifecycle failed", cause), setState(entry, "failed", "internal error"))
        ),
        Effect.onInterrupt(() => Effect.zipRight(setState(entry, "stopped"), Effect.logInfo("backend stopped"))),
        Effect.ensuring(Deferred.succeed(entry.settled, undefined)),
        Effect.annotateLogs({ backend: entry.config.id })
      )

    /** Stops these entries' lifecycles (and with them their processes), waiting for them. */
    const stopEntries = (stopping: ReadonlyArray<Entry>) =>
      Effect.suspend(() => {
        const fibers = stopping.flatMap((e) => (e.fiber === undefined ? [] : [e.fiber]))
        for (const e of stopping) e.fiber = undefined
        return (fibers.length === 0 ? Effect.void : Fiber.interruptAll(fibers)).pipe(
          Effect.zipRight(Effect.forEach(stopping, (e) => lanes.close(e.config.id), { discard: true })),
          // A lifecycle interrupted before it ever ran never reaches its own `ensuring`: release a
          // start() still waiting for it (a shutdown right behind initialize).
          Effect.zipRight(Effect.forEach(stopping, (e) => Deferred.succeed(e.settled, undefined), { discard: true }))
        )
      })

    const stopUnlocked = Effect.suspend(() => stopEntries(entries))

    let lastStartOptions: StartOptions | undefined

    // Stopped is stopped: a reload after it starts nothing (the next `start` does).
    const stopAll: Effect.Effect<void> = lock.withPermits(1)(
      Effect.zipRight(
        Effect.sync(() => (lastStartOptions = undefined)),
        stopUnlocked
      )
    )

    const restart = (backendId: string) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          const entry = byId.get(backendId)
          if (entry === undefined || lastStartOptions === undefined) return "unknown" as const
          if (!entry.config.enabled) return "disabled" as const
          const fiber = entry.fiber
          entry.fiber = undefined
          if (fiber !== undefined) yield* Fiber.interrupt(fiber)
          entry.restarts++
          yield* Effect.logInfo("restarting on request", { backend: backendId })
          entry.fiber = yield* Effect.forkIn(lifecycle(entry, lastStartOptions), scope)
          return "restarting" as const
        })
      )

    const newEntry = (config: BackendConfig) =>
      Effect.map(Deferred.make<void>(), (settled): Entry => ({
        config,
        stoppedFor: undefined,
        state: "stopped",
        lastError: undefined,
        pid: undefined,
        protocolVersion: undefined,
        restarts: 0,
        tools: [],
        changed: [],
        pinNotes: [],
        backend: undefined,
        era: "auto",
        fiber: undefined,
        settled
      }))

    const apply = (configs: ReadonlyArray<BackendConfig>): Effect.Effect<Applied> =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          const startOptions = lastStartOptions
          if (startOptions === undefined) return NOTHING_APPLIED
          const applied = diff(
            entries.map((e) => e.config),
            configs
          )
          const stopping = entries.filter((e) => applied.removed.includes(e.config.id) || applied.restarted.includes(e.config.id))
          for (const e of stopping) {
            e.stoppedFor = applied.removed.includes(e.config.id)
              ? "backend removed"
              : "backend restarted for a configuration change"
          }
          yield* stopEntries(stopping)
          const fresh: Array<Entry> = []
          const starting: Array<Entry> = []
          for (const config of configs) {
            const entry = byId.get(config.id)
            if (entry !== undefined && entry.stoppedFor === undefined) {
              // Kept: only how it is exposed or described may have changed.
              entry.config = config
              fresh.push(entry)
              continue
            }
            const created = yield* newEntry(config)
            fresh.push(created)
            if (config.enabled) starting.push(created)
          }
          entries = fresh
          byId = new Map(fresh.map((e) => [e.config.id, e]))
          for (const entry of starting) entry.fiber = yield* Effect.forkIn(lifecycle(entry, startOptions), scope)
          yield* toolsChangedNow
          return applied
        })
      )

    /** Replaces the set and forks the lifecycles; returns the entries start() waits for. */
    const replace = (configs: ReadonlyArray<BackendConfig>, startOptions: StartOptions) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          lastStartOptions = startOptions
          yield* stopUnlocked
          const fresh: Array<Entry> = []
          for (const config of configs) fresh.push(yield* newEntry(config))
          entries = fresh
          byId = new Map(fresh.map((e) => [e.config.id, e]))
          yield* toolsChangedNow
          const enabled = fresh.filter((e) => e.config.enabled)
          for (const entry of enabled) entry.fiber = yield* Effect.forkIn(lifecycle(entry, startOptions), scope)
          return enabled
        })
      )

    const start = (configs: ReadonlyArray<BackendConfig>, startOptions: StartOptions): Effect.Effect<void> =>
      Effect.gen(function* () {
        const enabled = yield* replace(configs, startOptions)
        // Outside the lock: a stopAll during start-up must not wait for the start-up timeout.
        const waited = yield* Effect.forEach(enabled, (e) => Deferred.await(e.settled), { discard: true }).pipe(
          Effect.timeoutOption(startOptions.startupTimeoutMs)
        )
        if (waited._tag === "None") {
          const pending = enabled.filter((e) => e.state === "starting").map((e) => e.config.id)
          yield* Effect.logWarning(
            `still starting after ${startOptions.startupTimeoutMs} ms: ${pending.join(", ")}; ` +
              "their tools appear when they are ready"
          )
        }
      })

    // Looked up when the effect runs, not when it is built: an effect built before start() or
    // kept across a restart must reach the backend running then.
    const executeOnBackend = (
      backendId: string,
      method: string,
      params: unknown,
      subject?: string
    ): Effect.Effect<unknown, BackendError> =>
      Effect.suspend(() => {
        const entry = byId.get(backendId)
        if (entry === undefined) {
          return Effect.fail(
            new BackendError({ backendId, reason: "not_found", method, summary: "no backend with this id is configured" })
          )
        }
        if (subject !== undefined && entry.config.enabled && oauthOf(entry.config)?.perUser === true) {
          return lanes.request(backendId, subject, method, params)
        }
        const backend = entry.backend
        if (backend !== undefined) {
          // Stopped for good while the call ran (a reload removed it): say so, not "stopped".
          return Effect.catchIf(
            backend.request(method, params),
            (error) => entry.stoppedFor !== undefined && error.reason === "crashed",
            () =>
              Effect.fail(
                new BackendError({ backendId, reason: "crashed", method, summary: `${entry.stoppedFor} during ${method}` })
              )
          )
        }
        // A call to a backend that is not running failed too (the running ones count their own).
        if (events?.active()) {
          const error = notReady(entry, method)
          events.publish({
            _tag: "BackendCall",
            at: Date.now(),
            backendId,
            method,
            ms: 0,
            outcome: "error",
            detail: error.message
          })
          return Effect.fail(error)
        }
        return Effect.fail(notReady(entry, method))
      })

    yield* Effect.addFinalizer(() => stopAll)

    const reviewPin = (entry: Entry) => {
      const { backend, tools: before } = entry
      if (backend === undefined || entry.state !== "ready") return Effect.void
      return Effect.flatMap(reviewTools(entry, backend.tools(), lastStartOptions?.pins), () =>
        entry.tools.length === before.length && entry.tools.every((tool, i) => tool === before[i])
          ? Effect.void
          : Effect.zipRight(PubSub.publish(statusPubSub, statusOf(entry)), toolsChangedNow)
      )
    }

    const service: BackendsService = {
      start,
      tools: Effect.sync(toolsSync),
      toolsSync,
      states: Effect.sync(() => entries.map(statusOf)),
      backend: (backendId) => byId.get(backendId)?.backend,
      configOf: (backendId) => byId.get(backendId)?.config,
      executeOnBackend,
      toolsChanged: Stream.fromPubSub(toolsPubSub),
      notifications: Stream.fromPubSub(notificationsPubSub),
      relayNotifications: (listener) =>
        Effect.acquireRelease(
          Effect.sync(() => listeners.add(listener)),
          () => Effect.sync(() => listeners.delete(listener))
        ).pipe(Effect.asVoid),
      serveRequests: (handler) =>
        Effect.acquireRelease(
          Effect.sync(() => (requestHandler = handler)),
          () => Effect.sync(() => (requestHandler = requestHandler === handler ? undefined : requestHandler))
        ).pipe(Effect.asVoid),
      statusChanges: Stream.fromPubSub(statusPubSub),
      stopAll,
      restart,
      apply,
      reviewPins: Effect.suspend(() => Effect.forEach(entries, reviewPin, { discard: true }))
    }
    return service
  })

export class Backends extends Context.Tag("mcp-agentify/Backends")<Backends, BackendsService>() {
  /** Requires nothing: processes are spawned with node:child_process (see Backend.ts for why). */
  static readonly layer: Layer.Layer<Backends> = Layer.scoped(Backends, make())
  /** With a shorter kill grace, a different restart policy, ... (tests, embedders). */
  static readonly layerWith = (options: ManagerOptions): Layer.Layer<Backends> => Layer.scoped(Backends, make(options))
  /** The same as `layer`: there are no platform services to provide. Kept for symmetry with other Node layers. */
  static readonly layerNode: Layer.Layer<Backends> = Backends.layer
}
