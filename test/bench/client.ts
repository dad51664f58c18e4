/**
 * The benchmarks' MCP client: newline-delimited JSON-RPC over a child's stdio, and nothing else.
 *
 * Hand-written so that the client costs the same, and as little as possible, whichever server it
 * talks to: one `JSON.stringify` and one `write` per request, one `JSON.parse` and a Map lookup
 * per reply. A reply's latency is taken in the `data` callback, before any promise resolves.
 * The child's stderr goes to a file (its logs must neither block it nor cost the client).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { closeSync, openSync, readFileSync } from "node:fs"
import { performance } from "node:perf_hooks"

interface Pending {
  readonly sentAt: number
  readonly resolve: (reply: Reply) => void
}

export interface Reply {
  readonly result?: any
  readonly error?: { code: number; message: string; data?: unknown }
  /** Milliseconds from the write of the request to the parse of its reply. */
  readonly ms: number
  /** When the reply was read (`performance.now()`). */
  readonly at: number
}

export interface SpawnOptions {
  readonly cwd?: string
  readonly env?: NodeJS.ProcessEnv
  /** Where the child's stderr goes (a file); default /dev/null. */
  readonly stderrFile?: string
}

/** The end of a server's stderr file, for error messages. */
export const stderrTail = (file: string | undefined): string => {
  if (file === undefined) return ""
  try {
    return `\nstderr:\n${readFileSync(file, "utf8").slice(-2_000)}`
  } catch {
    return ""
  }
}

export class RpcClient {
  readonly child: ChildProcess
  readonly spawnedAt: number
  private readonly pending = new Map<number, Pending>()
  private nextId = 1
  private buffer = ""
  private readonly stderrFile: string | undefined
  readonly exited: Promise<number | null>

  constructor(command: string, args: ReadonlyArray<string>, options: SpawnOptions = {}) {
    this.stderrFile = options.stderrFile
    const errFd = openSync(options.stderrFile ?? "/dev/null", "a")
    this.spawnedAt = performance.now()
    this.child = spawn(command, args, {
      stdio: ["pipe", "pipe", errFd],
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      ...(options.env === undefined ? {} : { env: options.env })
    })
    closeSync(errFd)
    this.child.stdout!.setEncoding("utf8")
    this.child.stdout!.on("data", this.onData)
    this.exited = new Promise((resolve) => this.child.once("exit", (code) => resolve(code)))
    this.child.once("exit", () => {
      for (const [, p] of this.pending) p.resolve({ error: { code: -1, message: "process exited" }, ms: NaN, at: NaN })
      this.pending.clear()
    })
  }

  /** Called with each notification's method and when it arrived (`performance.now()`). */
  onNotification: ((method: string, at: number) => void) | undefined = undefined

  get pid(): number {
    return this.child.pid!
  }

  private onData = (chunk: string) => {
    const now = performance.now()
    const text = this.buffer === "" ? chunk : this.buffer + chunk
    let start = 0
    let nl: number
    while ((nl = text.indexOf("\n", start)) !== -1) {
      const line = text.slice(start, nl)
      start = nl + 1
      if (line.length === 0) continue
      const message = JSON.parse(line)
      if (message.id === undefined && typeof message.method === "string") {
        this.onNotification?.(message.method, now)
        continue
      }
      if (typeof message.id !== "number") continue // a reply we did not ask for
      const p = this.pending.get(message.id)
      if (p === undefined) continue
      this.pending.delete(message.id)
      p.resolve({ result: message.result, error: message.error, ms: now - p.sentAt, at: now })
    }
    this.buffer = start === text.length ? "" : text.slice(start)
  }

  request(method: string, params?: unknown): Promise<Reply> {
    const id = this.nextId++
    const frame =
      params === undefined
        ? `{"jsonrpc":"2.0","id":${id},"method":"${method}"}\n`
        : `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${JSON.stringify(params)}}\n`
    return new Promise((resolve) => {
      this.pending.set(id, { sentAt: performance.now(), resolve })
      this.child.stdin!.write(frame)
    })
  }

  notify(method: string, params?: unknown): void {
    this.child.stdin!.write(
      params === undefined
        ? `{"jsonrpc":"2.0","method":"${method}"}\n`
        : `{"jsonrpc":"2.0","method":"${method}","params":${JSON.stringify(params)}}\n`
    )
  }

  /** The MCP handshake; resolves with the initialize reply (`ms` counts from the request). */
  async initialize(): Promise<Reply> {
    const reply = await this.request("initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "mcp-agentify-bench", version: "1" }
    })
    if (reply.error !== undefined) throw new Error(`initialize failed: ${JSON.stringify(reply.error)}${this.stderrTail()}`)
    this.notify("notifications/initialized")
    return reply
  }

  stderrTail(): string {
    return stderrTail(this.stderrFile)
  }

  /** Ends stdin (the stdio transport's "shut down") and waits for the exit, SIGKILL after 5 s. */
  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return
    this.child.stdin!.end()
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 5_000)
    await this.exited
    clearTimeout(timer)
  }
}

// ---------------------------------------------------------------------------------------------
// Load

export interface Round {
  /** Every call's latency, ms. */
  readonly latencies: Float64Array
  readonly calls: number
  readonly seconds: number
  readonly errors: number
}

/**
 * A closed loop: `concurrency` workers, each sending its next request as soon as its previous
 * reply arrives, until `durationMs` has passed. Calls that fail are counted, not timed.
 */
/** Anything that sends a request and reads its reply: stdio (`RpcClient`) or HTTP (`HttpRpcClient`). */
export interface Requester {
  readonly request: (method: string, params?: unknown) => Promise<Reply>
  readonly stderrTail: () => string
}

export const runRound = async (
  client: Requester,
  method: string,
  params: unknown,
  concurrency: number,
  durationMs: number
): Promise<Round> => {
  const latencies: Array<number> = []
  let errors = 0
  let firstError: unknown
  const start = performance.now()
  const deadline = start + durationMs
  const worker = async () => {
    while (performance.now() < deadline) {
      const reply = await client.request(method, params)
      if (reply.error !== undefined || reply.result?.isError === true) {
        errors++
        firstError ??= reply.error ?? reply.result
        if (errors > 100) throw new Error(`too many failed calls: ${JSON.stringify(firstError)}${client.stderrTail()}`)
      } else {
        latencies.push(reply.ms)
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  const seconds = (performance.now() - start) / 1000
  return { latencies: Float64Array.from(latencies), calls: latencies.length, seconds, errors }
}

/** A fixed number of calls at a concurrency (warm-up, memory load). */
export const runCalls = async (
  client: Requester,
  method: string,
  params: unknown | ((i: number) => unknown),
  concurrency: number,
  total: number
): Promise<void> => {
  let next = 0
  const worker = async () => {
    while (next < total) {
      const i = next++
      const reply = await client.request(method, typeof params === "function" ? (params as (i: number) => unknown)(i) : params)
      if (reply.error !== undefined) throw new Error(`${method} failed: ${JSON.stringify(reply.error)}${client.stderrTail()}`)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

// ---------------------------------------------------------------------------------------------
// Statistics

export const percentile = (sorted: ArrayLike<number>, p: number): number => {
  if (sorted.length === 0) return NaN
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]!
}

export const sortedCopy = (values: ArrayLike<number>): Float64Array => Float64Array.from(values).sort()

export const median = (values: ReadonlyArray<number>): number => percentile(sortedCopy(values), 50)
