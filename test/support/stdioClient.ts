/**
 * The one client of the built CLI (`dist/bin.js`, or any command) over its stdin/stdout: either
 * framing, every byte of stdout kept so tests can check nothing but frames was written, replies
 * counted per id so a duplicate or a lost reply shows. Also the temp directories every test uses
 * (removed after each test file) and the one Content-Length frame parser.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
export { FIXTURE_SERVER } from "./mcpFixture.js"
export { isAlive, sleep } from "./process.js"

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
export const BIN = join(ROOT, "dist", "bin.js")
/** The CLI with `LlmClient.layerScripted` in place of OpenAI (see the file). */
export const SCRIPTED_GATEWAY = join(ROOT, "test", "support", "scripted-gateway.mjs")

const created: Array<string> = []

/** A fresh directory under the system's temp directory, removed after the test file (see setup.ts). */
export const tempDir = (prefix = "agentify-") => {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  created.push(dir)
  return dir
}

/** Removes every directory `tempDir` made so far. */
export const removeTempDirs = (): void => {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true, maxRetries: 3 })
}

/**
 * An environment without the developer's own OpenAI settings or config, and with a state directory
 * of its own (tool pins) unless `extra` names one: each gateway a test starts meets its backends' tools
 * for the first time.
 */
export const cleanEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "AGENTIFY_CONFIG", "LOG_LEVEL", "DEBUG_PORT"]) {
    delete env[name]
  }
  return { ...env, AGENTIFY_STATE_DIR: tempDir("agentify-state-"), ...extra }
}

export type Id = string | number

export interface Reply {
  readonly jsonrpc: "2.0"
  readonly id: Id | null
  readonly result?: any
  readonly error?: { code: number; message: string; data?: any }
}

export const INIT_PARAMS = {
  protocolVersion: "2025-11-25",
  capabilities: {},
  clientInfo: { name: "test-client", version: "1" }
}

export interface ClientOptions {
  readonly command?: string
  readonly args?: ReadonlyArray<string>
  readonly env?: NodeJS.ProcessEnv
  readonly cwd?: string
  readonly framing?: "ndjson" | "content-length"
  /** Where heap-probe.mjs writes (when the gateway runs with it). */
  readonly probeFile?: string
}

/**
 * A client of one gateway process. Every parsed stdout message is kept; replies are counted per
 * id (`counts`) and the null-id ones kept apart, so a test can check "exactly one reply per id".
 */
export class CliClient {
  readonly child: ChildProcess
  readonly framing: "ndjson" | "content-length"
  readonly probeFile: string | undefined
  readonly messages: Array<any> = []
  /** Replies (inside batches too) per id; null ids in `nullReplies`. */
  readonly counts = new Map<Id, number>()
  readonly nullReplies: Array<Reply> = []
  /** Array frames received (batch replies). */
  readonly batches: Array<Array<Reply>> = []
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  private readonly out: Array<Buffer> = []
  private err = ""
  private pending: Buffer = Buffer.alloc(0)
  private readonly waiters = new Map<Id, Array<(reply: Reply) => void>>()
  private readonly watchers = new Set<(message: any) => boolean>()
  private nextId = 1
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined

  constructor(options: ClientOptions = {}) {
    this.framing = options.framing ?? "ndjson"
    this.probeFile = options.probeFile
    this.child = spawn(
      options.command ?? process.execPath,
      options.command === undefined ? [BIN, ...(options.args ?? [])] : [...(options.args ?? [])],
      {
        cwd: options.cwd ?? tempDir(),
        env: options.env ?? cleanEnv(),
        stdio: ["pipe", "pipe", "pipe"]
      }
    )
    this.child.stdout!.on("data", (chunk: Buffer) => this.onStdout(chunk))
    this.child.stderr!.on("data", (chunk: Buffer) => {
      // Bounded: a flood test must not make the test process hold megabytes.
      this.err += chunk.toString("utf8")
      if (this.err.length > 4_000_000) this.err = this.err.slice(-2_000_000)
    })
    // A test that kills the gateway on purpose still writes; EPIPE must not fail the test.
    this.child.stdin!.on("error", () => {})
    this.exited = once(this.child, "exit").then(([code, signal]) => {
      this.exitInfo = { code, signal }
      return this.exitInfo
    }) as Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  }

