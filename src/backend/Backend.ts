/**
 * One backend: an MCP server run as a child process, and the MCP client session the gateway holds
 * with it over the process's stdio (newline-delimited JSON-RPC).
 *
 * `make` is a scoped resource: it spawns the process, runs the handshake (`server/discover` for a
 * 2026-07-28 server, else `initialize` with version fallback and `notifications/initialized`; then
 * `tools/list`) and returns a `Backend`; closing the scope stops the process and every process it
 * started. Every request is sent in the backend's era (see `paramsFor`).
 *
 * Why raw `node:child_process` inside `Effect.acquireRelease` and not @effect/platform's `Command`:
 * - The hot path stays synchronous. A reply is parsed in the stdout `data` callback and resumes
 *   the waiting fiber directly from a Map of pending ids; a request is one `stdin.write` of a
 *   whole frame. `Command` gives stdout as a Stream and stdin as a Sink, which puts a stream
 *   pipeline and a writer fiber on every call (the gateway has a budget of 0.3 ms per call).
 * - Exit codes and signals arrive as values (`exit` gives both), spawn errors as errno codes;
 *   `Command` reports a signal as a PlatformError message.
 * - `Command`'s finalizer waits forever for a child that ignores SIGTERM, and leaves the process
 *   group alone when the leader exited with 0, so the kill path had to be ours anyway; here it
 *   lives in one place (`terminate`).
 * - No `CommandExecutor`/`FileSystem` requirement leaks into the layers above.
 *
 * Frames never interleave: a frame is written with a single `write` call on the one stdin
 * Writable, which queues whole chunks in order; that Writable is the single writer.
 */
import { Cause, Deferred, Effect, Exit, FiberId, FiberSet, Option, Queue, type Scope } from "effect"
import { spawn, spawnSync, type ChildProcess } from "node:child_process"
import { statSync } from "node:fs"
import type { BackendConfig } from "../config/Config.js"
import { backendEnv, DEFAULT_MAX_BACKEND_FRAME_BYTES, DEFAULT_REQUEST_TIMEOUT_MS, transportOf } from "../config/Config.js"
import { BackendError, ErrorCode, type RpcError } from "../protocol/Errors.js"
import { type EventsService, none as noEvents } from "../observability/Events.js"
import {
  classify,
  encode,
  encodeNotification,
  encodeRequest,
  failure,
  type Frame,
  FrameDecoder,
  type Id,
  idOfDropped,
  isId,
  type Response,
  success
} from "../jsonrpc/JsonRpc.js"
import * as Mcp from "../protocol/Mcp.js"
import * as Reaper from "./Reaper.js"
import * as Remote from "./Remote.js"
import * as Secrets from "../observability/Secrets.js"
import * as Telemetry from "../observability/Telemetry.js"

// ---------------------------------------------------------------------------------------------
// Public shapes

export interface ClientInfo {
  readonly name: string
  readonly version: string
}

export const DEFAULT_CLIENT_INFO: ClientInfo = Mcp.IMPLEMENTATION
export const DEFAULT_KILL_GRACE_MS = 2_000

export interface Options {
  /** The default per-request timeout (the backend's own `requestTimeoutMs` wins). */
  readonly requestTimeoutMs?: number | undefined
  /** How long a process has to exit after SIGTERM before its group gets SIGKILL. */
  readonly killGraceMs?: number | undefined
  readonly clientInfo?: ClientInfo | undefined
  /**
   * A stdout line longer than this is dropped and the call it answers fails (a backend must not be
   * able to exhaust memory). The backend's own `maxFrameBytes` wins.
   */
  readonly maxFrameBytes?: number | undefined
  /** Backend notifications other than `tools/list_changed` (progress, message, ...). */
  readonly onNotification?: ((method: string, params: unknown) => Effect.Effect<void>) | undefined
  /** Where every message to and from the backend is published (the debug UI, tracing). */
  readonly events?: EventsService | undefined
  /** After the backend said its tools changed and they were listed again. */
  readonly onToolsChanged?: ((tools: ReadonlyArray<Mcp.Tool>) => Effect.Effect<void>) | undefined
  /**
   * "session": speak the session era (`initialize`) without asking; otherwise (default "auto")
   * `server/discover` first, the stateless era (2026-07-28) if it answers with it, `initialize` if not.
   */
  readonly era?: Era | undefined
  /** The client capabilities declared in `initialize` (what `onRequest` can answer). */
  readonly clientCapabilities?: Readonly<Record<string, unknown>> | undefined
  /**
   * Answers the backend's own requests other than `ping` (`roots/list`, `sampling/createMessage`,
   * `elicitation/create`); its failure is the error reply. Interrupted when the backend cancels
   * the request. Without it they get -32601.
   */
  readonly onRequest?: ((method: string, params: unknown) => Effect.Effect<unknown, RpcError>) | undefined
}

export interface ExitInfo {
  readonly code: number | null
  readonly signal: string | null
  /** "exited with code 1", "killed by SIGKILL", "stopped" (the gateway stopped it). */
  readonly description: string
}

export interface RequestOptions {
  readonly timeoutMs?: number | undefined
}

export type Era = "auto" | "stateless" | "session"

/**
 * A request's params in the backend's era: a stateless backend gets the era's `_meta` (the caller's
 * client capabilities kept when it gave them); a session-era backend never sees those keys.
 */
const paramsFor = (
  stateless: boolean,
  params: unknown,
  capabilities: Readonly<Record<string, unknown>>,
  clientInfo: ClientInfo
): unknown => {
  const p = (typeof params === "object" && params !== null ? params : undefined) as Record<string, unknown> | undefined
  const meta = p?._meta as Record<string, unknown> | undefined
  if (!stateless) {
    if (meta === undefined || typeof meta !== "object" || meta === null) return params
    let foreign = false
    for (const key in meta) if (key.startsWith(Mcp.META_PREFIX)) foreign = true
    if (!foreign) return params
    const kept = Object.fromEntries(Object.entries(meta).filter(([key]) => !key.startsWith(Mcp.META_PREFIX)))
    const { _meta: _dropped, ...rest } = p!
    return Object.keys(kept).length === 0 ? rest : { ...rest, _meta: kept }
  }
  return {
    ...p,
    _meta: {
      [Mcp.Meta.clientCapabilities]: capabilities,
      ...meta,
      [Mcp.Meta.protocolVersion]: Mcp.STATELESS_PROTOCOL_VERSION,
      [Mcp.Meta.clientInfo]: clientInfo
    }
  }
}

