/**
 * The benchmarks' Streamable HTTP client: one MCP session over keep-alive connections (node:http
 * with a keep-alive agent), requests POSTed as JSON, replies read as JSON or SSE, whichever the
 * server sends. Like `RpcClient`, it costs the same whichever server it talks to, and a reply's
 * latency runs from the request's write to the end of its body.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { closeSync, openSync } from "node:fs"
import { Agent, request as httpRequest } from "node:http"
import { connect, createServer } from "node:net"
import { performance } from "node:perf_hooks"
import { type Reply, stderrTail } from "./client.js"

/** A free TCP port on 127.0.0.1. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })

/** The message with `id` in an SSE body (`data:` lines), or a JSON body. */
const replyIn = (body: string, contentType: string | undefined, id: number): any => {
  if (contentType?.startsWith("text/event-stream")) {
    for (const line of body.split("\n")) {
      if (!line.startsWith("data:")) continue
      const message = JSON.parse(line.slice(5))
      if (message.id === id) return message
    }
    return undefined
  }
  return body === "" ? undefined : JSON.parse(body)
}

export class HttpRpcClient {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 256 })
  private readonly target: URL
  private nextId = 1
  sessionId: string | undefined
  protocolVersion = "2025-06-18"

  constructor(
    url: string,
    /** The server's process, for CPU and memory figures. */
    readonly process: ChildProcess | undefined,
    private readonly stderrFile?: string
  ) {
    this.target = new URL(url)
  }

  get pid(): number {
    return this.process!.pid!
  }

  private post(message: unknown): Promise<{ status: number; headers: Record<string, unknown>; body: string; at: number }> {
    const payload = JSON.stringify(message)
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          agent: this.agent,
          host: this.target.hostname,
          port: this.target.port,
          path: this.target.pathname,
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "content-length": Buffer.byteLength(payload),
            ...(this.sessionId === undefined
              ? {}
              : { "mcp-session-id": this.sessionId, "mcp-protocol-version": this.protocolVersion })
          }
        },
        (res) => {
          res.setEncoding("utf8")
          let body = ""
          res.on("data", (chunk: string) => (body += chunk))
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, at: performance.now() }))
          res.on("error", reject)
        }
      )
      req.on("error", reject)
      req.end(payload)
    })
  }

  async request(method: string, params?: unknown): Promise<Reply> {
    const id = this.nextId++
    const sentAt = performance.now()
    try {
      const response = await this.post({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) })
      const message = replyIn(response.body, response.headers["content-type"] as string | undefined, id)
      if (message === undefined) {
        return {
          error: { code: -1, message: `HTTP ${response.status}: ${response.body.slice(0, 200)}` },
          ms: NaN,
          at: response.at
        }
      }
      return { result: message.result, error: message.error, ms: response.at - sentAt, at: response.at }
    } catch (error) {
      return { error: { code: -1, message: (error as Error).message }, ms: NaN, at: performance.now() }
    }
  }

  async initialize(): Promise<Reply> {
    const sentAt = performance.now()
    const response = await this.post({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: {
        protocolVersion: this.protocolVersion,
        capabilities: {},
        clientInfo: { name: "mcp-agentify-bench", version: "1" }
      }
    })
    const message = replyIn(response.body, response.headers["content-type"] as string | undefined, 0)
    if (message?.result === undefined)
      throw new Error(`initialize failed: ${response.status} ${response.body.slice(0, 500)}${this.stderrTail()}`)
    const session = response.headers["mcp-session-id"]
    this.sessionId = typeof session === "string" ? session : undefined
    await this.post({ jsonrpc: "2.0", method: "notifications/initialized" })
    return { result: message.result, ms: response.at - sentAt, at: response.at }
  }

  stderrTail(): string {
    return stderrTail(this.stderrFile)
  }

  /** Closes the connections and stops the server process (SIGTERM, SIGKILL after 5 s). */
  async close(): Promise<void> {
    this.agent.destroy()
    const child = this.process
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once("exit", resolve))
    child.kill("SIGTERM")
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
    await exited
    clearTimeout(timer)
  }
}

/** Starts an HTTP server process and resolves once its port accepts connections. */
export const startHttpServer = async (
  command: string,
  args: ReadonlyArray<string>,
  url: string,
  options: { cwd?: string; env?: NodeJS.ProcessEnv; stderrFile?: string } = {}
): Promise<HttpRpcClient> => {
  const errFd = openSync(options.stderrFile ?? "/dev/null", "a")
  const child = spawn(command, args, {
    stdio: ["ignore", errFd, errFd],
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.env === undefined ? {} : { env: options.env })
  })
  closeSync(errFd)
  const client = new HttpRpcClient(url, child, options.stderrFile)
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`${command} ${args.join(" ")} exited with ${child.exitCode}${client.stderrTail()}`)
    const target = new URL(url)
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(Number(target.port), target.hostname, () => {
        socket.destroy()
        resolve(true)
      })
      socket.once("error", () => resolve(false))
    })
    if (ok) return client
    if (Date.now() > deadline) throw new Error(`${url} never answered${client.stderrTail()}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