  get pid(): number {
    return this.child.pid!
  }

  get running(): boolean {
    return this.exitInfo === undefined
  }

  stdout(): Buffer {
    return Buffer.concat(this.out)
  }

  stderr(): string {
    return this.err
  }

  private onStdout(chunk: Buffer) {
    this.out.push(chunk)
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
    for (;;) {
      let body: Buffer
      if (this.framing === "ndjson") {
        const nl = this.pending.indexOf(0x0a)
        if (nl < 0) return
        body = this.pending.subarray(0, nl)
        this.pending = this.pending.subarray(nl + 1)
      } else {
        const end = this.pending.indexOf("\r\n\r\n")
        if (end < 0) return
        const match = /Content-Length: (\d+)/i.exec(this.pending.subarray(0, end).toString("latin1"))
        if (match === null) throw new Error(`bad header from the gateway: ${this.pending.subarray(0, end)}`)
        const length = Number(match[1])
        if (this.pending.length < end + 4 + length) return
        body = this.pending.subarray(end + 4, end + 4 + length)
        this.pending = this.pending.subarray(end + 4 + length)
      }
      if (body.length === 0) continue
      // A frame that is not JSON fails the test later (assertOnlyFrames / parseContentLength).
      let message: any
      try {
        message = JSON.parse(body.toString("utf8"))
      } catch {
        this.messages.push({ __notJson: body.toString("utf8") })
        continue
      }
      this.messages.push(message)
      for (const watcher of [...this.watchers]) if (watcher(message)) this.watchers.delete(watcher)
      if (Array.isArray(message)) {
        this.batches.push(message)
        for (const m of message) this.onReply(m)
      } else if (message !== null && typeof message === "object" && ("result" in message || "error" in message)) {
        this.onReply(message)
      }
    }
  }

  private onReply(reply: Reply) {
    if (reply.id === null || reply.id === undefined) {
      this.nullReplies.push(reply)
      return
    }
    this.counts.set(reply.id, (this.counts.get(reply.id) ?? 0) + 1)
    const waiting = this.waiters.get(reply.id)
    if (waiting !== undefined) {
      this.waiters.delete(reply.id)
      for (const resolve of waiting) resolve(reply)
    }
  }

  /** The bytes of one message in this client's framing. */
  frame(message: unknown): Buffer {
    const json = Buffer.from(JSON.stringify(message), "utf8")
    return this.framing === "ndjson"
      ? Buffer.concat([json, Buffer.from("\n")])
      : Buffer.concat([Buffer.from(`Content-Length: ${json.length}\r\n\r\n`, "latin1"), json])
  }

  write(bytes: Buffer | string): void {
    if (!this.child.stdin!.destroyed) this.child.stdin!.write(bytes)
  }

  send(message: unknown): void {
    this.write(this.frame(message))
  }

  /** Raw text or bytes, as given (no framing added). */
  sendRaw(text: Buffer | string): void {
    this.write(text)
  }

  /** Resolves with the first message (received or still to come) matching `predicate`. */
  waitFor(predicate: (message: any) => boolean, timeoutMs = 20_000): Promise<any> {
    const found = this.messages.find(predicate)
    if (found !== undefined) return Promise.resolve(found)
    return new Promise((resolve, reject) => {
      const watcher = (message: any) => {
        if (!predicate(message)) return false
        clearTimeout(timer)
        resolve(message)
        return true
      }
      const timer = setTimeout(() => {
        this.watchers.delete(watcher)
        reject(new Error(`timed out waiting for a message; stderr tail:\n${this.err.slice(-3_000)}`))
      }, timeoutMs)
      this.watchers.add(watcher)
    })
  }

