/**
 * The built CLI serving Streamable HTTP (`--http 127.0.0.1:0`), and a raw HTTP client for it that
 * reads JSON and SSE replies, so tests can check every status code and header as a client sees them.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { BIN, cleanEnv, SCRIPTED_GATEWAY, tempDir } from "./stdioClient.js"

export interface HttpGateway {
  readonly child: ChildProcess
  /** `http://127.0.0.1:PORT` */
  readonly base: string
  readonly port: number
  readonly stderr: () => string
  /** Every byte the process wrote to stdout (must stay empty over HTTP). */
  readonly stdout: () => string
  readonly close: () => Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

export interface StartOptions {
  /** GatewayOptions written to a config file. */
  readonly config?: unknown
  readonly args?: ReadonlyArray<string>
  readonly env?: Record<string, string>
  /** Run test/support/scripted-gateway.mjs (a scripted model) instead of dist/bin.js. */
  readonly scripted?: boolean
  /** The address to bind, 127.0.0.1:0 unless told otherwise. */
  readonly address?: string
}

/** Starts the gateway with `--http` and resolves once it is listening. */
export const startHttpGateway = async (options: StartOptions = {}): Promise<HttpGateway> => {
  const dir = tempDir()
  const args: Array<string> = ["--http", options.address ?? "127.0.0.1:0", "--log-level", "debug"]
  if (options.config !== undefined) {
    const file = join(dir, "gateway.json")
    writeFileSync(file, JSON.stringify(options.config))
    args.push("--config", file)
  }
  args.push(...(options.args ?? []))
  const child = spawn(process.execPath, [options.scripted ? SCRIPTED_GATEWAY : BIN, ...args], {
    cwd: dir,
    env: cleanEnv(options.env ?? {}),
    stdio: ["ignore", "pipe", "pipe"]
  })
  let err = ""
  let out = ""
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")))
  const exited = once(child, "exit").then(([code, signal]) => ({ code, signal })) as Promise<{
    code: number | null
    signal: NodeJS.Signals | null
  }>
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the gateway did not start listening; stderr:\n${err.slice(-3000)}`)), 30_000)
    child.stderr!.on("data", (chunk: Buffer) => {
      err += chunk.toString("utf8")
      const match = /serving MCP over Streamable HTTP at http:\/\/[^\s"]+:(\d+)\/mcp/.exec(err)
      if (match !== null) {
        clearTimeout(timer)
        resolve(Number(match[1]))
      }
    })
    void exited.then((e) => {
      clearTimeout(timer)
      reject(new Error(`the gateway exited (${e.code ?? e.signal}); stderr:\n${err.slice(-3000)}`))
    })
  })
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
    const result = await exited
    clearTimeout(timer)
    return result
  }
  return { child, base: `http://127.0.0.1:${port}`, port, stderr: () => err, stdout: () => out, close }
}

export interface Reply {
  readonly status: number
  readonly headers: Headers
  /** The JSON body, or every SSE `data:` message in order. */
  readonly messages: Array<any>
  readonly contentType: string
  readonly text: string
}

/** Parses an SSE body into its `data:` payloads (JSON). */
export const parseSse = (text: string): Array<any> =>
  text
    .split(/\n\n/)
    .map((event) =>
      event
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trimStart())
        .join("\n")
    )
    .filter((data) => data !== "")
    .map((data) => JSON.parse(data))

export const JSON_AND_SSE = "application/json, text/event-stream"

/** One HTTP request, its reply read whole. */
export const send = async (
  url: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string>; raw?: string } = {}
): Promise<Reply> => {
  const headers: Record<string, string> = {
    ...(init.body !== undefined || init.raw !== undefined ? { "content-type": "application/json", accept: JSON_AND_SSE } : {}),
    ...init.headers
  }
  const response = await fetch(url, {
    method: init.method ?? (init.body !== undefined || init.raw !== undefined ? "POST" : "GET"),
    headers,
    ...(init.raw !== undefined ? { body: init.raw } : init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
  })
  const text = await response.text()
  const contentType = response.headers.get("content-type") ?? ""
  const messages = contentType.startsWith("text/event-stream") ? parseSse(text) : text === "" ? [] : [JSON.parse(text)]
  return { status: response.status, headers: response.headers, messages, contentType, text }
}

export const initializeParams = (name = "test-client", extra: Record<string, unknown> = {}) => ({
  protocolVersion: "2025-11-25",
  capabilities: {},
  clientInfo: { name, version: "1.0.0" },
  ...extra
})

/** Opens a session on `url` (with `headers` on each request: a token) and returns its id (and the initialize reply). */
export const openSession = async (url: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) => {
  const reply = await send(url, {
    body: { jsonrpc: "2.0", id: 0, method: "initialize", params: initializeParams("raw", extra) },
    headers
  })
  const sessionId = reply.headers.get("mcp-session-id")
  if (sessionId === null) throw new Error(`initialize gave no session: ${reply.status} ${reply.text}`)
  await send(url, {
    body: { jsonrpc: "2.0", method: "notifications/initialized" },
    headers: { "mcp-session-id": sessionId, ...headers }
  })
  return { sessionId, reply }
}

/** A request within a session. */
export const call = (
  url: string,
  sessionId: string,
  id: number | string,
  method: string,
  params?: unknown,
  headers: Record<string, string> = {}
) =>
  send(url, {
    body: { jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) },
    headers: { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25", ...headers }
  })

/**
 * The SEP-2243 headers a 2026-07-28 client sends with `body` (as the SDK's client does): the
 * method, and the name of what it calls, reads or asks about (a task's id). Plain ASCII names only
 * (what the tests use).
 */
export const sepHeaders = (body: { method: string; params?: any }): Record<string, string> => {
  const named: Record<string, string> = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId"
  }
  const key = named[body.method]
  const name = key === undefined ? undefined : body.params?.[key]
  return { "mcp-method": body.method, ...(typeof name === "string" ? { "mcp-name": name } : {}) }
}

/** One 2026-07-28 request to `url` (JSON reply), its `_meta` declaring `capabilities`; `headers` besides (a token). */
export const postStateless = async (
  url: string,
  method: string,
  params: Record<string, unknown>,
  capabilities: Record<string, unknown> = {},
  headers: Record<string, string> = {}
): Promise<{ status: number; headers: Headers; body: any }> => {
  const body = {
    jsonrpc: "2.0",
    id: 1,
    method,
    params: {
      ...params,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities
      }
    }
  }
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json",
      "mcp-protocol-version": "2026-07-28",
      ...sepHeaders(body),
      ...headers
    },
    body: JSON.stringify(body)
  })
  return { status: res.status, headers: res.headers, body: await res.json() }
}
