/**
 * Shared by the hardening tests: a lean JSON-RPC client over a spawned gateway (either framing,
 * replies counted per id so a duplicate or a lost reply shows), process-tree inspection through
 * /proc (which processes a gateway left behind), and small config helpers.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { BackendConfigInput } from "../../src/Config.js"
import { expect } from "vitest"
import { assertOnlyFrames, BIN, cleanEnv, tempDir } from "../support/gateway.js"
import { isAlive } from "../support/mcpFixture.js"

export const HERE = dirname(fileURLToPath(import.meta.url))
/** The CLI's server with `LlmClient.layerScripted` in place of OpenAI (see the file). */
export const SCRIPTED_GATEWAY = join(HERE, "..", "support", "scripted-gateway.mjs")
/** A backend that answers tools/call with a result or an error nested 100,000 levels deep. */
export const DEEP_BACKEND = join(HERE, "deep-backend.mjs")
/** An intermediate client: spawns the gateway holding its pipes, so the test can SIGKILL it. */
export const HOLDER = join(HERE, "holder.mjs")
/** A test-only preload: SIGUSR2 forces a GC and writes the heap figures to HEAP_PROBE_FILE. */
export const HEAP_PROBE = join(HERE, "..", "support", "heap-probe.mjs")

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
  clientInfo: { name: "hardening", version: "1" }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Polls `check` until it holds; throws with `what` after `timeoutMs`. */
export const until = async (what: string, check: () => boolean, timeoutMs = 10_000, everyMs = 20): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(everyMs)
  }
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
export class Client {
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
  private nextId = 1
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined

  constructor(options: ClientOptions = {}) {
    this.framing = options.framing ?? "ndjson"
    this.probeFile = options.probeFile
    this.child = spawn(
      options.command ?? process.execPath,
      options.command === undefined ? [BIN, ...(options.args ?? [])] : [...(options.args ?? [])],
      {
        cwd: options.cwd ?? tempDir("agentify-hardening-"),
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

  request(method: string, params?: unknown, id: Id = `h${this.nextId++}`, timeoutMs?: number): Promise<Reply> {
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

/**
 * Parses a Content-Length framed stdout, checking every byte belongs to a frame and every frame
 * is a JSON-RPC 2.0 message or a batch of them (`parseContentLength` of test/support takes no batches).
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

// ---------------------------------------------------------------------------------------------
// Processes

const parentOf = (pid: number): number | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
  } catch {
    return undefined
  }
}

/** The gateway's watchdog (see src/Reaper.ts): its own helper, not a backend. */
export const isWatchdog = (pid: number): boolean => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0").includes("agentify-watchdog")
  } catch {
    return false
  }
}

/** Every live process below `pid` (children, grandchildren, ...), from /proc; the watchdog aside. */
export const descendants = (pid: number): Array<number> => {
  const children = new Map<number, Array<number>>()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const child = Number(entry)
    const parent = parentOf(child)
    if (parent === undefined) continue
    const list = children.get(parent) ?? []
    list.push(child)
    children.set(parent, list)
  }
  const found: Array<number> = []
  const visit = (p: number) => {
    for (const c of children.get(p) ?? []) {
      if (isWatchdog(c)) continue
      if (isAlive(c)) found.push(c)
      visit(c)
    }
  }
  visit(pid)
  return found
}

/** Resident set size of `pid` in KiB (VmRSS), from /proc. */
export const rssKiB = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
  if (match === null) throw new Error(`no VmRSS for ${pid}`)
  return Number(match[1])
}

/** Waits until none of `pids` is alive (zombies count as gone); throws naming the survivors. */
export const untilGone = async (pids: ReadonlyArray<number>, timeoutMs = 10_000): Promise<void> => {
  await until(`processes ${pids.filter(isAlive).join(", ")} to exit`, () => pids.every((p) => !isAlive(p)), timeoutMs, 50).catch(
    (error) => {
      // Leave nothing behind even when the test fails.
      for (const p of pids) {
        try {
          process.kill(p, "SIGKILL")
        } catch {
          // gone
        }
      }
      throw error
    }
  )
}

// ---------------------------------------------------------------------------------------------
// Config

/** Writes GatewayOptions to a temp file and returns its path. */
export const writeConfig = (options: { backends: ReadonlyArray<BackendConfigInput> } & Record<string, unknown>): string => {
  const file = join(tempDir("agentify-hardening-config-"), "agentify.json")
  writeFileSync(file, JSON.stringify(options))
  return file
}

export { cleanEnv, isAlive }

/**
 * The end every newline-framed gateway of these tests must reach: stdin closed, exit code 0, every
 * process of `tree` (its backends and theirs) gone, and nothing but frames on stdout.
 */
export const closeCleanly = async (client: Client, tree: ReadonlyArray<number> = descendants(client.pid)): Promise<void> => {
  const { code } = await client.close()
  expect(code).toBe(0)
  await untilGone(tree)
  assertOnlyFrames(client.stdout())
}
