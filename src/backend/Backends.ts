/**
 * All backends: starts every enabled backend in parallel, keeps each one's state, restarts
 * crashed ones with exponential backoff, and routes requests to them (`BackendRequester`, internal: see Requester).
 *
 * Each backend's lifecycle runs in its own fiber, forked into the layer's scope, and each run of
 * its process in its own scope, so a backend failing never touches another and closing the layer
 * stops every process tree. Calls go straight to the ready `Backend` (a Map lookup and one
 * write), so this module adds nothing measurable to the hot path.
 *
 * Start, restart, replace, apply (a reload's difference) and stop are one state machine here, over
 * one table of entries (`Table`: what it tells, and a request routed to a backend) under one lock.
 * The parts it uses are apart: one backend's life (`Lifecycle`), the heartbeat (`Heartbeat`), one
 * backend (`Backend`), the restart policy and its `Schedule` (`Restart`), what a new set changes
 * (`Diff`), an entry of the table (`Entry`), each user's own connection to a `perUser` backend (`Lanes`).
 */
import { Context, Deferred, Effect, Fiber, Layer, PubSub, Scope, Stream, Semaphore } from "effect"
import * as Backend from "./Backend.js"
import * as Known from "./Known.js"
import * as Lanes from "./Lanes.js"
import * as Lifecycle from "./Lifecycle.js"
import { Table } from "./Table.js"
import * as Listing from "./Listing.js"
import { RenewalTurns } from "../auth/Renewals.js"
import { WrittenFiles } from "../store/WrittenFiles.js"
import { BackendRequester, type RequesterService } from "./Requester.js"
import { type Entry, statusOf } from "./Entry.js"
import { type Applied, diff, NOTHING_APPLIED } from "./Diff.js"
import type { BackendRequestHandler } from "./BackendRequests.js"
import { DEFAULT_RESTART_POLICY, type RestartPolicy } from "./Restart.js"
import type { BackendConfig } from "../config/Config.js"
import { BackendError } from "../protocol/Errors.js"
import { Events } from "../observability/Events.js"
import type { BackendStatus } from "../observability/BackendStatus.js"

export type { BackendState, BackendStatus } from "../observability/BackendStatus.js"
export { type Applied, diff, runsTheSame } from "./Diff.js"
export type { BackendRequest, BackendRequestHandler } from "./BackendRequests.js"
export { DEFAULT_RESTART_POLICY, type RestartPolicy, restartDelays } from "./Restart.js"
export type { Hidden } from "./Listing.js"
import type { StartOptions } from "./StartOptions.js"
export { type StartOptions, startOptionsOf } from "./StartOptions.js"

export type { BackendNotification, BackendTools, ManagerOptions } from "./Table.js"
import type { BackendNotification, BackendTools, ManagerOptions } from "./Table.js"

