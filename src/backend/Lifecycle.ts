/**
 * One backend's life in the Backends' table: started, ready, watched (its exit, its heartbeat),
 * restarted with backoff after a crash or a failed start (see Restart), waiting for a person to
 * sign in when it needs auth, given up on after too many failures in a row. Each start takes a
 * start slot (see StartSlots); one on use, which a request waits for, goes first and is given up at
 * `startupTimeoutMs` as a failed start. Runs in its own fiber
 * until interrupted (stopped, removed, restarted on request); each run of the process in a scope
 * of its own.
 */
import { Deferred, Duration, Effect, Pull, Schedule } from "effect"
import * as Store from "../auth/Store.js"
import { describeBackend, healthCheckOf } from "../config/Config.js"
import * as Logging from "../observability/Logging.js"
import { BackendError } from "../protocol/Errors.js"
import { field } from "../json/Json.js"
import * as Backend from "./Backend.js"
import { needsAuthOf } from "./Channel.js"
import type { Entry } from "./Entry.js"
import * as Known from "./Known.js"
import * as Listing from "./Listing.js"
import type * as Mcp from "../protocol/Mcp.js"
import * as Heartbeat from "./Heartbeat.js"
import { type RestartPolicy, restartDelays } from "./Restart.js"
import type { StartOptions } from "./StartOptions.js"
import type { Table } from "./Table.js"

/**
 * What it lists, remembered for the next run (see Known), when anything is remembered at all: its
 * tools, and the resources, templates and prompts it offers. A list it fails to give leaves it
 * unremembered (it then starts at the next `initialize`, as one never seen).
 */
const remember = (table: Table, entry: Entry, backend: Backend.Backend, startOptions: StartOptions) =>
  Effect.gen(function* () {
    if (startOptions.onUse === undefined) return
    const lists: { -readonly [K in keyof Known.Lists]: Known.Lists[K] } = {}
    for (const { capability, method, list } of Known.LISTED) {
      if (typeof backend.serverCapabilities[capability] !== "object") continue
      const read = (_: string, m: string, params: unknown) => backend.request(m, params)
      const items = yield* Effect.option(Listing.readAll(read, entry.config.id, method, list))
      if (items._tag === "None") return
      lists[list] = items.value
    }
    const known = { tools: backend.tools(), capabilities: backend.serverCapabilities, lists }
    // What it offers after an idle stop is what it offered last.
    entry.known = { capabilities: Object.keys(backend.serverCapabilities), lists }
    yield* Known.write(startOptions.onUse.stateDir, entry.config, known, table.files.told)
  })

/**
 * How long a backend started on use may go unused, or undefined when it stays: one that holds
 * something a stop would lose (a connection's state it declares it needs, resources or prompts a
 * client may hold, tasks) stays once started.
 */
const idleMsOf = (entry: Entry, backend: Backend.Backend, startOptions: StartOptions): number | undefined => {
  if (!entry.onUse || startOptions.onUse === undefined || entry.config.requiresStatefulConnection === true) return undefined
  if (Known.staysOnceStarted(Object.keys(backend.serverCapabilities))) return undefined
  return entry.config.idleMs ?? startOptions.onUse.idleMs
}

/**
 * Completes when the backend has served nothing for `idleMs`, having taken it out of the table in
 * the same step (a request then starts it afresh, see Table's `request`).
 */
const idle = (table: Table, entry: Entry, idleMs: number) =>
  Effect.gen(function* () {
    while (true) {
      const quietFor = Date.now() - entry.usedAt
      yield* Effect.sleep(Duration.millis(Math.max(idleMs - quietFor, 50)))
      // Decided and taken out of the table in one step: no request can take it in between.
      const stopped = yield* Effect.suspend(() =>
        entry.inFlight > 0 || Date.now() - entry.usedAt < idleMs
          ? Effect.succeed(false)
          : Effect.as(table.moveNow(entry, "idle"), true)
      )
      if (stopped) return yield* Effect.logInfo(`stopped: unused for ${idleMs} ms; it starts again on its next use`)
    }
  })

