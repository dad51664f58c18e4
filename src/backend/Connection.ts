/**
 * One backend's JSON-RPC connection over its channel (a process's pipes or a remote transport, see
 * Channel): requests sent through the engine (jsonrpc/Requests), frames read and classified, the
 * backend's own requests and notifications, and the wording of every way a call can fail.
 */
import { Deferred, Effect, Exit, Queue } from "effect"
import { BackendError, ErrorCode } from "../protocol/Errors.js"
import { type EventsService, none as noEvents } from "../observability/Events.js"
import {
  classify,
  encode,
  encodeNotification,
  encodeRequest,
  failure,
  type Id,
  idOfDropped,
  isId,
  notification,
  ParamsTooDeep,
  request as requestMessage,
  type Response,
  success
} from "../jsonrpc/JsonRpc.js"
import { Requests } from "../jsonrpc/Requests.js"
import * as Secrets from "../observability/Secrets.js"
import type { Channel, ChannelEnd, Outbound, Receiver, TooLarge } from "./Channel.js"
import type { ExitInfo } from "./Contract.js"
import { field, messageOf, stringField } from "../json/Json.js"
import * as Depth from "../json/Depth.js"

/** A line a synchronous callback wants logged; a fiber logs them so callbacks never block. */
export interface LogLine {
  readonly level: "debug" | "warn"
  readonly message: string
  readonly stream?: "stderr" | "stdout"
}

export type Inbound =
  { readonly _tag: "Notification"; readonly method: string; readonly params: unknown } | { readonly _tag: "ToolsChanged" }

const MAX_LOGGED_LINE = 2_000
const STDERR_TAIL_LINES = 8
/**
 * A stderr line that says what went wrong ("Error: Cannot find module '…'", "fatal: …"), not a
 * stack frame: a start-up failure names the first such line, which a long stack pushes out of
 * the tail (Node prints the error, then ten lines of frames and its own version).
 */
