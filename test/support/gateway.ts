/**
 * Drives the built CLI (`dist/bin.js`) as a real client would, over its stdin/stdout, keeping
 * every byte of stdout so tests can check that nothing but frames was ever written there.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
export const BIN = join(ROOT, "dist", "bin.js")
export const FIXTURE_SERVER = join(ROOT, "test", "fixtures", "mcp-server.mjs")

export const tempDir = (prefix = "agentify-") => mkdtempSync(join(tmpdir(), prefix))

/** An environment without the developer's own OpenAI settings or config. */
export const cleanEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "AGENTIFY_CONFIG", "LOG_LEVEL", "DEBUG_PORT"]) {
    delete env[name]
  }
  return { ...env, ...extra }
}

export interface GatewayProcess {
  readonly child: ChildProcess
  /** Every byte written to stdout so far. */
  readonly stdout: () => Buffer
  readonly stderr: () => string
  /** Sends one message as a newline-delimited JSON frame (or raw text as given). */
  readonly send: (message: unknown) => void
  readonly sendRaw: (text: string) => void
  /** Sends a request and resolves with its reply. */
  readonly request: (method: string, params?: unknown, id?: string | number) => Promise<any>
  /** Resolves with the first parsed message matching `predicate`. */
  readonly waitFor: (predicate: (message: any) => boolean, timeoutMs?: number) => Promise<any>
  /** Every parsed stdout message (ndjson framing). */
  readonly messages: () => Array<any>
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  readonly close: () => Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

let nextId = 1

export const startGateway = (
  options: { args?: ReadonlyArray<string>; env?: NodeJS.ProcessEnv; cwd?: string } = {}
): GatewayProcess => {
  const child = spawn(process.execPath, [BIN, ...(options.args ?? [])], {
    cwd: options.cwd ?? tempDir(),
    env: options.env ?? cleanEnv(),
    stdio: ["pipe", "pipe", "pipe"]
  })
  const out: Array<Buffer> = []
  let err = ""
  const parsed: Array<any> = []
  let pendingText = ""
  const waiters = new Set<{ predicate: (m: any) => boolean; resolve: (m: any) => void }>()
  child.stdout!.on("data", (chunk: Buffer) => {
    out.push(chunk)
    pendingText += chunk.toString("utf8")
    let nl: number
    while ((nl = pendingText.indexOf("\n")) >= 0) {
      const line = pendingText.slice(0, nl)
      pendingText = pendingText.slice(nl + 1)
      if (line.trim() === "") continue
      let message: any
      try {
        message = JSON.parse(line)
      } catch {
        message = { __notJson: line }
      }
      parsed.push(message)
      for (const waiter of [...waiters]) {
        if (waiter.predicate(message)) {
          waiters.delete(waiter)
          waiter.resolve(message)
        }
      }
    }
  })
  child.stderr!.on("data", (chunk: Buffer) => {
    err += chunk.toString("utf8")
  })
  const exited = once(child, "exit").then(([code, signal]) => ({ code, signal })) as Promise<{
    code: number | null
    signal: NodeJS.Signals | null
  }>

  const waitFor = (predicate: (m: any) => boolean, timeoutMs = 20_000) =>
    new Promise<any>((resolve, reject) => {
      const found = parsed.find(predicate)
      if (found !== undefined) return resolve(found)
      const waiter = { predicate, resolve }
      waiters.add(waiter)
      setTimeout(() => {
        if (waiters.delete(waiter)) reject(new Error(`timed out waiting for a message; stderr:\n${err.slice(-3000)}`))
      }, timeoutMs)
    })

  const sendRaw = (text: string) => {
    child.stdin!.write(text)
  }
  const send = (message: unknown) => sendRaw(`${JSON.stringify(message)}\n`)
  const request = (method: string, params?: unknown, id: string | number = `t${nextId++}`) => {
    send({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) })
    return waitFor((m) => m.id === id && ("result" in m || "error" in m))
  }
  const close = async () => {
    child.stdin!.end()
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
    const result = await exited
    clearTimeout(timer)
    return result
  }
  return {
    child,
    stdout: () => Buffer.concat(out),
    stderr: () => err,
    send,
    sendRaw,
    request,
    waitFor,
    messages: () => parsed,
    exited,
    close
  }
}

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

/** Parses a Content-Length framed stdout into its messages, checking every byte belongs to a frame. */
export const parseContentLength = (stdout: Buffer): Array<any> => {
  const messages: Array<any> = []
  let rest = stdout
  while (rest.length > 0) {
    const headerEnd = rest.indexOf("\r\n\r\n")
    if (headerEnd < 0) throw new Error(`trailing bytes outside a frame: ${JSON.stringify(rest.toString("utf8"))}`)
    const header = rest.subarray(0, headerEnd).toString("latin1")
    const match = /^Content-Length: (\d+)$/i.exec(header)
    if (match === null) throw new Error(`bad header block: ${JSON.stringify(header)}`)
    const length = Number(match[1])
    const body = rest.subarray(headerEnd + 4, headerEnd + 4 + length)
    if (body.length !== length) throw new Error("truncated frame")
    const message = JSON.parse(body.toString("utf8"))
    if (message.jsonrpc !== "2.0") throw new Error("not a JSON-RPC 2.0 frame")
    messages.push(message)
    rest = rest.subarray(headerEnd + 4 + length)
  }
  return messages
}

/** Whether a process with this pid is alive. */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
