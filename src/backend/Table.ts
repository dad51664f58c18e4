/**
 * The Backends' table of entries and what it tells: the ready backends' tools (cached until they
 * change), each entry's state as it changes (published), a backend's tools held against their
 * pins, how a backend is made, and a request routed to a backend (or to a user's lane). One table
 * per Backends service, read by its lifecycles (see Lifecycle) and its state machine (Backends).
 */
import type { TokenFiles } from "../auth/Client.js"
import { Deferred, Effect, PubSub } from "effect"
import { availableParallelism } from "node:os"
import { field } from "../json/Json.js"
import type { BackendConfig } from "../config/Config.js"
import { oauthOf, rootsOf } from "../config/Config.js"
import type { EventsService } from "../observability/Events.js"
import type { BackendState, BackendStatus } from "../observability/BackendStatus.js"
import { BackendError } from "../protocol/Errors.js"
import type { Tool } from "../protocol/Mcp.js"
import type * as Backend from "./Backend.js"
import { answerAlone, type BackendRequestHandler, capabilitiesFor } from "./BackendRequests.js"
import { type Entry, notReady, statusOf } from "./Entry.js"
import type { LanesService } from "./Lanes.js"
import * as Pins from "./Pins.js"
import type { RestartPolicy } from "./Restart.js"
import type { StartOptions } from "./StartOptions.js"
import { StartSlots } from "./StartSlots.js"
import type { Exposure } from "../config/Config.js"

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
  /** How many backends start at once (default a few per core, see StartSlots). */
  readonly startSlots?: number | undefined
}

/** Whether the entry's tools are in the catalog: ready, or known and waiting for (or starting on) its first use. */
const listed = (e: Entry): boolean => e.state === "ready" || e.state === "idle" || (e.onUse && e.state === "starting")

export class Table {
  entries: ReadonlyArray<Entry> = []
  byId = new Map<string, Entry>()
  /** What the last `start` was given; undefined before it and after `stopAll`. */
  lastStartOptions: StartOptions | undefined
  requestHandler: BackendRequestHandler | undefined
  readonly listeners = new Set<(notification: BackendNotification) => Effect.Effect<void>>()
  /** Set once the lanes are made (they make their backends from this table). */
  lanes: LanesService | undefined
  /** Starts a backend waiting for its first use and waits for it (set by Backends, see Known). */
  wake: ((entry: Entry) => Effect.Effect<void>) | undefined
  /** Backends starting at once, those a request waits for first (see StartSlots). */
  readonly startSlots: StartSlots
  private toolsCache: ReadonlyArray<BackendTools> | undefined

  constructor(
    readonly options: ManagerOptions,
    readonly events: EventsService | undefined,
    readonly files: TokenFiles,
    readonly toolsPubSub: PubSub.PubSub<void>,
    readonly notificationsPubSub: PubSub.PubSub<BackendNotification>,
    readonly statusPubSub: PubSub.PubSub<BackendStatus>
  ) {
    this.startSlots = new StartSlots(options.startSlots ?? Math.max(2, 4 * availableParallelism()))
  }

  /** The set in force from now on. */
  replaceEntries(entries: ReadonlyArray<Entry>) {
    this.entries = entries
    this.byId = new Map(entries.map((e) => [e.config.id, e]))
  }

  readonly toolsSync = (): ReadonlyArray<BackendTools> => {
    this.toolsCache ??= this.entries.filter(listed).map((e) => ({
      backendId: e.config.id,
      ...(e.config.description === undefined ? {} : { description: e.config.description }),
      tools: e.tools,
      exposure: e.config,
      ...(e.changed.length === 0 ? {} : { changed: e.changed, pinMode: this.lastStartOptions?.pins?.mode }),
      ...(e.pinNotes.length === 0 ? {} : { pinNotes: e.pinNotes })
    }))
    return this.toolsCache
  }

  readonly toolsChangedNow = Effect.suspend(() => {
    this.toolsCache = undefined
    return PubSub.publish(this.toolsPubSub, undefined)
  })

  /** The entry's state from now on, told to whoever watches (and, ready or no longer, its tools' change). */
  setState(entry: Entry, state: BackendState, lastError?: string) {
    return Effect.suspend(() => this.moveNow(entry, state, lastError))
  }