export interface Backend {
  readonly id: string
  /** Undefined for a remote server. */
  readonly pid: number | undefined
  /** "pid 1234", or a remote server's URL (without credentials or query). */
  readonly address: string
  /** "2026-07-28" for a stateless backend. */
  readonly protocolVersion: string
  /** The era it speaks (never "auto"). */
  readonly era: Exclude<Era, "auto">
  readonly serverInfo: unknown
  readonly serverCapabilities: Readonly<Record<string, unknown>>
  readonly instructions: string | undefined
  /** The tools as last listed (kept up to date on `notifications/tools/list_changed`). */
  readonly tools: () => ReadonlyArray<Mcp.Tool>
  /** Any request; the result passes through unchanged. */
  readonly request: (method: string, params?: unknown, options?: RequestOptions) => Effect.Effect<unknown, BackendError>
  readonly notify: (method: string, params?: unknown) => Effect.Effect<void>
  readonly listTools: Effect.Effect<ReadonlyArray<Mcp.Tool>, BackendError>
  readonly callTool: (
    name: string,
    args: unknown,
    options?: RequestOptions & { readonly meta?: Readonly<Record<string, unknown>> | undefined }
  ) => Effect.Effect<unknown, BackendError>
  readonly ping: Effect.Effect<void, BackendError>
  /** When it last sent a message, and when a call to it last timed out (ms since the epoch; 0 never). */
  readonly activity: () => { readonly heardAt: number; readonly timedOutAt: number }
  /**
   * A heartbeat: `ping` (a stateless backend: `server/discover`), "silent" when no answer comes
   * within `timeoutMs`. Any answer, an error included (-32601 from a server without `ping`), is life.
   */
  readonly probe: (timeoutMs: number) => Effect.Effect<"alive" | "silent">
  /** Succeeds when the process has exited, with why. */
  readonly exited: Effect.Effect<ExitInfo>
  readonly isRunning: () => boolean
}

/**
 * A failure that retrying cannot fix: the process could not be started at all (command or working
 * directory missing, permission denied), or it refused `initialize` (no protocol version we
 * support, credentials refused). A remote server that cannot be reached is retried.
 */
export const isPermanentFailure = (error: BackendError): boolean =>
  error.method === "spawn" ||
  // A remote server that is overloaded or restarting (HTTP 5xx, 429) may answer the next time.
  (error.method === "initialize" && error.reason === "call_failed" && !/HTTP (5\d\d|429)/.test(error.summary))

// ---------------------------------------------------------------------------------------------
// Process

const isWindows = process.platform === "win32"

/** A line a synchronous callback wants logged; a fiber logs them so callbacks never block. */
interface LogLine {
  readonly level: "debug" | "warn"
  readonly message: string
  readonly stream?: "stderr" | "stdout"
}

interface Pending {
  readonly resume: (exit: Exit.Exit<unknown, BackendError>) => void
  readonly timer: ReturnType<typeof setTimeout>
  readonly method: string
  readonly timeoutMs: number
  /** Its reply waits for the notifications the backend sent before it (see `orderedRequest`). */
  readonly ordered: boolean
}

type Inbound =
  { readonly _tag: "Notification"; readonly method: string; readonly params: unknown } | { readonly _tag: "ToolsChanged" }

const MAX_LOGGED_LINE = 2_000
/** A stderr line without a newline is logged in pieces of about this size. */
const STDERR_FLUSH_CHARS = 16_384
const STDERR_TAIL_LINES = 8
/**
 * What may wait to be written to a backend at once, whatever its pace: a memory bound, four times
 * the default frame limit, so that one large request never makes concurrent calls fail. A frame
 * is always accepted when nothing waits.
 */
export const MAX_QUEUED_BYTES = 64 * 1024 * 1024
/**
 * A backend that has taken none of the bytes waiting for it for this long is not reading its
 * input: calls fail at once (-32004) rather than queue behind it. Judged by progress, not size:
 * a backend draining a large request slowly is busy, not stuck.
 */
export const STALLED_AFTER_MS = 5_000
/** Large writes go in slices of this size, so that progress shows while a long frame drains. */
const WRITE_SLICE_BYTES = 256 * 1024
/** A backend whose stdout ended and that has not exited after this long is treated as dead. */
const STDOUT_CLOSED_GRACE_MS = 200
/** After `exit`, how long buffered stdout/stderr may still be read when the pipes stay open (a grandchild holds them). */
const EXIT_DRAIN_MS = 50

const describeExit = (code: number | null, signal: string | null): string =>
  code !== null ? `exited with code ${code}` : `killed by ${signal ?? "an unknown signal"}`