/**
 * The tools it listed, those the same as remembered kept as the very objects the catalog holds: a
 * backend started on use that lists what was known changes nothing a session sees (the catalog
 * tells tools apart by identity), so nobody is told its list changed.
 */
const asKnown = (entry: Entry, listed: ReadonlyArray<Mcp.Tool>): ReadonlyArray<Mcp.Tool> => {
  const known = new Map(entry.tools.map((tool) => [tool.name, tool]))
  return listed.map((tool) => {
    const same = known.get(tool.name)
    return same !== undefined && JSON.stringify(same) === JSON.stringify(tool) ? same : tool
  })
}

/**
 * A start on use given up at `startupTimeoutMs` (hanging at its `initialize` or its first listing):
 * it fails as any failed start does, and the run's scope, closing, stops its process.
 */
const boundedStart = <A, R>(entry: Entry, startupTimeoutMs: number, start: Effect.Effect<A, BackendError, R>) =>
  Effect.timeoutOrElse(start, {
    duration: Duration.millis(startupTimeoutMs),
    orElse: () =>
      Effect.fail(
        new BackendError({
          backendId: entry.config.id,
          reason: "timeout",
          method: "initialize",
          summary: `did not finish starting within startupTimeoutMs (${startupTimeoutMs} ms)`
        })
      )
  })

/** One run of the process: start, be ready, wait for the exit. Fails if it never became ready. */
const runOnce = (table: Table, entry: Entry, startOptions: StartOptions) =>
  Effect.scoped(
    Effect.gen(function* () {
      const make = Backend.make(entry.config, {
        ...table.optionsFor(entry, startOptions),
        onToolsChanged: (tools) =>
          Effect.suspend(() => {
            if (entry.backend !== backend) return Effect.void
            const said = table.reviewTools(entry, tools, startOptions.pins)
            return Effect.andThen(
              Effect.andThen(said, Effect.logInfo(`tools changed: ${tools.length} tools`)),
              Effect.andThen(table.toldAgain(entry), remember(table, entry, backend, startOptions))
            )
          })
      })
      const backend: Backend.Backend = yield* table.startSlots.with(
        // Started on use, a request waits for it: it goes before the starts nobody waits for.
        entry.onUse,
        startOptions.startupTimeoutMs,
        entry.onUse ? boundedStart(entry, startOptions.startupTimeoutMs, make) : make,
        entry
      )
      entry.backend = backend
      entry.pid = backend.pid
      entry.protocolVersion = backend.protocolVersion
      entry.era = backend.era
      yield* table.reviewTools(entry, entry.onUse ? asKnown(entry, backend.tools()) : backend.tools(), startOptions.pins)
      entry.lastError = undefined
      yield* table.setState(entry, "ready")
      yield* Effect.logInfo(`backend ready: ${backend.address}, protocol ${backend.protocolVersion}, ${entry.tools.length} tools`)
      yield* Deferred.succeed(entry.settled, undefined)
      yield* remember(table, entry, backend, startOptions)
      const readyAt = Date.now()
      entry.usedAt = readyAt
      const check = healthCheckOf(entry.config)
      const exited = check === undefined ? backend.exited : Effect.raceFirst(backend.exited, Heartbeat.watch(backend, check))
      const idleMs = idleMsOf(entry, backend, startOptions)
      const ended =
        idleMs === undefined ? exited : Effect.raceFirst(exited, Effect.as(idle(table, entry, idleMs), "idle" as const))
      const exit = yield* ended
      return { exit, readyMs: Date.now() - readyAt }
    })
  )

/** A person must sign in first: said once, then it waits for the token, not the backoff. */
const waitForSignIn = (table: Table, entry: Entry, detail: unknown, summary: string) =>
  Effect.gen(function* () {
    // Its own words ("needs auth: no token yet; run `mcp-agentify auth linear`"), not the handshake's.
    const said = field(detail, "message")
    const lastError = typeof said === "string" ? said : summary
    yield* Effect.logWarning(`backend ${lastError}`)
    yield* table.setState(entry, "needs auth", lastError)
    yield* Deferred.succeed(entry.settled, undefined)
    yield* Store.written(Store.directory(), entry.config.id)
    yield* Effect.logInfo("a token was stored: starting again")
    yield* table.setState(entry, "starting")
  })

