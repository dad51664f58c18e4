#!/usr/bin/env node
/**
 * An MCP client in a process of its own, for "the client was killed" tests: it spawns the gateway
 * (argv after `--`) holding both ends of its stdio, initializes it with the config in
 * HOLDER_INIT_OPTIONS (JSON), starts the calls listed in HOLDER_CALLS (JSON array of tools/call
 * params, never answered in time on purpose), then prints `{"gateway": <pid>}` on its own stdout
 * and waits to be killed. Nothing else: the test SIGKILLs it and watches the gateway.
 */
import { spawn } from "node:child_process"

const sep = process.argv.indexOf("--")
const [command, ...args] = process.argv.slice(sep + 1)
const gateway = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] })
const init = JSON.parse(process.env.HOLDER_INIT_OPTIONS ?? "null")
const calls = JSON.parse(process.env.HOLDER_CALLS ?? "[]")
let buffer = ""
gateway.stdout.setEncoding("utf8")
gateway.stdout.on("data", (chunk) => {
  buffer += chunk
  let nl
  while ((nl = buffer.indexOf("\n")) >= 0) {
    const message = JSON.parse(buffer.slice(0, nl))
    buffer = buffer.slice(nl + 1)
    if (message.id === "init") {
      calls.forEach((params, i) =>
        gateway.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: `call${i}`, method: "tools/call", params }) + "\n")
      )
      // Give the calls a moment to reach the backend before reporting ready.
      setTimeout(() => process.stdout.write(JSON.stringify({ gateway: gateway.pid }) + "\n"), 300)
    }
  }
})
gateway.stdin.write(
  JSON.stringify({
    jsonrpc: "2.0",
    id: "init",
    method: "initialize",
    params: {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "holder", version: "1" },
      ...(init === null ? {} : { initializationOptions: init })
    }
  }) + "\n"
)
setInterval(() => {}, 1 << 30)