const ERROR_LINE = /\b(?:error|exception|fatal|panic|cannot|can't|could not|not found|no such|denied|failed)\b/i
const STACK_FRAME = /^\s+(?:at |File ")/
/** A backend whose stdout ended and that has not exited after this long is treated as dead. */
const STDOUT_CLOSED_GRACE_MS = 200

const describeExit = (code: number | null, signal: string | null): string =>
  code !== null ? `exited with code ${code}` : `killed by ${signal ?? "an unknown signal"}`

/**
 * Plain mutable state: every callback runs on the one JS thread, and the hot path must not
 * allocate fibers.
 */
export class Connection implements Receiver {
  readonly channel: Channel
  readonly requests: Requests<BackendError>
  /** Set when the channel ended; requests fail at once from then on. */
  exitInfo: ExitInfo | undefined = undefined
  /** Completed once what the channel had read was delivered after its end. */
  readonly exitDeferred = Deferred.makeUnsafe<ExitInfo>()
  /** Completed when the channel ended (a process's raw `exit`), for the kill path. */
  readonly leaderExited = Deferred.makeUnsafe<void>()
  /** The gateway is stopping it: failures read "stopped", not "killed by SIGTERM". */
  closing = false
  /** Until the session is ready, crash errors carry the stderr tail (why start-up failed). */
  starting = true
  droppedLogLines = 0
  /** Set when the backend closed its stdout while still running: it can never answer again. */
  private deafSince: number | undefined = undefined
  private readonly stderrTail: Array<string> = []
  /** The first line of stderr, while starting, that says what went wrong (see ERROR_LINE). */
  private firstErrorLine: string | undefined = undefined
  private warnedJunk = false
  /** When the backend last sent anything that was JSON-RPC (it is alive). */
  heardAt = Date.now()
  /** The longest request written to a process (see Contract's Options); none for a remote server. */
  maxRequestBytes = Infinity

  constructor(
    readonly backendId: string,
    private readonly maxFrameBytes: number,
    private readonly logs: Queue.Queue<LogLine>,
    private readonly inbound: Queue.Queue<Inbound>,
    private readonly events: EventsService = noEvents,
    open: (receiver: Receiver) => Channel
  ) {
    this.requests = new Requests<BackendError>({
      send: (id, method, params) => this.sendRequest(id, method, params),
      cancelled: (id, method, reason) => {
        // MCP: `initialize` must never be cancelled.
        if (method !== "initialize") this.notify("notifications/cancelled", { requestId: id, reason })
      },
      timedOut: (method, ms) =>
        new BackendError({ backendId: this.backendId, reason: "timeout", method, summary: `${method} timed out after ${ms} ms` }),
      failed: (method, error) => this.callFailed(method, error)
    })
    this.channel = open(this)
  }

  /** Undefined for a remote server. */
  get pid(): number | undefined {
    return this.channel.pid
  }

  get timedOutAt(): number {
    return this.requests.timedOutAt
  }

  private log(line: LogLine) {
    if (!Queue.offerUnsafe(this.logs, line)) this.droppedLogLines++
  }

  // -- writing

  private write(out: Outbound, force = false) {
    if (this.exitInfo !== undefined || this.deafSince !== undefined) return "closed"
    if (this.events.active()) this.trace("out", out.message)
    return this.channel.write(out, force)
  }

  private sendRequest(id: number, method: string, params: unknown): BackendError | undefined {
    if (this.exitInfo !== undefined) return this.crashed(method)
    let text: string
    try {
      text = encodeRequest(id, method, params)
    } catch (error) {
      return new BackendError({
        backendId: this.backendId,
        reason: "call_failed",
        method,
        summary:
          error instanceof ParamsTooDeep ? `${method} ${error.message}` : `${method} params are not JSON: ${messageOf(error)}`
      })
    }
    // UTF-8 is at most three bytes per UTF-16 unit: most frames are judged by their length alone.
    if (text.length * 3 > this.maxRequestBytes && !this.channel.remote) {
      const bytes = Buffer.byteLength(text, "utf8")
      if (bytes > this.maxRequestBytes) {
        return new BackendError({
          backendId: this.backendId,
          reason: "call_failed",
          method,
          summary: `${method} is ${bytes} bytes, more than maxBackendRequestBytes (${this.maxRequestBytes}) that a stdio backend is sent in one message (the MCP SDK's servers drop a line over 10 MiB and never answer): send less, or raise maxBackendRequestBytes for a server that reads more`
        })
      }
    }
    const written = this.write({ message: requestMessage(id, method, params), text })
    return written === "ok" ? undefined : written === "closed" ? this.crashed(method) : this.overloaded(method, written)
  }

  /** Publishes one message (parsed only when someone listens). */
  private trace(direction: "in" | "out", message: unknown) {
    this.events.publish({ _tag: "BackendMessage", at: Date.now(), backendId: this.backendId, direction, message })
  }

  endStdin() {
    this.channel.endInput()
  }

  // -- requests

  /**
   * A request whose outcome is delivered only once every notification the backend sent before its
   * reply has been relayed: progress and log messages reach the client before the result, as MCP
   * clients expect (the SDK drops progress for a request that already completed).
   */
  orderedRequest(method: string, params: unknown, timeoutMs: number): Effect.Effect<unknown, BackendError> {
    return this.requests.request(method, params, timeoutMs, true)
  }

  request(method: string, params: unknown, timeoutMs: number): Effect.Effect<unknown, BackendError> {
    return this.requests.request(method, params, timeoutMs)
  }

  notify(method: string, params: unknown): void {
    this.write({ message: notification(method, params), text: encodeNotification(method, params) })
  }

  /** A request whose answer nobody waits for: a stateless backend's `subscriptions/listen` stream. */
  openStream(method: string, params: unknown): void {
    const id = this.requests.takeId()
    this.write({ message: requestMessage(id, method, params), text: encodeRequest(id, method, params) })
  }

  /** Called by the relay fiber after each notification (relayed or not). */
  markRelayed() {
    this.requests.markRelayed()
  }

  /** The relay fiber is gone (the session's scope closed): nobody waits for it any more. */
  stopRelay() {
    this.requests.stopRelay()
  }

  // -- reading (the channel's Receiver)

  text(raw: string) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw
    const first = line.trimStart()[0]
    if (first === undefined) return
    if (first !== "{" && first !== "[") return this.junk(line)
    let message: unknown
    try {
      message = Depth.parse(line)
    } catch {
      return this.junk(line)
    }
    if (Array.isArray(message)) {
      // JSON-RPC batches (2025-03-26 allowed them).
      for (const item of message) this.message(item, line)
    } else {
      this.message(message, line)
    }
  }

  /** A reply over the limit fails its call at once, rather than leaving it to time out. */
  oversized(frame: TooLarge) {
    const raw = idOfDropped(frame)
    const id = typeof raw === "number" ? raw : raw === null ? undefined : Number(raw)
    const target =
      id !== undefined && this.requests.methodOf(id) !== undefined ? id : raw === null ? this.requests.sole() : undefined
    const summary = `a message of ${frame.bytes} bytes is over the limit of ${this.maxFrameBytes} bytes (maxFrameBytes)`
    const method = target === undefined ? undefined : this.requests.methodOf(target)
    if (target === undefined || method === undefined) {
      return this.log({ level: "warn", message: `dropped ${summary}: it answers no pending request` })
    }
    this.log({ level: "warn", message: `dropped the reply to ${method}: ${summary}` })
    this.requests.fail(
      target,
      (method) =>
        new BackendError({
          backendId: this.backendId,
          reason: "call_failed",
          method,
          summary: `the reply to ${method} is ${frame.bytes} bytes, over the limit of ${this.maxFrameBytes} bytes (raise maxFrameBytes or maxBackendFrameBytes)`,
          detail: { bytes: frame.bytes, limit: this.maxFrameBytes }
        })
    )
  }

  diagnostic(raw: string, own = false) {
    const line = Secrets.scrubAndCut(raw.endsWith("\r") ? raw.slice(0, -1) : raw, MAX_LOGGED_LINE)
    if (line.trim() === "") return
    if (own) return this.log({ level: "debug", message: line })
    if (this.starting) {
      if (this.firstErrorLine === undefined && ERROR_LINE.test(line) && !STACK_FRAME.test(line)) this.firstErrorLine = line.trim()
      this.stderrTail.push(line)
      if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift()
    }
    this.log({ level: "debug", message: line, stream: "stderr" })
  }

  /**
   * Its stdout ended. Normally the process is exiting; if it is still running a little later, it
   * can never answer again: every call fails now and the process is stopped, so the supervisor
   * restarts it rather than leaving it "ready" with every call timing out.
   */
  inputEnded() {
    if (this.closing || this.exitInfo !== undefined) return
    setTimeout(() => {
      if (this.closing || this.exitInfo !== undefined) return
      this.deafSince = Date.now()
      this.log({ level: "warn", message: "closed its stdout but kept running: stopping it" })
      this.requests.failAll((method) => this.crashed(method))
      this.channel.abort()
    }, STDOUT_CLOSED_GRACE_MS).unref()
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

  message(message: unknown, line: string) {
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
    const id = incoming.id === null ? undefined : typeof incoming.id === "number" ? incoming.id : Number(incoming.id)
    if (id === undefined || !this.requests.settle(id, incoming.payload)) {
      // A reply after its timeout or cancellation, or an error about an unparsable frame (id null).
      this.log({
        level: incoming.id === null ? "warn" : "debug",
        message: `reply to no pending request: ${Secrets.scrubAndCut(line, MAX_LOGGED_LINE)}`
      })
    }
  }

  /** Answers the backend's own requests other than `ping` (see `Options.onRequest`). */
  requestHandler: ((id: Id, method: string, params: unknown) => void) | undefined = undefined
  /** Stops one of the backend's requests being answered: its `notifications/cancelled`. */
  cancelHandler: ((id: Id) => void) | undefined = undefined

  /** The backend's own requests: `ping` here, the rest by the handler. */
  private onRequest(id: Id, method: string, params: unknown) {
    if (method === "ping") return this.reply(success(id, {}))
    if (this.requestHandler === undefined) {
      return this.reply(failure(id, { code: ErrorCode.MethodNotFound, message: `Method not found: ${method}` }))
    }
    this.requestHandler(id, method, params)
  }

  /** A reply to one of the backend's requests: always written (a few bytes, and the backend waits on it). */
  reply(response: Response) {
    this.write({ message: response, text: encode("ndjson", response) }, true)
  }

  private onNotification(method: string, params: unknown) {
    if (method === "notifications/tools/list_changed") Queue.offerUnsafe(this.inbound, { _tag: "ToolsChanged" })
    else if (method === "notifications/subscriptions/acknowledged") return
    else if (method === "notifications/cancelled") {
      // The backend gave up on one of its own requests.
      const target = field(params, "requestId")
      if (isId(target)) this.cancelHandler?.(target)
    } else {
      this.requests.noteNotification()
      Queue.offerUnsafe(this.inbound, { _tag: "Notification", method, params })
    }
  }

  // -- failures

  private callFailed(method: string, error: unknown): BackendError {
    const number = field(error, "code")
    const text = stringField(error, "message")
    const code = typeof number === "number" ? ` ${number}` : ""
    const message = text !== undefined ? `: ${text}` : ""
    return new BackendError({
      backendId: this.backendId,
      reason: "call_failed",
      method,
      summary: `${method} returned error${code}${message}`,
      detail: error
    })
  }

  private overloaded(method: string, why: "full" | "stalled"): BackendError {
    const { bytes, idleMs } = this.channel.backlog()
    return new BackendError({
      backendId: this.backendId,
      reason: "overloaded",
      method,
      summary:
        why === "stalled"
          ? `the backend is not reading its input: it has taken none of the ${bytes} bytes waiting for it for ` +
            `${Math.round(idleMs / 1000)} s`
          : `the backend is behind on its input: ${bytes} bytes already wait for it`
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
          : this.channel.remote
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

  /**
   * `: <first error line>` then the last stderr lines, scrubbed, for start-up failures: the line
   * that says why comes first, whatever the stack after it (the tail alone may have lost it).
   */
  stderrSuffix(): string {
    const tail = this.stderrTail.join("\n").trim().slice(-1_000)
    const first = this.firstErrorLine?.slice(0, 500)
    const said = first === undefined || tail.startsWith(first) ? tail : tail === "" ? first : `${first}\n${tail}`
    return said === "" ? "" : `: ${Secrets.scrub(said)}`
  }

  // -- the end

  ended({ code, signal, reason }: ChannelEnd) {
    this.exitInfo = {
      code,
      signal,
      description: this.closing
        ? "stopped"
        : this.deafSince !== undefined
          ? `closed its stdout while running (stopped, then ${describeExit(code, signal)})`
          : (reason ?? describeExit(code, signal))
    }
    Deferred.doneUnsafe(this.leaderExited, Exit.void)
  }

  finished() {
    this.requests.failAll((method) => this.crashed(method))
    Deferred.doneUnsafe(this.exitDeferred, Exit.succeed(this.exitInfo!))
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined
  }

  dispose() {
    this.channel.dispose()
  }
}