  /**
   * The same, the state changed as this is called (not when the effect runs): for a move that must
   * happen in the same step as what decided it (a start on use, an idle stop).
   */
  moveNow(entry: Entry, state: BackendState, lastError?: string): Effect.Effect<void> {
    const wasListed = listed(entry)
    // Idle after running is an idle stop; idle from anything else is a list remembered, not started.
    if (state === "idle") entry.idleStoppedAt = entry.state === "ready" ? Date.now() : undefined
    if (state === "starting" && entry.state !== "starting") entry.startingSince = Date.now()
    entry.state = state
    if (lastError !== undefined) entry.lastError = lastError
    if (state !== "ready") {
      entry.backend = undefined
      entry.pid = undefined
    }
    return Effect.andThen(
      PubSub.publish(this.statusPubSub, statusOf(entry)),
      wasListed !== listed(entry) || state === "ready" ? this.toolsChangedNow : Effect.void
    )
  }

  /** The entry's state as it is, told again (its tools were listed again). */
  toldAgain(entry: Entry) {
    return Effect.andThen(PubSub.publish(this.statusPubSub, statusOf(entry)), this.toolsChangedNow)
  }

  /**
   * A backend's tools as listed, held against their pins: those it may offer become its tools;
   * a definition that changed since it was pinned is said (once per change) at warn.
   */
  reviewTools(entry: Entry, tools: ReadonlyArray<Tool>, pins: Pins.Settings | undefined) {
    return Effect.suspend(() => {
      const told = pins === undefined ? undefined : { ...pins, told: this.files.told }
      const reviewed = Pins.recheck(told, Pins.serverOf(entry.config), tools, entry.changed)
      entry.tools = reviewed.admitted
      entry.changed = reviewed.changed
      if (reviewed.notes.length > 0) entry.pinNotes = reviewed.notes
      return Effect.forEach(reviewed.warnings, (warning) => Effect.logWarning(warning), { discard: true })
    })
  }

  /** A ready backend's tools held against the pins again; told when what it offers changed. */
  reviewPin(entry: Entry) {
    const { backend, tools: before } = entry
    if (backend === undefined || entry.state !== "ready") return Effect.void
    return Effect.flatMap(this.reviewTools(entry, backend.tools(), this.lastStartOptions?.pins), () =>
      entry.tools.length === before.length && entry.tools.every((tool, i) => tool === before[i])
        ? Effect.void
        : this.toldAgain(entry)
    )
  }

  /** How a backend is made (but for what it does when its tools change). */
  optionsFor(entry: Entry, startOptions: StartOptions): Backend.Options {
    return {
      requestTimeoutMs: startOptions.requestTimeoutMs,
      killGraceMs: this.options.killGraceMs,
      clientInfo: this.options.clientInfo,
      maxFrameBytes: startOptions.maxBackendFrameBytes ?? this.options.maxFrameBytes,
      maxRequestBytes: startOptions.maxBackendRequestBytes,
      events: this.events,
      files: this.files,
      clientCapabilities: capabilitiesFor(entry.config, startOptions.clientCapabilities),
      era: entry.era,
      onRequest: (method, params) => {
        const request = { backendId: entry.config.id, method, params, roots: rootsOf(entry.config) }
        return this.requestHandler === undefined ? answerAlone(request) : this.requestHandler(request)
      },
      onNotification: (method, params) => {
        const notification = { backendId: entry.config.id, method, params }
        return Effect.andThen(
          PubSub.publish(this.notificationsPubSub, notification),
          Effect.forEach([...this.listeners], (listener) => listener(notification), { discard: true })
        )
      }
    }
  }