export interface BackendsService {
  /**
   * Starts every enabled backend in parallel (stopping a previous set first). Returns when each
   * is ready or failed, or after `startupTimeoutMs`; the rest go on starting in the background
   * and `toolsChanged` tells when they are ready. Never fails.
   */
  readonly start: (configs: ReadonlyArray<BackendConfig>, options: StartOptions) => Effect.Effect<void>
  /**
   * Starts every enabled backend as `start` does, but returns as soon as they are on their way
   * (what a client's `initialize` or the HTTP listener must not wait for); `settle` waits for them.
   */
  readonly begin: (configs: ReadonlyArray<BackendConfig>, options: StartOptions) => Effect.Effect<void>
  /**
   * Waits for the backends starting whose tools are not known yet, each until it is ready or
   * failed or until `startupTimeoutMs` has passed since it began starting; returns the ids of those
   * still starting then (at once when none is starting).
   */
  readonly settle: Effect.Effect<ReadonlyArray<string>>
  /** Whether `settle` would wait now: a backend is starting, its tools not known, within its start-up timeout. */
  readonly settling: () => boolean
  /** The tools of the ready backends, in configuration order. */
  readonly tools: Effect.Effect<ReadonlyArray<BackendTools>>
  /** The same, synchronously, for hot paths. */
  readonly toolsSync: () => ReadonlyArray<BackendTools>
  readonly states: Effect.Effect<ReadonlyArray<BackendStatus>>
  /** A backend's configuration in force (its exposure settings, for the lists and routes). */
  readonly configOf: (backendId: string) => BackendConfig | undefined
  /** The backend's running client when it is ready: its facts (capabilities, server info, instructions) and notifications. */
  readonly backend: (backendId: string) => Backend.RunningBackend | undefined
  /**
   * The start a call of a backend waiting for its first use waits for (see Known): once started,
   * what it lists now, not what was remembered, is what the call is judged by. Undefined when it
   * runs or is not started on use: nothing to wait for (asked synchronously, on the hot path).
   */
  readonly startOnUse: (backendId: string) => Effect.Effect<void> | undefined
  /**
   * What is remembered of a backend waiting for its first use (see Known): the capabilities and
   * lists it offers while not started; undefined once it runs (ask it) or when nothing is known.
   */
  readonly known: (backendId: string) => Pick<Known.Known, "capabilities" | "lists"> | undefined
  /**
   * How many items a list method (`resources/list`, `prompts/list`) gives on a ready backend, as
   * `check` and the debug UI show it: "-" when it does not offer `capability`, "error" when listing
   * fails, "?" for an answer without the list.
   */
  readonly countListed: (backendId: string, capability: string, method: string, field: string) => Effect.Effect<string>
  /** The tools (as listed) and prompts of a ready backend whose descriptions hide characters. */
  readonly hiddenIn: (
    backendId: string,
    tools: ReadonlyArray<{ readonly name: string; readonly description?: string | undefined; readonly inputSchema?: unknown }>
  ) => Effect.Effect<ReadonlyArray<Listing.Hidden>>
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

/** The table of entries, with the hubs it tells and what it tells the team. */
const tableOf = (options: ManagerOptions) =>
  Effect.gen(function* () {
    return new Table(
      options,
      // A Backends used on its own publishes nowhere (the reference's default).
      yield* Events,
      // What its pins and tokens tell the team and ask of it (alone: nobody, every renewal its own).
      { told: (yield* WrittenFiles).wrote, mayRenew: yield* RenewalTurns },
      yield* PubSub.sliding<void>(1),
      yield* PubSub.sliding<BackendNotification>(4_096),
      yield* PubSub.sliding<BackendStatus>(1_024)
    )
  })

/**
 * Starts a backend waiting for its first use (once, however many requests want it: the others
 * wait for the same start) and waits until it is ready or its start failed.
 */
const wakeOf =
  (
    table: Table,
    lock: Semaphore.Semaphore,
    startLifecycle: (entry: Entry, startOptions: StartOptions) => Effect.Effect<Fiber.Fiber<void>>
  ) =>
  (entry: Entry): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (entry.state !== "idle") return Deferred.await(entry.settled)
      const settled = Deferred.makeUnsafe<void>()
      entry.settled = settled
      const previous = entry.fiber
      entry.fiber = undefined
      // Starting from this step on: a request right behind this one waits for the same start.
      const moved = table.moveNow(entry, "starting")
      const fork = lock.withPermits(1)(
        Effect.gen(function* () {
          // Stopped for want of use a moment ago: its process goes first.
          if (previous !== undefined) yield* Fiber.await(previous)
          const startOptions = table.lastStartOptions
          if (table.byId.get(entry.config.id) !== entry || startOptions === undefined || entry.stoppedFor !== undefined) {
            return yield* Deferred.succeed(settled, undefined)
          }
          yield* Effect.logInfo("starting on use", { backend: entry.config.id })
          // Forked from an uninterruptible step: startLifecycle keeps the lifecycle interruptible (a stop).
          entry.fiber = yield* startLifecycle(entry, startOptions)
        })
      )
      return Effect.andThen(Effect.uninterruptible(Effect.andThen(moved, fork)), Deferred.await(settled))
    })

