#!/usr/bin/env node
/**
 * The benchmarks' reference point, never a product: the least a stdio MCP proxy can do. It spawns
 * the server given on its command line and relays newline-delimited JSON-RPC both ways, renaming
 * ids and stripping the `<backendId>__` prefix of tool names, with no validation, no Effect, no
 * cancellation, no timeouts. What it costs is what any proxy process costs on this machine (two
 * more pipe hops per call); what the gateway costs beyond it is the gateway's own work.
 *
 *   node bare-proxy.mjs PREFIX COMMAND [ARGS...]
 */
import { spawn } from "node:child_process"

const [prefix, command, ...args] = process.argv.slice(2)
const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] })
const pending = new Map()
let nextId = 1

const lines = (stream, onLine) => {
  let buffer = ""
  stream.setEncoding("utf8")
  stream.on("data", (chunk) => {
    buffer += chunk
    let nl
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl)
      buffer = buffer.slice(nl + 1)
      if (line.trim() !== "") onLine(JSON.parse(line))
    }
  })
}

lines(process.stdin, (message) => {
  if (message.id === undefined) return child.stdin.write(`${JSON.stringify(message)}\n`)
  const id = nextId++
  pending.set(id, message.id)
  let params = message.params
  if (message.method === "tools/call" && params.name.startsWith(prefix))
    params = { ...params, name: params.name.slice(prefix.length) }
  child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method: message.method, params })}\n`)
})
lines(child.stdout, (message) => {
  if (!pending.has(message.id)) return
  const id = pending.get(message.id)
  pending.delete(message.id)
  const reply =
    message.error === undefined ? { jsonrpc: "2.0", id, result: message.result } : { jsonrpc: "2.0", id, error: message.error }
  process.stdout.write(`${JSON.stringify(reply)}\n`)
})
process.stdin.on("end", () => {
  child.kill()
  process.exit(0)
})