const quoteForShell = (arg: string): string => (/[\s"&|<>^]/.test(arg) ? `"${arg.replace(/"/g, '""')}"` : arg)

/**
 * The process and its JSON-RPC connection. Plain mutable state: every callback runs on the one JS
 * thread, and the hot path must not allocate fibers.
 */
class Connection {
  readonly pending = new Map<number, Pending>()
  nextId = 1
  /** Set at the process's `exit`; requests fail at once from then on. */
  exitInfo: ExitInfo | undefined = undefined
  /** Completed once buffered output was read after the exit (or `EXIT_DRAIN_MS` later). */
  readonly exitDeferred = Deferred.unsafeMake<ExitInfo>(FiberId.none)
  /** Completed at the raw `exit` event, for the kill path. */
  readonly leaderExited = Deferred.unsafeMake<void>(FiberId.none)
  /** The gateway is stopping it: failures read "stopped", not "killed by SIGTERM". */
  closing = false
  /** Until the session is ready, crash errors carry the stderr tail (why start-up failed). */
  starting = true
  /**
   * Notifications received, and relayed by the session's relay fiber: a reply waits for those
   * the backend sent before it (see `orderedRequest`), so a client sees a call's progress before its result.
   */
  notificationsReceived = 0
  notificationsRelayed = 0
  private readonly relayWaiters = new Set<{ readonly upTo: number; readonly resume: () => void }>()
  private relayStopped = false
  droppedLogLines = 0
  private stdinOpen = true
  private readonly decoder: FrameDecoder
  /** Set when the backend closed its stdout while still running: it can never answer again. */
  private deafSince: number | undefined = undefined
  private stderrBuffer = ""
  private readonly stderrTail: Array<string> = []
  private warnedJunk = false

  constructor(
    /** The process, or a remote server's link that looks like one (see Remote). */
    readonly child: ChildProcess | Remote.Link,
    readonly backendId: string,
    /** The marker of this process tree (see Reaper). */
    readonly tag: string,
    private readonly maxFrameBytes: number,
    private readonly logs: Queue.Queue<LogLine>,
    private readonly inbound: Queue.Queue<Inbound>,
    private readonly events: EventsService = noEvents
  ) {
    this.decoder = new FrameDecoder(maxFrameBytes, "ndjson")
    child.stderr!.setEncoding("utf8")
    child.stdout!.on("data", this.onStdout)
    child.stdout!.on("end", this.onStdoutEnd)
    // Always drained, whatever it writes: a full stderr pipe would block the backend.
    child.stderr!.on("data", this.onStderr)
    child.stdin!.on("error", this.onStdinError)
    child.stdout!.on("error", () => {})
    child.stderr!.on("error", () => {})
    child.on("exit", this.onExit)
  }

  /** Undefined for a remote server. */
  get pid(): number | undefined {
    return this.child.pid
  }

  get remote(): Remote.Link | undefined {
    return this.child instanceof Remote.Link ? this.child : undefined
  }

  private log(line: LogLine) {
    if (!Queue.unsafeOffer(this.logs, line)) this.droppedLogLines++
  }

  // -- writing

  /**
   * "stalled": bytes wait and the backend has taken none for `STALLED_AFTER_MS`; "full": taking
   * this frame would hold more than `MAX_QUEUED_BYTES` for it.
   */
  write(frame: string, force = false): "ok" | "closed" | "full" | "stalled" {
    if (!this.stdinOpen || this.exitInfo !== undefined || this.deafSince !== undefined) return "closed"
    if (this.events.active()) this.trace("out", frame)
    const queued = this.child.stdin!.writableLength + this.outgoingBytes
    // Nothing was waiting: the backend's clock starts now (time with nothing to read is no stall).
    if (queued === 0) this.drainedAt = Date.now()
    else if (!force) {
      if (Date.now() - this.drainedAt > STALLED_AFTER_MS) return "stalled"
      if (queued + frame.length > MAX_QUEUED_BYTES) return "full"
    }
    // Frames written in the same tick leave together, joined into one write: under load that is
    // one syscall (and one wake-up of the backend) for many requests, not one each.
    this.outgoing.push(frame)
    this.outgoingBytes += frame.length
    if (this.outgoing.length === 1) process.nextTick(this.flush)
    return "ok"
  }

  /** Publishes one message (parsed only when someone listens). */
  private trace(direction: "in" | "out", frame: string | unknown) {
    let message = frame
    if (typeof frame === "string") {
      try {
        message = JSON.parse(frame)
      } catch {
        message = frame
      }
    }
    this.events.publish({ _tag: "BackendMessage", at: Date.now(), backendId: this.backendId, direction, message })
  }

  private outgoing: Array<string> = []
  private outgoingBytes = 0
  /** When the backend last took bytes from its input, or when bytes began to wait for it. */
  private drainedAt = Date.now()
  private onWritten = (error?: Error | null) => {
    if (error === undefined || error === null) this.drainedAt = Date.now()
  }
  private flush = () => {
    const frames = this.outgoing
    if (frames.length === 0) return
    this.outgoing = []
    this.outgoingBytes = 0
    if (!this.stdinOpen || this.exitInfo !== undefined) return
    const stdin = this.child.stdin!
    const text = frames.length === 1 ? frames[0]! : frames.join("")
    // A remote link takes whole lines per write; its own transport reports progress.
    if (text.length <= WRITE_SLICE_BYTES || this.remote !== undefined) {
      stdin.write(text, this.onWritten)
      return
    }
    // Sliced as bytes (a string cut could split a character): each slice written is progress.
    const bytes = Buffer.from(text, "utf8")
    for (let at = 0; at < bytes.length; at += WRITE_SLICE_BYTES) {
      stdin.write(bytes.subarray(at, at + WRITE_SLICE_BYTES), this.onWritten)
    }
  }

  private onStdinError = (error: Error) => {
    // EPIPE once the process is gone; the exit handler reports it.
    this.stdinOpen = false
    this.log({ level: "debug", message: `stdin closed: ${error.message}` })
  }

  endStdin() {
    if (!this.stdinOpen) return
    this.flush()
    this.stdinOpen = false
    this.child.stdin!.end()
  }

  // -- reading

  // The same line framing as the client side (JsonRpc.FrameDecoder): linear in time and memory
  // however long a line is, and a line over the limit is dropped as it streams by.
  private onStdout = (chunk: Buffer) => {
    for (const frame of this.decoder.push(chunk)) this.onFrame(frame)
  }

  private onFrame(frame: Frame) {
    if (frame._tag === "Text") this.onLine(frame.text)
    else if (frame._tag === "TooLarge") this.onOversized(frame)
  }

  /** A reply over the limit fails its call at once, rather than leaving it to time out. */
  private onOversized(frame: Extract<Frame, { _tag: "TooLarge" }>) {
    const raw = idOfDropped(frame)
    const id = typeof raw === "number" ? raw : raw === null ? undefined : Number(raw)
    const onlyOne = this.pending.size === 1 ? [...this.pending.keys()][0] : undefined
    const target = id !== undefined && this.pending.has(id) ? id : raw === null ? onlyOne : undefined
    const summary = `a message of ${frame.bytes} bytes is over the limit of ${this.maxFrameBytes} bytes (maxFrameBytes)`
    const pending = target === undefined ? undefined : this.pending.get(target)
    if (target === undefined || pending === undefined) {
      return this.log({ level: "warn", message: `dropped ${summary}: it answers no pending request` })
    }
    this.pending.delete(target)
    clearTimeout(pending.timer)
    this.log({ level: "warn", message: `dropped the reply to ${pending.method}: ${summary}` })
    pending.resume(
      Exit.fail(
        new BackendError({
          backendId: this.backendId,
          reason: "call_failed",
          method: pending.method,
          summary: `the reply to ${pending.method} is ${frame.bytes} bytes, over the limit of ${this.maxFrameBytes} bytes (raise maxFrameBytes or maxBackendFrameBytes)`,
          detail: { bytes: frame.bytes, limit: this.maxFrameBytes }
        })
      )
    )
  }

  /**
   * Its stdout ended. Normally the process is exiting; if it is still running a little later, it
   * can never answer again: every call fails now and the process is stopped, so the supervisor
   * restarts it rather than leaving it "ready" with every call timing out.
   */
  private onStdoutEnd = () => {
    for (const frame of this.decoder.end()) this.onFrame(frame)
    if (this.closing || this.exitInfo !== undefined) return
    setTimeout(() => {
      if (this.closing || this.exitInfo !== undefined) return
      this.deafSince = Date.now()
      this.log({ level: "warn", message: "closed its stdout but kept running: stopping it" })
      const pending = [...this.pending.values()]
      this.pending.clear()
      for (const p of pending) {
        clearTimeout(p.timer)
        p.resume(Exit.fail(this.crashed(p.method)))
      }
      this.child.stdin!.destroy()
      const pid = this.pid
      if (pid === undefined) return this.remote?.kill()
      signalGroup(pid, "SIGTERM")
      setTimeout(() => {
        if (this.exitInfo === undefined) signalGroup(pid, "SIGKILL")
      }, DEFAULT_KILL_GRACE_MS).unref()
    }, STDOUT_CLOSED_GRACE_MS).unref()
  }

  private onLine(raw: string) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw
    const first = line.trimStart()[0]
    if (first === undefined) return
    if (first !== "{" && first !== "[") return this.junk(line)
    let message: unknown
    try {
      message = JSON.parse(line)
    } catch {
      return this.junk(line)
    }
    if (Array.isArray(message)) {
      // JSON-RPC batches (2025-03-26 allowed them).
      for (const item of message) this.onMessage(item, line)
    } else {
      this.onMessage(message, line)
    }
  }

  private junk(line: string) {
    if (!this.warnedJunk) {
      this.warnedJunk = true
      this.log({
        level: "warn",
        message: "skipping stdout lines that are not JSON-RPC (banners, notices)",
        stream: "stdout"
      })
    }
    this.log({ level: "debug", message: `not JSON-RPC: ${Secrets.scrubAndCut(line, MAX_LOGGED_LINE)}`, stream: "stdout" })
  }

  /** When the backend last sent anything that was JSON-RPC (it is alive), and when a call last timed out. */
  heardAt = Date.now()
  timedOutAt = 0

  private onMessage(message: unknown, line: string) {
    this.heardAt = Date.now()
    if (this.events.active()) this.trace("in", message)
    const incoming = classify(message)
    switch (incoming._tag) {
      case "Request":
        return this.onRequest(incoming.request.id, incoming.request.method, incoming.request.params)
      case "Notification":
        return this.onNotification(incoming.notification.method, incoming.notification.params)
      case "Invalid":
        return this.junk(line)
      case "Response":
        break
    }
    const m = incoming.payload as { result?: unknown; error?: unknown }
    const id = typeof incoming.id === "number" ? incoming.id : Number(incoming.id)
    const pending = incoming.id === null ? undefined : this.pending.get(id)
    if (pending === undefined) {
      // A reply after its timeout or cancellation, or an error about an unparsable frame (id null).
      this.log({
        level: incoming.id === null ? "warn" : "debug",
        message: `reply to no pending request: ${Secrets.scrubAndCut(line, MAX_LOGGED_LINE)}`
      })
      return
    }
    this.pending.delete(id)
    clearTimeout(pending.timer)
    this.deliver(pending, m.error !== undefined ? Exit.fail(this.callFailed(pending.method, m.error)) : Exit.succeed(m.result))
  }

  /** A reply, once every notification the backend sent before it was relayed (ordered requests). */
  private deliver(pending: Pending, exit: Exit.Exit<unknown, BackendError>) {
    const upTo = this.notificationsReceived
    if (!pending.ordered || upTo <= this.notificationsRelayed || this.relayStopped) return pending.resume(exit)
    this.relayWaiters.add({ upTo, resume: () => pending.resume(exit) })
  }

  /** Answers the backend's own requests other than `ping` (see `Options.onRequest`). */
  requestHandler: ((id: Id, method: string, params: unknown) => void) | undefined = undefined
  /** The backend's requests being answered, by id: its `notifications/cancelled` stops one. */
  readonly answering = new Map<Id, () => void>()

  /** The backend's own requests: `ping` here, the rest by the handler. */
  private onRequest(id: Id, method: string, params: unknown) {
    if (method === "ping") return this.reply(success(id, {}))
    if (this.requestHandler === undefined) {
      return this.reply(failure(id, { code: ErrorCode.MethodNotFound, message: `Method not found: ${method}` }))
    }
    if (this.answering.has(id)) {
      return this.reply(
        failure(id, { code: ErrorCode.InvalidRequest, message: `Invalid Request: id ${JSON.stringify(id)} is already in use` })
      )
    }
    this.requestHandler(id, method, params)
  }

  /** A reply to one of the backend's requests: always written (a few bytes, and the backend waits on it). */
  reply(response: Response) {
    this.write(encode("ndjson", response), true)
  }

  private onNotification(method: string, params: unknown) {
    if (method === "notifications/tools/list_changed") Queue.unsafeOffer(this.inbound, { _tag: "ToolsChanged" })
    else if (method === "notifications/subscriptions/acknowledged") return
    else if (method === "notifications/cancelled") {
      // The backend gave up on one of its own requests.
      const target = (params as { requestId?: unknown } | undefined)?.requestId
      if (isId(target)) this.answering.get(target)?.()
    } else {
      this.notificationsReceived++
      Queue.unsafeOffer(this.inbound, { _tag: "Notification", method, params })
    }
  }

  private onStderr = (chunk: string) => {
    const buffer = this.stderrBuffer + chunk
    let start = 0
    let newline: number
    while ((newline = buffer.indexOf("\n", start)) !== -1) {
      this.stderrLine(buffer.slice(start, newline))
      start = newline + 1
    }
    this.stderrBuffer = buffer.slice(start)
    if (this.stderrBuffer.length > STDERR_FLUSH_CHARS) {
      // A line without end is logged in pieces, never split inside a secret (each piece is
      // scrubbed on its own).
      const cut = Secrets.flushableLength(this.stderrBuffer)
      if (cut > 0) {
        this.stderrLine(this.stderrBuffer.slice(0, cut))
        this.stderrBuffer = this.stderrBuffer.slice(cut)
      }
    }
  }

  private stderrLine(raw: string) {
    const line = Secrets.scrubAndCut(raw.endsWith("\r") ? raw.slice(0, -1) : raw, MAX_LOGGED_LINE)
    if (line.trim() === "") return
    if (this.starting) {
      this.stderrTail.push(line)
      if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift()
    }
    this.log({ level: "debug", message: line, stream: "stderr" })
  }

  // -- relay order

  /** Called by the relay fiber after each notification (relayed or not). */
  markRelayed() {
    this.notificationsRelayed++
    for (const waiter of this.relayWaiters) {
      if (waiter.upTo <= this.notificationsRelayed) {
        this.relayWaiters.delete(waiter)
        waiter.resume()
      }
    }
  }

  /** The relay fiber is gone (the session's scope closed): nobody waits for it any more. */
  stopRelay() {
    this.relayStopped = true
    for (const waiter of this.relayWaiters) waiter.resume()
    this.relayWaiters.clear()
  }

  // -- requests

  /**
   * A request whose outcome is delivered only once every notification the backend sent before its
   * reply has been relayed: progress and log messages reach the client before the result, as MCP
   * clients expect (the SDK drops progress for a request that already completed). Without
   * notifications in flight this adds one comparison.
   */
  orderedRequest(method: string, params: unknown, timeoutMs: number): Effect.Effect<unknown, BackendError> {
    // Decided when the reply is read (`deliver`): no extra effect per call when nothing is pending.
    return this.request(method, params, timeoutMs, true)
  }

  request(method: string, params: unknown, timeoutMs: number, ordered = false): Effect.Effect<unknown, BackendError> {
    // One parameter: Effect.async then allocates no AbortController.
    return Effect.async<unknown, BackendError>((resume) => {
      if (this.exitInfo !== undefined) return resume(Exit.fail(this.crashed(method)))
      const id = this.nextId++
      let frame: string
      try {
        frame = encodeRequest(id, method, params)
      } catch (error) {
        return resume(
          Exit.fail(
            new BackendError({
              backendId: this.backendId,
              reason: "call_failed",
              method,
              summary: `${method} params are not JSON: ${String((error as Error).message)}`
            })
          )
        )
      }
      const written = this.write(frame)
      if (written !== "ok") {
        return resume(Exit.fail(written === "closed" ? this.crashed(method) : this.overloaded(method, written)))
      }
      const timer = setTimeout(this.onTimeout, timeoutMs, id)
      this.pending.set(id, { resume, timer, method, timeoutMs, ordered })
      return Effect.sync(() => this.cancel(id, "cancelled by the client"))
    })
  }

  notify(method: string, params: unknown): void {
    this.write(encodeNotification(method, params))
  }

  /** A request whose answer nobody waits for: a stateless backend's `subscriptions/listen` stream. */
  openStream(method: string, params: unknown): void {
    this.write(encodeRequest(this.nextId++, method, params))
  }

  private onTimeout = (id: number) => {
    const pending = this.pending.get(id)
    if (pending === undefined) return
    this.pending.delete(id)
    this.timedOutAt = Date.now()
    this.sendCancelled(id, pending.method, `timed out after ${pending.timeoutMs} ms`)
    pending.resume(
      Exit.fail(
        new BackendError({
          backendId: this.backendId,
          reason: "timeout",
          method: pending.method,
          summary: `${pending.method} timed out after ${pending.timeoutMs} ms`
        })
      )
    )
  }

  /** The caller went away (interrupted): tell the backend, as MCP cancellation says. */
  private cancel(id: number, reason: string) {
    const pending = this.pending.get(id)
    if (pending === undefined) return
    this.pending.delete(id)
    clearTimeout(pending.timer)
    this.sendCancelled(id, pending.method, reason)
  }

  private sendCancelled(id: number, method: string, reason: string) {
    // MCP: `initialize` must never be cancelled.
    if (method !== "initialize") this.notify("notifications/cancelled", { requestId: id, reason })
  }

  private callFailed(method: string, error: unknown): BackendError {
    const e = error as { code?: unknown; message?: unknown }
    const code = typeof e?.code === "number" ? ` ${e.code}` : ""
    const message = typeof e?.message === "string" ? `: ${e.message}` : ""
    return new BackendError({
      backendId: this.backendId,
      reason: "call_failed",
      method,
      summary: `${method} returned error${code}${message}`,
      detail: error
    })
  }

  private overloaded(method: string, why: "full" | "stalled"): BackendError {
    const queued = this.child.stdin!.writableLength + this.outgoingBytes
    return new BackendError({
      backendId: this.backendId,
      reason: "overloaded",
      method,
      summary:
        why === "stalled"
          ? `the backend is not reading its input: it has taken none of the ${queued} bytes waiting for it for ` +
            `${Math.round((Date.now() - this.drainedAt) / 1000)} s`
          : `the backend is behind on its input: ${queued} bytes already wait for it`
    })
  }

  crashed(method: string): BackendError {
    const info = this.exitInfo
    const what = this.closing
      ? "the backend was stopped"
      : this.deafSince !== undefined && info === undefined
        ? "the backend closed its stdout"
        : info === undefined
          ? "the process is not running"
          : this.remote !== undefined
            ? `the server ${info.description}`
            : `the process ${info.code === null ? "was " : ""}${info.description}`
    return new BackendError({
      backendId: this.backendId,
      reason: "crashed",
      method,
      summary: `${what} during ${method}${this.starting && !this.closing ? this.stderrSuffix() : ""}`,
      ...(info === undefined ? {} : { detail: { code: info.code, signal: info.signal } })
    })
  }

  /** `: <last stderr lines>`, scrubbed, for start-up failures. */
  stderrSuffix(): string {
    const tail = this.stderrTail.join("\n").trim()
    return tail === "" ? "" : `: ${Secrets.scrub(tail.slice(-1_000))}`
  }

  // -- exit

  private onExit = (code: number | null, signal: NodeJS.Signals | null) => {
    this.exitInfo = {
      code,
      signal,
      description: this.closing
        ? "stopped"
        : this.deafSince !== undefined
          ? `closed its stdout while running (stopped, then ${describeExit(code, signal)})`
          : (this.remote?.lostReason ?? describeExit(code, signal))
    }
    Deferred.unsafeDone(this.leaderExited, Exit.void)
    // Let what the process wrote before dying be read (a last reply, the stderr that says why),
    // but do not wait for pipes a surviving grandchild keeps open.
    if (this.child.stdout!.readableEnded && this.child.stderr!.readableEnded) return this.finishExit()
    const timer = setTimeout(this.finishExit, EXIT_DRAIN_MS)
    this.child.once("close", () => {
      clearTimeout(timer)
      this.finishExit()
    })
  }

  private exitFinished = false
  private finishExit = () => {
    if (this.exitFinished) return
    this.exitFinished = true
    const pending = [...this.pending.values()]
    this.pending.clear()
    for (const p of pending) {
      clearTimeout(p.timer)
      p.resume(Exit.fail(this.crashed(p.method)))
    }
    Deferred.unsafeDone(this.exitDeferred, Exit.succeed(this.exitInfo!))
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined
  }

  dispose() {
    this.child.stdout!.off("end", this.onStdoutEnd)
    this.child.stdout!.off("data", this.onStdout)
    this.child.stderr!.off("data", this.onStderr)
    this.child.stdout!.destroy()
    this.child.stderr!.destroy()
    this.child.stdin!.destroy()
  }
}

// ---------------------------------------------------------------------------------------------
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
  events: EventsService | undefined
) => Effect.Effect<Connection, BackendError>

const spawnConnection: Open = (config, maxFrameBytes, logs, inbound, events) =>
  Effect.async<Connection, BackendError>((resume) => {
    const cwdProblem = checkCwd(config)
    if (cwdProblem !== undefined) return resume(Effect.fail(cwdProblem))
    const tag = Reaper.newTag()
    let child: ChildProcess
    try {
      const command = isWindows ? quoteForShell(config.command!) : config.command!
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
      Reaper.track(child.pid!)
      resume(Effect.succeed(connection!))
    }
    child.once("error", onError)
    child.once("spawn", onSpawn)
    if (!child.stdin || !child.stdout || !child.stderr) return
    // Listeners go on before anything can be emitted: an early exit must not be missed.
    connection = new Connection(child, config.id, tag, maxFrameBytes, logs, inbound, events)
  })

/** Opens a remote backend's link (see Remote): its failure is retried with backoff like a crash. */
const connectRemote: Open = (config, maxFrameBytes, logs, inbound, events) =>
  Effect.suspend(() => {
    const link = new Remote.Link({
      url: config.url!,
      transport: transportOf(config) as Remote.Transport,
      headers: config.headers ?? {},
      maxFrameBytes
    })
    const connection = new Connection(link, config.id, "", maxFrameBytes, logs, inbound, events)
    return Effect.tryPromise({
      try: () => link.connect(),
      catch: (error) =>
        new BackendError({
          backendId: config.id,
          reason: "crashed",
          method: "connect",
          summary: `${link.address} ${Secrets.scrub(error instanceof Error ? error.message : String(error))}`
        })
    }).pipe(
      Effect.tapError(() => Effect.sync(() => link.kill())),
      Effect.as(connection)
    )
  })

const signalGroup = (pid: number, signal: NodeJS.Signals): void => {
  if (isWindows) {
    // No process groups nor SIGTERM: end the tree at once.
    spawnSync("taskkill", ["/pid", String(pid), "/T", "/F"], { stdio: "ignore", windowsHide: true })
    return
  }
  try {
    process.kill(-pid, signal)
  } catch {
    // ESRCH: the group is gone already.
  }
}

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
const terminate = (connection: Connection, graceMs: number): Effect.Effect<void> =>
  Effect.gen(function* () {
    connection.closing = true
    const pgid = connection.pid
    if (pgid === undefined) {
      // A remote server: its session is ended and the link closed; nothing to signal.
      connection.remote?.kill()
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
    yield* stopStragglers(connection.tag, graceMs)
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

// ---------------------------------------------------------------------------------------------
// The session

const MAX_TOOL_PAGES = 1_000

type Requester = (method: string, params: unknown, timeoutMs: number) => Effect.Effect<unknown, BackendError>

const listAllTools = (request: Requester, timeoutMs: number): Effect.Effect<ReadonlyArray<Mcp.Tool>, BackendError> =>
  Effect.gen(function* () {
    const tools: Array<Mcp.Tool> = []
    const seen = new Set<string>()
    let cursor: string | undefined = undefined
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const result = (yield* request("tools/list", cursor === undefined ? {} : { cursor }, timeoutMs)) as {
        tools?: unknown
        nextCursor?: unknown
      } | null
      const listed = Array.isArray(result?.tools) ? result.tools : []
      for (const tool of listed) {
        if (typeof tool !== "object" || tool === null || typeof tool.name !== "string") continue
        // A tool without a schema still takes an object (the MCP default).
        tools.push(
          typeof tool.inputSchema === "object" && tool.inputSchema !== null ? tool : { ...tool, inputSchema: { type: "object" } }
        )
      }
      const next = result?.nextCursor
      if (typeof next !== "string" || next === "" || seen.has(next)) break
      seen.add(next)
      cursor = next
    }
    return tools
  })

interface Session {
  readonly protocolVersion: string
  readonly capabilities: Readonly<Record<string, unknown>>
  readonly serverInfo: unknown
  readonly instructions: string | undefined
}

/**
 * `initialize`, offering the newest version first. A server that rejects the offer with an error,
 * or answers with a version we do not speak, is asked again with the next older one.
 */
const initialize = (
  connection: Connection,
  clientInfo: ClientInfo,
  capabilities: Readonly<Record<string, unknown>>,
  timeoutMs: number,
  versions: ReadonlyArray<string> = Mcp.SUPPORTED_PROTOCOL_VERSIONS
): Effect.Effect<Session, BackendError> =>
  Effect.gen(function* () {
    const problems: Array<string> = []
    for (const version of versions) {
      const outcome = yield* connection
        .request("initialize", { protocolVersion: version, capabilities, clientInfo }, timeoutMs)
        .pipe(Effect.either)
      if (outcome._tag === "Left") {
        // A transport failure (HTTP 401, 503...) is not about the version: no use offering another.
        if (outcome.left.reason !== "call_failed" || Remote.httpStatusOf(outcome.left.detail) !== undefined) {
          return yield* outcome.left
        }
        problems.push(`${version}: ${outcome.left.summary}`)
        continue
      }
      const result = outcome.right as {
        protocolVersion?: unknown
        capabilities?: unknown
        serverInfo?: unknown
        instructions?: unknown
      } | null
      if (
        Mcp.isSupportedProtocolVersion(result?.protocolVersion) &&
        (versions.length > 1 || result.protocolVersion === version)
      ) {
        return {
          protocolVersion: result.protocolVersion,
          capabilities:
            typeof result.capabilities === "object" && result.capabilities !== null
              ? (result.capabilities as Record<string, unknown>)
              : {},
          serverInfo: result.serverInfo,
          instructions: typeof result.instructions === "string" ? result.instructions : undefined
        }
      }
      problems.push(`${version}: answered with unsupported version ${JSON.stringify(result?.protocolVersion)}`)
    }
    return yield* new BackendError({
      backendId: connection.backendId,
      reason: "call_failed",
      method: "initialize",
      summary: `no common MCP protocol version (${problems.join("; ")})`
    })
  })

/**
 * Answers the backend's requests with `handler`, each in a fiber of the current scope: the
 * backend's `notifications/cancelled` interrupts it (no reply then, as MCP says), and so does the
 * backend stopping.
 */
const serveRequests = (connection: Connection, handler: (method: string, params: unknown) => Effect.Effect<unknown, RpcError>) =>
  Effect.gen(function* () {
    const runFork = yield* FiberSet.runtime(yield* FiberSet.make<unknown, RpcError>())<never>()
    connection.requestHandler = (id, method, params) => {
      const fiber = runFork(Effect.suspend(() => handler(method, params)))
      connection.answering.set(id, () => fiber.unsafeInterruptAsFork(FiberId.none))
      fiber.addObserver((exit) => {
        connection.answering.delete(id)
        if (Exit.isSuccess(exit)) return connection.reply(success(id, exit.value === undefined ? {} : exit.value))
        const failed = Cause.failureOption(exit.cause)
        if (Option.isSome(failed)) {
          const { code, message, data } = failed.value
          return connection.reply(failure(id, data === undefined ? { code, message } : { code, message, data }))
        }
        if (Cause.isInterruptedOnly(exit.cause)) return
        connection.reply(failure(id, { code: ErrorCode.InternalError, message: `Internal error while answering ${method}` }))
      })
    }
  })

/** A reply that says the server no longer knows this client's session. */
const isSessionLost = (error: BackendError): boolean =>
  error.reason === "call_failed" &&
  error.method !== "initialize" &&
  /not initiali[sz]ed|session not found|no valid session/i.test(error.summary)

/** How long `server/discover` may take before a backend is taken to be of the session era. */
const DISCOVER_TIMEOUT_MS = 3_000

/**
 * `server/discover`: the backend's session in the stateless era, or undefined when it does not
 * speak it (an error reply, a timeout, or no 2026-07-28 among its versions).
 */
const discover = (
  connection: Connection,
  clientInfo: ClientInfo,
  capabilities: Readonly<Record<string, unknown>>,
  timeoutMs: number
): Effect.Effect<Session | undefined, BackendError> =>
  Effect.gen(function* () {
    const outcome = yield* connection
      .request("server/discover", paramsFor(true, {}, capabilities, clientInfo), Math.min(timeoutMs, DISCOVER_TIMEOUT_MS))
      .pipe(Effect.either)
    if (outcome._tag === "Left") {
      // A process that died cannot be asked again; anything else means "not this era".
      if (outcome.left.reason === "crashed") return yield* outcome.left
      return undefined
    }
    const result = outcome.right as {
      supportedVersions?: unknown
      capabilities?: unknown
      instructions?: unknown
      serverInfo?: unknown
      _meta?: Record<string, unknown>
    } | null
    if (!Array.isArray(result?.supportedVersions) || !result.supportedVersions.includes(Mcp.STATELESS_PROTOCOL_VERSION))
      return undefined
    return {
      protocolVersion: Mcp.STATELESS_PROTOCOL_VERSION,
      capabilities:
        typeof result.capabilities === "object" && result.capabilities !== null
          ? (result.capabilities as Record<string, unknown>)
          : {},
      serverInfo: result._meta?.[Mcp.Meta.serverInfo] ?? result.serverInfo,
      instructions: typeof result.instructions === "string" ? result.instructions : undefined
    }
  })

/** Logs what the synchronous callbacks queued, so stderr floods cost a bounded queue and nothing more. */
const logPump = (connection: Connection, logs: Queue.Queue<LogLine>) =>
  Effect.forever(
    Effect.gen(function* () {
      const lines = yield* Queue.takeBetween(logs, 1, 256)
      for (const line of lines) {
        const annotations = line.stream === undefined ? {} : { stream: line.stream }
        yield* (line.level === "warn" ? Effect.logWarning(line.message) : Effect.logDebug(line.message)).pipe(
          Effect.annotateLogs(annotations)
        )
      }
      if (connection.droppedLogLines > 0) {
        yield* Effect.logDebug(`dropped ${connection.droppedLogLines} output lines (logging could not keep up)`)
        connection.droppedLogLines = 0
      }
    })
  )

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
  const size = config.maxInstances!
  const single = { ...config, maxInstances: 1 }
  const members = yield* Effect.forEach(
    Array.from({ length: size }, (_, i) => i),
    (i) => makeOne(single, i === 0 ? options : { ...options, onToolsChanged: undefined }),
    { concurrency: "unbounded" }
  )
  const inFlight = members.map(() => 0)
  const leastBusy = (): number => {
    let best = 0
    for (let i = 1; i < members.length; i++) if (inFlight[i]! < inFlight[best]!) best = i
    return best
  }
  const onLeastBusy = <A>(run: (member: Backend) => Effect.Effect<A, BackendError>): Effect.Effect<A, BackendError> =>
    Effect.suspend(() => {
      const i = leastBusy()
      inFlight[i]!++
      return Effect.ensuring(
        run(members[i]!),
        Effect.sync(() => inFlight[i]!--)
      )
    })
  const first = members[0]!
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
        options.events
      ),
      (connection) => terminate(connection, graceMs)
    )
    const address = connection.remote?.address ?? `pid ${connection.pid}`
    yield* Effect.annotateCurrentSpan({ backend: config.id, address })
    yield* Effect.logDebug(connection.remote === undefined ? `spawned ${address}` : `connected to ${address}`)
    yield* Effect.forkScoped(logPump(connection, logs))

    if (options.onRequest !== undefined) yield* serveRequests(connection, options.onRequest)
    // Some servers read their stdin (or listen) only a while after they start.
    if (config.startupDelayMs !== undefined) yield* Effect.sleep(config.startupDelayMs)
    const capabilities = options.clientCapabilities ?? {}
    const pinned = config.protocolVersion
    // A backend known to be of the session era is not asked again (one round trip less per restart);
    // one pinned to a version is asked only in that version's era.
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
    // Every request in the backend's era: the stateless one's _meta, or none of it.
    const requester: Requester = (method, params, ms) =>
      connection.request(method, paramsFor(stateless, params, capabilities, clientInfo), ms)
    let tools = yield* listAllTools(requester, timeoutMs).pipe(
      // A server without tools may not implement tools/list at all.
      Effect.catchIf(
        (e) => e.reason === "call_failed" && (e.detail as { code?: unknown } | undefined)?.code === -32601,
        () => Effect.succeed<ReadonlyArray<Mcp.Tool>>([])
      )
    )
    connection.starting = false

    const relist = listAllTools(requester, timeoutMs).pipe(
      Effect.flatMap((listed) => {
        tools = listed
        return options.onToolsChanged?.(listed) ?? Effect.void
      }),
      Effect.catchAllCause((cause) => Effect.logWarning("could not list the tools again", cause))
    )
    // Re-listing runs beside the relay, never in it: replies wait for the relay (see
    // `Connection.orderedRequest`), so it must not wait on a backend request itself. A burst of
    // list_changed is one re-listing, and one more after it when some came in while it ran.
    const scope = yield* Effect.scope
    const relistLock = yield* Effect.makeSemaphore(1)
    let relistQueued = false
    const requestRelist = Effect.suspend(() => {
      if (relistQueued) return Effect.void
      relistQueued = true
      return Effect.asVoid(
        Effect.forkIn(
          relistLock.withPermits(1)(
            Effect.zipRight(
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
              Effect.catchAllCause((cause) => Effect.logDebug(cause)),
              Effect.ensuring(Effect.sync(() => connection.markRelayed()))
            )
    yield* Effect.forkScoped(
      Effect.forever(Effect.flatMap(Queue.take(inbound), relay)).pipe(Effect.ensuring(Effect.sync(() => connection.stopRelay())))
    )

    if (stateless) {
      // The stateless era says what changed only on a `subscriptions/listen` stream: one for the
      // life of the process, for the list changes it can announce.
      const listChanged = (name: string) =>
        (session.capabilities[name] as { listChanged?: unknown } | undefined)?.listChanged === true
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
    const reinitializing = yield* Effect.makeSemaphore(1)
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
        Effect.catchIf(isSessionLost, () => Effect.zipRight(reinitialize(seen), send(method, params, requestOptions)))
      )
    }
    // Each call's outcome for observers (the debug UI's calls and errors), only while one listens.
    const events = options.events
    const request = (method: string, params?: unknown, requestOptions?: RequestOptions) => {
      if (events === undefined || !events.active()) return requestOnce(method, params, requestOptions)
      const started = Date.now()
      const publish = (outcome: "ok" | "error" | "isError" | "cancelled") =>
        Effect.sync(() =>
          events.publish({ _tag: "BackendCall", at: Date.now(), backendId: config.id, method, ms: Date.now() - started, outcome })
        )
      return requestOnce(method, params, requestOptions).pipe(
        Effect.onExit((exit) =>
          Exit.isSuccess(exit)
            ? publish((exit.value as { isError?: unknown } | null)?.isError === true ? "isError" : "ok")
            : publish(Cause.isInterruptedOnly(exit.cause) ? "cancelled" : "error")
        )
      )
    }

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
      listTools: listAllTools(requester, timeoutMs).pipe(Effect.tap((listed) => Effect.sync(() => (tools = listed)))),
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
          Effect.catchAll((error) =>
            Effect.succeed(error.reason === "timeout" || error.reason === "overloaded" ? ("silent" as const) : ("alive" as const))
          )
        ),
      exited: Deferred.await(connection.exitDeferred),
      isRunning: () => !connection.hasExited
    }
    return backend
  },
  (effect, config) => Effect.annotateLogs(effect, { backend: config.id })
)