/**
 * Whether the entry waits for its first use: its tools are known from an earlier run (and held
 * against its pins as any listing is), it offers nothing a client lists at the start, and
 * neither it nor the gateway says to start it always. Such an entry is "idle", its tools listed.
 */
const waitsForUse = (table: Table, entry: Entry, startOptions: StartOptions) =>
  Effect.gen(function* () {
    const { config } = entry
    const onUse = startOptions.onUse
    if (onUse === undefined || (config.start ?? onUse.start) !== "onUse") return false
    if (!config.enabled || config.refused !== undefined || config.auth !== undefined) return false
    const known = yield* Effect.annotateLogs(Known.read(onUse.stateDir, config), { backend: config.id })
    if (known === undefined || !Known.mayWait(known)) return false
    entry.onUse = true
    entry.known = known
    yield* table.reviewTools(entry, known.tools, startOptions.pins)
    yield* table.setState(entry, "idle")
    yield* Deferred.succeed(entry.settled, undefined)
    return true
  })

/** What the state machine's moves share. */
interface Moves {
  readonly table: Table
  /** start, apply, restart and stopAll replace or change the set: they must not overlap. */
  readonly lock: Semaphore.Semaphore
  /** Forks an entry's lifecycle in the manager's scope. */
  readonly fork: (entry: Entry, startOptions: StartOptions) => Effect.Effect<Fiber.Fiber<void>>
  /** Stops these entries' lifecycles (and with them their processes), waiting for them. */
  readonly stopEntries: (stopping: ReadonlyArray<Entry>) => Effect.Effect<void>
}

/** A new entry for a configuration, not started. */
const newEntry = (config: BackendConfig) => Effect.map(Deferred.make<void>(), (settled) => Table.entryOf(config, settled))

/** Restarts one backend on request: its lifecycle anew, its restarts counted. */
const restartOf =
  ({ table, lock, fork }: Moves) =>
  (backendId: string) =>
    lock.withPermits(1)(
      Effect.gen(function* () {
        const entry = table.byId.get(backendId)
        const startOptions = table.lastStartOptions
        if (entry === undefined || startOptions === undefined) return "unknown" as const
        if (!entry.config.enabled) return "disabled" as const
        const fiber = entry.fiber
        entry.fiber = undefined
        if (fiber !== undefined) yield* Fiber.interrupt(fiber)
        entry.restarts++
        yield* Effect.logInfo("restarting on request", { backend: backendId })
        entry.fiber = yield* fork(entry, startOptions)
        return "restarting" as const
      })
    )

/**
 * Applies a new set of configurations to the running one: removed and changed backends stopped,
 * new and changed ones started, the others kept (their exposure or description updated).
 */
