/**
 * One backend's channel: its process (or remote link) pipes, frames written in order and judged by
 * progress, frames read and classified, the pending requests with their timeouts and cancellation,
 * and the backend's own requests and notifications. Longer than most modules: the JSON-RPC client
 * and the pipes it owns share every piece of state, until the request engine is taken out of it
 * (the rebuild's next step: one engine for backends and clients).
 */
import { Deferred, Effect, Exit, FiberId, Queue } from "effect"
import { spawnSync, type ChildProcess } from "node:child_process"
import { BackendError, ErrorCode } from "../protocol/Errors.js"
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
import * as Remote from "./Remote.js"
import * as Secrets from "../observability/Secrets.js"
import { DEFAULT_KILL_GRACE_MS, ExitInfo } from "./Contract.js"

// Process

export const isWindows = process.platform === "win32"

/** A line a synchronous callback wants logged; a fiber logs them so callbacks never block. */
export interface LogLine {
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

export type Inbound =
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

export const quoteForShell = (arg: string): string => (/[\s"&|<>^]/.test(arg) ? `"${arg.replace(/"/g, '""')}"` : arg)

/**
 * The process and its JSON-RPC connection. Plain mutable state: every callback runs on the one JS
 * thread, and the hot path must not allocate fibers.
 */
/** Ends a backend's whole process group (on Windows, its process tree). */
export const signalGroup = (pid: number, signal: NodeJS.Signals): void => {
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

export class Connection {
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