/** Runs the backend until interrupted, restarting it as `policy` says. */
export const run = (table: Table, entry: Entry, startOptions: StartOptions, policy: RestartPolicy): Effect.Effect<void> =>
  Effect.gen(function* () {
    const { config } = entry
    let failures = 0
    if (config.refused !== undefined) {
      // Said once: the configuration's own warning may have said it already.
      if (Logging.firstTime(config.refused)) yield* Effect.logError(`backend not started: ${config.refused}`)
      return yield* table.setState(entry, "failed", config.refused)
    }
    yield* Effect.logInfo("starting backend", describeBackend(config))
    // Said once: a start at `start` is "starting" from the step that forked it.
    if (entry.state !== "starting") yield* table.setState(entry, "starting")
    // The waits between restarts, stepped by hand: a fresh step function starts the backoff afresh.
    let restarts = yield* Schedule.toStep(restartDelays(policy))
    while (true) {
      const outcome = yield* Effect.result(runOnce(table, entry, startOptions))
      let lastError: string
      if (outcome._tag === "Failure") {
        lastError = outcome.failure.summary
        if (needsAuthOf(outcome.failure.detail)) {
          yield* waitForSignIn(table, entry, outcome.failure.detail, lastError)
          continue
        }
        // A server that died of server/discover is of the session era: its restart does not ask again.
        if (outcome.failure.method === "server/discover" && config.url === undefined) entry.era = "session"
        if (Backend.isPermanentFailure(outcome.failure)) {
          yield* Effect.logError(`backend failed: ${lastError}`)
          return yield* table.setState(entry, "failed", lastError)
        }
      } else if (outcome.success.exit === "idle") {
        // Stopped for want of use: it waits, as its tools are known, for the next one.
        return
      } else {
        lastError = outcome.success.exit.description
        if (outcome.success.readyMs >= policy.healthyAfterMs) {
          failures = 0
          restarts = yield* Schedule.toStep(restartDelays(policy))
        }
      }
      failures++
      if (!config.restartOnCrash) {
        yield* Effect.logError(`backend failed: ${lastError} (restartOnCrash is off)`)
        return yield* table.setState(entry, "failed", lastError)
      }
      if (failures >= policy.maxConsecutiveFailures) {
        const gaveUp = `${lastError} (gave up after ${failures} consecutive failures)`
        yield* Effect.logError(`backend failed: ${gaveUp}`)
        return yield* table.setState(entry, "failed", gaveUp)
      }
      const what = outcome._tag === "Failure" ? "could not start" : "crashed"
      // The schedule never ends (no `Done`): its output is the wait it is about to take.
      const [, delay] = yield* restarts(Date.now(), undefined).pipe(
        Pull.catchDone(() => Effect.succeed([Duration.zero, Duration.zero] as const))
      )
      // Said and shown before the wait.
      yield* Effect.logWarning(`backend ${what}: ${lastError}; restarting in ${Duration.toMillis(delay)} ms`)
      yield* table.setState(entry, "restarting", lastError)
      // start() does not wait through backoff: the backend shows up later via toolsChanged.
      yield* Deferred.succeed(entry.settled, undefined)
      yield* Effect.sleep(delay)
      entry.restarts++
    }
  }).pipe(
    Effect.catchCause((cause) =>
      Effect.andThen(Effect.logError("backend lifecycle failed", cause), table.setState(entry, "failed", "internal error"))
    ),
    Effect.onInterrupt(() => Effect.andThen(table.setState(entry, "stopped"), Effect.logInfo("backend stopped"))),
    Effect.ensuring(Deferred.succeed(entry.settled, undefined)),
    Effect.annotateLogs({ backend: entry.config.id })
  )