  /**
   * Any MCP request on a ready backend (or, for `subject` of a `perUser` backend, on that user's
   * lane). Looked up when the effect runs, not when it is built: an effect built before start() or
   * kept across a restart must reach the backend running then.
   */
  request(backendId: string, method: string, params: unknown, subject?: string): Effect.Effect<unknown, BackendError> {
    return Effect.suspend(() => {
      const entry = this.byId.get(backendId)
      if (entry === undefined) {
        return Effect.fail(
          new BackendError({ backendId, reason: "not_found", method, summary: "no backend with this id is configured" })
        )
      }
      if (subject !== undefined && this.lanes !== undefined && entry.config.enabled && oauthOf(entry.config)?.perUser === true) {
        return this.lanes.request(backendId, subject, method, params)
      }
      const start = this.startOf(entry)
      if (start !== undefined) {
        return Effect.andThen(
          start,
          Effect.suspend(() => {
            // A call is judged on the tools the backend lists once started (see the pipeline's
            // `find`); one that reached here without (a relayed request) is held all the same
            // when the backend, started, no longer offers the tool as it was remembered.
            const name = method === "tools/call" ? field(params, "name") : undefined
            if (typeof name === "string" && entry.backend !== undefined && !entry.tools.some((t) => t.name === name)) {
              const held = entry.changed.find((c) => c.name === name)
              return Effect.fail(
                new BackendError({
                  backendId,
                  reason: "call_failed",
                  method,
                  summary:
                    held === undefined ? `its tool ${name} is gone since it was remembered` : Pins.heldBack(backendId, held)
                })
              )
            }
            return this.forward(entry, backendId, method, params)
          })
        )
      }
      // Starting with the others (not on use): the request waits for it within its start-up timeout.
      if (entry.backend === undefined && entry.state === "starting") {
        // Still waiting for a place to start: it goes before those nobody waits for.
        this.startSlots.hurry(entry)
        return Effect.andThen(this.untilSettled(entry), this.forward(entry, backendId, method, params))
      }
      return this.forward(entry, backendId, method, params)
    })
  }

  /**
   * The start a request of this backend waits for, when it waits for its first use (see Known):
   * started once however many wait, waited for within the start-up timeout. Undefined when it
   * runs, or is not one started on use.
   */
  startOf(entry: Entry): Effect.Effect<void> | undefined {
    if (entry.backend !== undefined || this.wake === undefined) return undefined
    if (entry.state !== "idle" && !(entry.onUse && entry.state === "starting")) return undefined
    return Effect.asVoid(this.wake(entry).pipe(Effect.timeoutOption(this.lastStartOptions?.startupTimeoutMs ?? 0)))
  }

  /**
   * Waits until the entry's start settles (ready, failed, backing off), at most until its start-up
   * timeout, counted from when it began starting, has passed.
   */
  untilSettled(entry: Entry): Effect.Effect<void> {
    return Effect.suspend(() => {
      const left = entry.startingSince + (this.lastStartOptions?.startupTimeoutMs ?? 0) - Date.now()
      return left <= 0 ? Effect.void : Effect.asVoid(Effect.timeoutOption(Deferred.await(entry.settled), left))
    })
  }

  /** A request on the entry's running backend, or the entry's state as the error when there is none. */
  private forward(entry: Entry, backendId: string, method: string, params: unknown): Effect.Effect<unknown, BackendError> {
    return Effect.suspend(() => {
      const backend = entry.backend
      if (backend !== undefined) {
        // Counted in the same step as the backend is taken: the idle stop never stops one in use.
        const sent = entry.onUse ? this.used(entry, backend.request(method, params)) : backend.request(method, params)
        // Stopped for good while the call ran (a reload removed it): say so, not "stopped".
        return Effect.catchIf(
          sent,
          (error) => entry.stoppedFor !== undefined && error.reason === "crashed",
          () =>
            Effect.fail(
              new BackendError({ backendId, reason: "crashed", method, summary: `${entry.stoppedFor} during ${method}` })
            )
        )
      }
      // A call to a backend that is not running failed too (the running ones count their own).
      const error = notReady(entry, method)
      if (this.events?.active()) {
        this.events.publish({
          _tag: "BackendCall",
          at: Date.now(),
          backendId,
          method,
          ms: 0,
          outcome: "error",
          detail: error.message
        })
      }
      return Effect.fail(error)
    })
  }

  /** `request` counted as the entry's use while it runs (see Lifecycle's idle stop). */
  private used<A, E>(entry: Entry, request: Effect.Effect<A, E>): Effect.Effect<A, E> {
    entry.inFlight++
    entry.usedAt = Date.now()
    return Effect.ensuring(
      request,
      Effect.sync(() => {
        entry.inFlight--
        entry.usedAt = Date.now()
      })
    )
  }

  /** A new entry for `config`, not started. */
  static entryOf(config: BackendConfig, settled: Entry["settled"]): Entry {
    return {
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
      settled,
      onUse: false,
      known: undefined,
      startingSince: 0,
      usedAt: 0,
      inFlight: 0,
      idleStoppedAt: undefined
    }
  }
}