const applyOf =
  ({ table, lock, fork, stopEntries }: Moves) =>
  (configs: ReadonlyArray<BackendConfig>): Effect.Effect<Applied> =>
    lock.withPermits(1)(
      Effect.gen(function* () {
        const startOptions = table.lastStartOptions
        if (startOptions === undefined) return NOTHING_APPLIED
        const applied = diff(
          table.entries.map((e) => e.config),
          configs
        )
        const stopping = table.entries.filter(
          (e) => applied.removed.includes(e.config.id) || applied.restarted.includes(e.config.id)
        )
        for (const e of stopping) {
          e.stoppedFor = applied.removed.includes(e.config.id)
            ? "backend removed"
            : "backend restarted for a configuration change"
        }
        yield* stopEntries(stopping)
        const fresh: Array<Entry> = []
        const starting: Array<Entry> = []
        for (const config of configs) {
          const entry = table.byId.get(config.id)
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
        table.replaceEntries(fresh)
        for (const entry of starting) entry.fiber = yield* fork(entry, startOptions)
        yield* table.toolsChangedNow
        return applied
      })
    )

/** Replaces the set and forks the lifecycles; returns the entries start() waits for. */
const replaceOf =
  ({ table, lock, fork, stopEntries }: Moves) =>
  (configs: ReadonlyArray<BackendConfig>, startOptions: StartOptions) =>
    lock.withPermits(1)(
      Effect.gen(function* () {
        table.lastStartOptions = startOptions
        yield* stopEntries(table.entries)
        table.replaceEntries(yield* Effect.forEach(configs, newEntry))
        const enabled = yield* Effect.filter(table.entries, (e) =>
          e.config.enabled ? Effect.map(waitsForUse(table, e, startOptions), (waits) => !waits) : Effect.succeed(false)
        )
        yield* table.toolsChangedNow
        for (const entry of enabled) {
          // Starting from this step on, not when its fiber first runs: `settle` right after waits for it.
          yield* table.setState(entry, "starting")
          entry.fiber = yield* fork(entry, startOptions)
        }
        return enabled
      })
    )

/** Replaces the set and waits, up to the start-up timeout, for the backends it started. */
const startOf =
  (replace: ReturnType<typeof replaceOf>) =>
  (configs: ReadonlyArray<BackendConfig>, startOptions: StartOptions): Effect.Effect<void> =>
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

/** Builds the service; its backends live in the current scope. */
export const make = (options: ManagerOptions = {}) =>
  Effect.gen(function* () {
    const policy: RestartPolicy = { ...DEFAULT_RESTART_POLICY, ...options.restart }
    // Lifecycle fibers live in a child scope closed in parallel: stopping N stubborn backends
    // then takes one kill grace, not N.
    const scope = yield* Scope.fork(yield* Effect.scope, "parallel")
    const table = yield* tableOf(options)
    // start and stopAll replace the whole set; they must not overlap.
    const lock = yield* Semaphore.make(1)
    const lifecycleOf = (entry: Entry, startOptions: StartOptions) => Lifecycle.run(table, entry, startOptions, policy)

    // Each user's own connection to a backend that acts as each user (its tools listed by the shared one).
    const lanes = yield* Lanes.make((backendId, subject) =>
      Effect.suspend(() => {
        const entry = table.byId.get(backendId)
        const startOptions = table.lastStartOptions
        if (entry === undefined || startOptions === undefined) {
          return Effect.fail(new BackendError({ backendId, reason: "not_ready", method: "connect", summary: "stopped" }))
        }
        return Effect.annotateLogs(Backend.make(entry.config, { ...table.optionsFor(entry, startOptions), subject }), { subject })
      })
    )
    table.lanes = lanes

    /** Stops these entries' lifecycles (and with them their processes), waiting for them. */
    const stopEntries = (stopping: ReadonlyArray<Entry>) =>
      Effect.suspend(() => {
        const fibers = stopping.flatMap((e) => (e.fiber === undefined ? [] : [e.fiber]))
        for (const e of stopping) e.fiber = undefined
        return (fibers.length === 0 ? Effect.void : Fiber.interruptAll(fibers)).pipe(
          Effect.andThen(Effect.forEach(stopping, (e) => lanes.close(e.config.id), { discard: true })),
          // A lifecycle interrupted before it ever ran never reaches its own `ensuring`: release a
          // start() still waiting for it (a shutdown right behind initialize).
          Effect.andThen(Effect.forEach(stopping, (e) => Deferred.succeed(e.settled, undefined), { discard: true }))
        )
      })

    // Stopped is stopped: a reload after it starts nothing (the next `start` does).
    const stopAll: Effect.Effect<void> = lock.withPermits(1)(
      Effect.suspend(() => {
        table.lastStartOptions = undefined
        return stopEntries(table.entries)
      })
    )

    const moves: Moves = {
      table,
      lock,
      fork: (entry, startOptions) => Effect.forkIn(lifecycleOf(entry, startOptions), scope),
      stopEntries
    }
    const restart = restartOf(moves)
    const apply = applyOf(moves)
    const replace = replaceOf(moves)
    const begin = (configs: ReadonlyArray<BackendConfig>, startOptions: StartOptions): Effect.Effect<void> =>
      Effect.asVoid(replace(configs, startOptions))
    const start = startOf(replace)

    table.wake = wakeOf(table, lock, (entry, startOptions) =>
      Effect.forkIn(Effect.interruptible(lifecycleOf(entry, startOptions)), scope)
    )

    yield* Effect.addFinalizer(() => stopAll)

    const requester: RequesterService = {
      request: (backendId, method, params, subject) => table.request(backendId, method, params, subject)
    }
    return Context.make(Backends, serviceOf(table, { start, begin, stopAll, restart, apply })).pipe(
      Context.add(BackendRequester, requester)
    )
  })

/** The service over the table, with its state machine's moves. */
const serviceOf = (
  table: Table,
  moves: Pick<BackendsService, "start" | "begin" | "stopAll" | "restart" | "apply">
): BackendsService => {
  const knownOf = (backendId: string) => {
    const entry = table.byId.get(backendId)
    return entry?.state === "idle" ? entry.known : undefined
  }
  const lists: Listing.Lists = {
    backend: (backendId) => table.byId.get(backendId)?.backend,
    request: (b, m, p) => table.request(b, m, p),
    known: knownOf
  }
  /** Starting, its tools not listed yet (not one known and starting on use). */
  const unlisted = () => table.entries.filter((e) => e.state === "starting" && !e.onUse)
  const settle = Effect.suspend(() =>
    Effect.forEach(unlisted(), (entry) => table.untilSettled(entry), { concurrency: "unbounded", discard: true })
  ).pipe(Effect.map(() => unlisted().map((e) => e.config.id)))
  const settling = () => {
    const timeoutMs = table.lastStartOptions?.startupTimeoutMs ?? 0
    const now = Date.now()
    return unlisted().some((e) => e.startingSince + timeoutMs > now)
  }
  return {
    ...moves,
    settle,
    settling,
    countListed: (backendId, capability, method, field) => Listing.countListed(lists, backendId, capability, method, field),
    hiddenIn: (backendId, tools) => Listing.hiddenIn(lists, backendId, tools),
    tools: Effect.sync(table.toolsSync),
    toolsSync: table.toolsSync,
    states: Effect.sync(() => table.entries.map(statusOf)),
    backend: (backendId) => table.byId.get(backendId)?.backend,
    startOnUse: (backendId) => {
      const entry = table.byId.get(backendId)
      return entry === undefined ? undefined : table.startOf(entry)
    },
    known: knownOf,
    configOf: (backendId) => table.byId.get(backendId)?.config,
    toolsChanged: Stream.fromPubSub(table.toolsPubSub),
    notifications: Stream.fromPubSub(table.notificationsPubSub),
    relayNotifications: (listener) =>
      Effect.acquireRelease(
        Effect.sync(() => table.listeners.add(listener)),
        () => Effect.sync(() => table.listeners.delete(listener))
      ).pipe(Effect.asVoid),
    serveRequests: (handler) =>
      Effect.acquireRelease(
        Effect.sync(() => (table.requestHandler = handler)),
        () => Effect.sync(() => (table.requestHandler = table.requestHandler === handler ? undefined : table.requestHandler))
      ).pipe(Effect.asVoid),
    statusChanges: Stream.fromPubSub(table.statusPubSub),
    reviewPins: Effect.suspend(() => Effect.forEach(table.entries, (entry) => table.reviewPin(entry), { discard: true }))
  }
}

export class Backends extends Context.Service<Backends, BackendsService>()("mcp-agentify/Backends") {
  /**
   * Requires nothing: processes are spawned with node:child_process (see Backend.ts for why). It
   * also provides the backend layer's internal `BackendRequester`, which only the gateway's
   * forwarder holds (see Requester).
   */
  static readonly layer: Layer.Layer<Backends | BackendRequester> = Layer.effectContext(make())
  /** With a shorter kill grace, a different restart policy, ... (tests, embedders). */
  static readonly layerWith = (options: ManagerOptions): Layer.Layer<Backends | BackendRequester> =>
    Layer.effectContext(make(options))
  /** The same as `layer`: there are no platform services to provide. Kept for symmetry with other Node layers. */
  static readonly layerNode: Layer.Layer<Backends | BackendRequester> = Backends.layer
}
