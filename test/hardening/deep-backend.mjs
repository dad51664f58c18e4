#!/usr/bin/env node
/**
 * A minimal MCP server whose replies are nested too deeply for a recursive JSON encoder:
 * `deep_result` answers with a result holding an object 100,000 levels deep, `deep_error` with
 * a JSON-RPC error whose `data` is that deep. JSON.parse reads such text fine; JSON.stringify
 * overflows the stack. A gateway must still give its client one reply for each call.
 */
import { createInterface } from "node:readline"

const DEPTH = 100_000
const deep = `${'{"a":'.repeat(DEPTH)}1${"}".repeat(DEPTH)}`
const tools = [
  { name: "deep_result", description: "A result nested 100,000 levels deep", inputSchema: { type: "object" } },
  { name: "deep_error", description: "An error whose data is nested 100,000 levels deep", inputSchema: { type: "object" } }
]
const send = (text) => process.stdout.write(text + "\n")
const reply = (id, result) => send(JSON.stringify({ jsonrpc: "2.0", id, result }))

createInterface({ input: process.stdin }).on("line", (line) => {
  let m
  try {
    m = JSON.parse(line)
  } catch {
    return
  }
  if (m.id === undefined || m.id === null || typeof m.method !== "string") return
  switch (m.method) {
    case "initialize":
      return reply(m.id, {
        protocolVersion: m.params?.protocolVersion ?? "2025-11-25",
        capabilities: { tools: {} },
        serverInfo: { name: "deep", version: "1" }
      })
    case "tools/list":
      return reply(m.id, { tools })
    case "tools/call":
      if (m.params?.name === "deep_result")
        return send(`{"jsonrpc":"2.0","id":${JSON.stringify(m.id)},"result":{"content":[],"structuredContent":${deep}}}`)
      if (m.params?.name === "deep_error")
        return send(`{"jsonrpc":"2.0","id":${JSON.stringify(m.id)},"error":{"code":-32000,"message":"too deep","data":${deep}}}`)
      return send(JSON.stringify({ jsonrpc: "2.0", id: m.id, error: { code: -32602, message: "unknown tool" } }))
    default:
      return reply(m.id, {})
  }
})
process.stdin.on("end", () => process.exit(0))
