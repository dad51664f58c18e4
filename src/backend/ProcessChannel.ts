/**
 * A child process as a backend's channel: newline-delimited frames on its stdin, written in order
 * and judged by progress; its stdout read as frames; its stderr split into diagnostic lines (always
 * drained: a full stderr pipe would block the backend); its exit, once what it wrote was read.
 */
import { spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process"
import { FrameDecoder } from "../jsonrpc/JsonRpc.js"
import * as Secrets from "../observability/Secrets.js"
import type { Channel, Outbound, Receiver, WriteOutcome } from "./Channel.js"
import { DEFAULT_KILL_GRACE_MS } from "./Contract.js"

export const isWindows = process.platform === "win32"

export const quoteForShell = (arg: string): string => (/[\s"&|<>^]/.test(arg) ? `"${arg.replace(/"/g, '""')}"` : arg)

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
/** A stderr line without a newline is handed on in pieces of about this size. */
const STDERR_FLUSH_CHARS = 16_384
/** After `exit`, how long buffered stdout/stderr may still be read when the pipes stay open (a grandchild holds them). */
const EXIT_DRAIN_MS = 50

export class ProcessChannel implements Channel {
  readonly remote = false
  private readonly decoder: FrameDecoder
  private stdinOpen = true
  private exited = false
  private outgoing: Array<string> = []
  private outgoingBytes = 0
  /** When the backend last took bytes from its input, or when bytes began to wait for it. */
  private drainedAt = Date.now()
  private stderrBuffer = ""

  constructor(
    readonly child: ChildProcessWithoutNullStreams,
    /** The marker of this process tree (see Reaper). */
    readonly tag: string,
    maxFrameBytes: number,
    private readonly receiver: Receiver
  ) {
    this.decoder = new FrameDecoder(maxFrameBytes, "ndjson")
    child.stderr.setEncoding("utf8")
    child.stdout.on("data", this.onStdout)
    child.stdout.on("end", this.onStdoutEnd)
    child.stderr.on("data", this.onStderr)
    child.stdin.on("error", this.onStdinError)
    child.stdout.on("error", () => {})
    child.stderr.on("error", () => {})
    child.on("exit", this.onExit)
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  get address(): string {
    return `pid ${this.child.pid}`
  }

  // -- writing

  write(out: Outbound, force: boolean): WriteOutcome {
    const frame = out.text
    if (!this.stdinOpen || this.exited) return "closed"
    const queued = this.child.stdin.writableLength + this.outgoingBytes
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

  backlog() {
    return { bytes: this.child.stdin.writableLength + this.outgoingBytes, idleMs: Date.now() - this.drainedAt }
  }

  private onWritten = (error?: Error | null) => {
    if (error === undefined || error === null) this.drainedAt = Date.now()
  }

  private flush = () => {
    const frames = this.outgoing
    if (frames.length === 0) return
    this.outgoing = []
    this.outgoingBytes = 0
    if (!this.stdinOpen || this.exited) return
    const stdin = this.child.stdin
    const text = frames.join("")
    if (text.length <= WRITE_SLICE_BYTES) {
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
    this.receiver.diagnostic(`stdin closed: ${error.message}`, true)
  }

  endInput() {
    if (!this.stdinOpen) return
    this.flush()
    this.stdinOpen = false
    this.child.stdin.end()
  }

  /** The backend can never answer again: its group gets SIGTERM, then SIGKILL after the grace. */
  abort() {
    this.stdinOpen = false
    this.child.stdin.destroy()
    const pid = this.pid
    if (pid === undefined) return
    signalGroup(pid, "SIGTERM")
    setTimeout(() => {
      if (!this.exited) signalGroup(pid, "SIGKILL")
    }, DEFAULT_KILL_GRACE_MS).unref()
  }

  // -- reading

  // The same line framing as the client side (JsonRpc.FrameDecoder): linear in time and memory
  // however long a line is, and a line over the limit is dropped as it streams by.
  private onStdout = (chunk: Buffer) => {
    for (const frame of this.decoder.push(chunk)) {
      if (frame._tag === "Text") this.receiver.text(frame.text)
      else if (frame._tag === "TooLarge") this.receiver.oversized(frame)
    }
  }

  private onStdoutEnd = () => {
    for (const frame of this.decoder.end()) {
      if (frame._tag === "Text") this.receiver.text(frame.text)
      else if (frame._tag === "TooLarge") this.receiver.oversized(frame)
    }
    if (!this.exited) this.receiver.inputEnded()
  }

  private onStderr = (chunk: string) => {
    const buffer = this.stderrBuffer + chunk
    let start = 0
    let newline: number
    while ((newline = buffer.indexOf("\n", start)) !== -1) {
      this.receiver.diagnostic(buffer.slice(start, newline))
      start = newline + 1
    }
    this.stderrBuffer = buffer.slice(start)
    if (this.stderrBuffer.length > STDERR_FLUSH_CHARS) {
      // A line without end is handed on in pieces, never split inside a secret (each piece is
      // scrubbed on its own).
      const cut = Secrets.flushableLength(this.stderrBuffer)
      if (cut > 0) {
        this.receiver.diagnostic(this.stderrBuffer.slice(0, cut))
        this.stderrBuffer = this.stderrBuffer.slice(cut)
      }
    }
  }

  // -- exit

  private onExit = (code: number | null, signal: NodeJS.Signals | null) => {
    this.exited = true
    this.receiver.ended({ code, signal })
    // Let what the process wrote before dying be read (a last reply, the stderr that says why),
    // but do not wait for pipes a surviving grandchild keeps open.
    if (this.child.stdout.readableEnded && this.child.stderr.readableEnded) return this.finish()
    const timer = setTimeout(this.finish, EXIT_DRAIN_MS)
    this.child.once("close", () => {
      clearTimeout(timer)
      this.finish()
    })
  }

  private finished = false
  private finish = () => {
    if (this.finished) return
    this.finished = true
    this.receiver.finished()
  }

  dispose() {
    this.child.stdout.off("end", this.onStdoutEnd)
    this.child.stdout.off("data", this.onStdout)
    this.child.stderr.off("data", this.onStderr)
    this.child.stdout.destroy()
    this.child.stderr.destroy()
    this.child.stdin.destroy()
  }
}