  /** Resolves with the reply for `id` (already received or still to come). */
  reply(id: Id, timeoutMs = 20_000): Promise<Reply> {
    const found = this.counts.has(id) ? this.findReply(id) : undefined
    if (found !== undefined) return Promise.resolve(found)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(`no reply for id ${JSON.stringify(id)} within ${timeoutMs} ms; stderr tail:\n${this.err.slice(-3_000)}`)
          ),
        timeoutMs
      )
      const list = this.waiters.get(id) ?? []
      list.push((reply) => {
        clearTimeout(timer)
        resolve(reply)
      })
      this.waiters.set(id, list)
    })
  }

  private findReply(id: Id): Reply | undefined {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const m = this.messages[i]
      const list = Array.isArray(m) ? m : [m]
      for (const r of list) if (r !== null && typeof r === "object" && r.id === id && ("result" in r || "error" in r)) return r
    }
    return undefined
  }

  /** Sends a request and resolves with its reply (loosely typed: tests read whatever they expect). */
  request(method: string, params?: unknown, id: Id = `h${this.nextId++}`, timeoutMs?: number): Promise<any> {
    this.send({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) })
    return this.reply(id, timeoutMs)
  }

  notify(method: string, params?: unknown): void {
    this.send({ jsonrpc: "2.0", method, ...(params === undefined ? {} : { params }) })
  }

  async initialize(initializationOptions?: unknown): Promise<Reply> {
    const reply = await this.request("initialize", {
      ...INIT_PARAMS,
      ...(initializationOptions === undefined ? {} : { initializationOptions })
    })
    this.notify("notifications/initialized")
    return reply
  }

  callTool(name: string, args: unknown = {}, id?: Id, timeoutMs?: number): Promise<Reply> {
    return this.request("tools/call", { name, arguments: args }, id, timeoutMs)
  }

  /** Ends stdin (EOF) and waits for the exit; SIGKILL after `timeoutMs` (and the test then fails on the signal). */
  async close(timeoutMs = 15_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!this.child.stdin!.destroyed) this.child.stdin!.end()
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs)
    const result = await this.exited
    clearTimeout(timer)
    return result
  }
}

/** The built CLI on a fresh temp directory and a clean environment (see `CliClient`). */
export const startGateway = (options: ClientOptions = {}): CliClient => new CliClient(options)

/** Splits a newline-delimited stdout into frames and checks each is a JSON-RPC 2.0 message. */
export const assertOnlyFrames = (stdout: Buffer): Array<any> => {
  const text = stdout.toString("utf8")
  if (text.length === 0) return []
  if (!text.endsWith("\n")) throw new Error(`stdout does not end with a frame boundary: ${JSON.stringify(text.slice(-200))}`)
  return text
    .slice(0, -1)
    .split("\n")
    .map((line) => {
      const message = JSON.parse(line)
      const messages = Array.isArray(message) ? message : [message]
      for (const m of messages) {
        if (m.jsonrpc !== "2.0") throw new Error(`not a JSON-RPC 2.0 frame: ${line}`)
        if (!("method" in m) && !("result" in m) && !("error" in m)) throw new Error(`not a JSON-RPC message: ${line}`)
      }
      return message
    })
}

/**
 * Parses a Content-Length framed stdout, checking every byte belongs to a frame and every frame
 * is a JSON-RPC 2.0 message or a batch of them.
 */
export const contentLengthFrames = (stdout: Buffer): Array<any> => {
  const frames: Array<any> = []
  let rest = stdout
  while (rest.length > 0) {
    const end = rest.indexOf("\r\n\r\n")
    if (end < 0) throw new Error(`trailing bytes outside a frame: ${JSON.stringify(rest.toString("utf8").slice(0, 200))}`)
    const match = /^Content-Length: (\d+)$/.exec(rest.subarray(0, end).toString("latin1"))
    if (match === null) throw new Error(`bad header block: ${JSON.stringify(rest.subarray(0, end).toString("latin1"))}`)
    const length = Number(match[1])
    const body = rest.subarray(end + 4, end + 4 + length)
    if (body.length !== length) throw new Error("truncated frame")
    const frame = JSON.parse(body.toString("utf8"))
    for (const m of Array.isArray(frame) ? frame : [frame]) {
      if (m?.jsonrpc !== "2.0") throw new Error(`not a JSON-RPC 2.0 frame: ${body.toString("utf8").slice(0, 200)}`)
    }
    frames.push(frame)
    rest = rest.subarray(end + 4 + length)
  }
  return frames
}
