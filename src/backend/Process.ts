/**
 * Spawning a backend (or connecting to a remote one) and stopping it: the process group, SIGTERM
 * then SIGKILL after a grace, and the stragglers a backend left behind.
 */
import type { TokenFiles } from "../auth/Client.js"
import { Deferred, Effect, Queue, type Scope } from "effect"
import { spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from "node:child_process"
import { statSync } from "node:fs"
import type { BackendConfig } from "../config/Config.js"
import { backendEnv, oauthOf, transportOf } from "../config/Config.js"
import { BackendError } from "../protocol/Errors.js"
import { type EventsService } from "../observability/Events.js"
import * as Reaper from "./Reaper.js"
import type * as Remote from "./remote/Remote.js"
import { Connection, Inbound, LogLine } from "./Connection.js"
import { isWindows, ProcessChannel, quoteForShell, signalGroup } from "./ProcessChannel.js"

// Spawning and stopping

const spawnFailure = (config: BackendConfig, error: NodeJS.ErrnoException): BackendError => {
  const summary =
    error.code === "ENOENT"
      ? `command not found: ${config.command}`
      : error.code === "EACCES"
        ? `permission denied: ${config.command}`
        : `cannot start ${config.command}: ${error.message}`
  return new BackendError({
    backendId: config.id,
    reason: "crashed",
    method: "spawn",
    summary,
    detail: { code: error.code }
  })
}

const checkCwd = (config: BackendConfig): BackendError | undefined => {
  if (config.cwd === undefined) return undefined
  try {
    if (statSync(config.cwd).isDirectory()) return undefined
  } catch {
    // fall through
  }
  // Node reports a missing cwd as ENOENT of the command, which would mislead.
  return new BackendError({
    backendId: config.id,
    reason: "crashed",
    method: "spawn",
    summary: `working directory not found: ${config.cwd}`
  })
}

/** Opens a backend's connection: a child process (`spawnConnection`) or a remote link (`connectRemote`). */
type Open = (
  config: BackendConfig,
  maxFrameBytes: number,
  logs: Queue.Queue<LogLine>,
  inbound: Queue.Queue<Inbound>,
  events: EventsService | undefined,
  /** A remote backend's connection for one user of a `perUser` backend (see Lanes): their tokens only. */
  subject?: string | undefined,
  /** What its tokens tell the team and ask of it; none: alone. */
  files?: TokenFiles | undefined
) => Effect.Effect<Connection, BackendError, Scope.Scope>

/** A child spawned with its three pipes (a failed spawn leaves them missing: null, or undefined under EMFILE). */
const hasPipes = (child: ChildProcess): child is ChildProcessWithoutNullStreams =>
  Boolean(child.stdin) && Boolean(child.stdout) && Boolean(child.stderr)

export const spawnConnection: Open = (config, maxFrameBytes, logs, inbound, events) =>
  Effect.callback<Connection, BackendError>((resume) => {
    const cwdProblem = checkCwd(config)
    if (cwdProblem !== undefined) return resume(Effect.fail(cwdProblem))
    const tag = Reaper.newTag()
    let child: ChildProcess
    try {
      // A backend without a command is refused when configured; "" fails here like any bad command.
      const given = config.command ?? ""
      const command = isWindows ? quoteForShell(given) : given
      const args = isWindows ? config.args.map(quoteForShell) : config.args
      child = spawn(command, args, {
        stdio: ["pipe", "pipe", "pipe"],
        // The gateway's environment minus its own settings and secrets, plus the backend's `env`,
        // plus the marker that finds the tree wherever it goes (see Reaper).
        env: { ...backendEnv(config), ...Reaper.markerEnv(tag) },
        ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
        // Its own process group, so the whole tree (npx starts a child of its own) can be signalled.
        detached: !isWindows,
        // `npx` and other `.cmd` shims only run through a shell on Windows.
        shell: isWindows,
        windowsHide: true
      })
    } catch (error) {
      return resume(Effect.fail(spawnFailure(config, error as NodeJS.ErrnoException)))
    }
    // The error listener goes on first: a failed spawn (EMFILE, ENOENT, ...) is emitted on the next
    // tick, and it leaves the stdio streams missing, so nothing else may touch them before.
    let connection: Connection | undefined
    const onError = (error: NodeJS.ErrnoException) => {
      child.off("spawn", onSpawn)
      child.on("error", () => {})
      connection?.dispose()
      resume(Effect.fail(spawnFailure(config, error)))
    }
    const onSpawn = () => {
      child.off("error", onError)
      child.on("error", () => {})
      if (child.pid !== undefined) Reaper.track(child.pid)
      if (connection !== undefined) resume(Effect.succeed(connection))
    }
    child.once("error", onError)
    child.once("spawn", onSpawn)
    if (!hasPipes(child)) return
    const piped = child
    // Listeners go on before anything can be emitted: an early exit must not be missed.
    connection = new Connection(
      config.id,
      maxFrameBytes,
      logs,
      inbound,
      events,
      (receiver) => new ProcessChannel(piped, tag, maxFrameBytes, receiver)
    )
  })

/**
 * The remote transports (with `ws`) and the OAuth client (with `openid-client`) load with the first
 * remote backend: a run without one never reads them.
 */
const loadRemote = Effect.promise(() => Promise.all([import("./remote/Remote.js"), import("../auth/Client.js")]))

/**
 * Opens a remote backend's channel (see remote/): its failure is retried with backoff like a crash.
 * The channel's own work (its event stream, its posts) runs in the backend's scope.
 */
export const connectRemote: Open = (config, maxFrameBytes, logs, inbound, events, subject, files) =>
  Effect.flatMap(loadRemote, ([Remote, OAuth]) =>
    Effect.flatMap(Remote.runner, (runner) => {
      // A remote backend is one configured with a url (see Backend's `Open`).
      const url = config.url ?? ""
      let channel: Remote.RemoteChannel | undefined
      // OAuth for a backend configured for it, or one with no Authorization header of its own (its
      // 401 may name an authorization server; a token stored for it by `auth` is used).
      const ownAuthorization = Object.keys(config.headers ?? {}).some((h) => h.toLowerCase() === "authorization")
      const settings = oauthOf(config)
      const tokens =
        settings !== undefined || !ownAuthorization
          ? new OAuth.BackendTokens(config.id, url, settings, undefined, subject, files)
          : undefined
      const connection = new Connection(config.id, maxFrameBytes, logs, inbound, events, (receiver) => {
        channel = Remote.open(
          {
            url,
            transport: transportOf(config) as Remote.Transport,
            headers: config.headers ?? {},
            maxFrameBytes,
            tokens
          },
          receiver,
          runner
        )
        return channel
      })
      const opened = channel
      if (opened === undefined) return Effect.die(new Error("the remote backend's channel was not opened"))
      return opened.connect.pipe(
        Effect.mapError(
          (error) =>
            new BackendError({
              backendId: config.id,
              reason: "crashed",
              method: "connect",
              summary: `${opened.address} ${error.message}`
            })
        ),
        Effect.tapError(() => Effect.sync(() => opened.abort())),
        Effect.as(connection)
      )
    })
  )

const GROUP_POLL_MS = 20

/**
 * Waits for the leader's exit, at most `ms`. Finalizers are uninterruptible, and a timeout cannot
 * interrupt an uninterruptible wait (it would wait for it), hence `interruptible`.
 */
const awaitExit = (connection: Connection, ms: number) =>
  Deferred.await(connection.leaderExited).pipe(Effect.interruptible, Effect.timeoutOption(ms))

/**
 * Stops the process tree: stdin closed and SIGTERM to the group, up to `graceMs` for the leader
 * and every other member to exit, then SIGKILL to the group. Never fails, never hangs.
 */
export const terminate = (connection: Connection, graceMs: number): Effect.Effect<void> =>
  Effect.gen(function* () {
    connection.closing = true
    const pgid = connection.pid
    if (pgid === undefined) {
      // A remote server: its session is ended and the link closed; nothing to signal.
      connection.channel.abort()
      yield* awaitExit(connection, graceMs)
      return connection.dispose()
    }
    connection.endStdin()
    if (!connection.hasExited || Reaper.groupAlive(pgid)) {
      signalGroup(pgid, "SIGTERM")
      const deadline = Date.now() + graceMs
      yield* awaitExit(connection, graceMs)
      while (Reaper.groupAlive(pgid) && Date.now() < deadline) yield* Effect.sleep(GROUP_POLL_MS)
      if (!connection.hasExited || Reaper.groupAlive(pgid)) {
        yield* Effect.logWarning(`still running ${graceMs} ms after SIGTERM; sending SIGKILL`)
        signalGroup(pgid, "SIGKILL")
        yield* awaitExit(connection, 2_000)
      }
    }
    yield* stopStragglers(connection.channel.tag, graceMs)
    Reaper.untrack(pgid)
    connection.dispose()
  }).pipe(Effect.annotateLogs({ backend: connection.backendId, pid: connection.pid }))

/**
 * Processes of the tree that left its process group (`setsid`, `detached`) and so outlived the
 * group's signals: found by their marker (Linux), sent SIGTERM, then SIGKILL after the grace.
 */
const stopStragglers = (tag: string, graceMs: number) =>
  Effect.gen(function* () {
    let left = Reaper.taggedProcesses(tag)
    if (left.length === 0) return
    yield* Effect.logDebug(`stopping ${left.length} processes that left the backend's process group`, { pids: left })
    Reaper.signalAll(left, "SIGTERM")
    const deadline = Date.now() + graceMs
    while (left.length > 0 && Date.now() < deadline) {
      yield* Effect.sleep(GROUP_POLL_MS)
      left = Reaper.taggedProcesses(tag)
    }
    if (left.length > 0) Reaper.signalAll(left, "SIGKILL")
  })
