#!/usr/bin/env node
// The gateway as the client under test of the conformance suite's client authorization scenarios
// (`conformance client --command "node scripts/conformance-client.mjs"`): the scenario's server URL
// (the last argument) becomes a remote backend with `auth: "oauth"`; `mcp-agentify auth` signs in
// (the scenario's authorization server approves at once: its redirect is followed here, as a
// browser would); then the gateway serves a client that lists the backend's tools and calls each.
// MCP_CONFORMANCE_CONTEXT may hold a pre-registered client (client_id, client_secret), used as the
// configured client, or as client-credentials for the client_credentials scenario.
import { spawn } from "node:child_process"
import { once } from "node:events"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const BIN = join(root, "dist", "bin.js")
const url = process.argv.at(-1)
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? ""
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}")
const dir = mkdtempSync(join(tmpdir(), "agentify-conformance-client-"))
const env = { ...process.env, AGENTIFY_TOKEN_DIR: join(dir, "tokens"), LOG_LEVEL: "warn" }

const machine = /client-credentials/.test(scenario)
const auth = {
  type: "oauth",
  // The suite's own Client ID Metadata Document, configured as a user who hosts one would; used
  // only where the authorization server says it accepts such documents.
  clientMetadataUrl: "https://conformance-test.local/client-metadata.json",
  ...(context.client_id === undefined ? {} : { clientId: context.client_id }),
  ...(context.client_secret === undefined ? {} : { clientSecret: context.client_secret }),
  ...(machine ? { grant: "client_credentials" } : {})
}
const config = join(dir, "gateway.json")
writeFileSync(config, JSON.stringify({ backends: [{ id: "server", url, type: "streamable-http", auth }] }))

/** What a browser does with a sign-in page the scenario's server approves at once: follows its redirects. */
const follow = async (link) => {
  let next = link
  for (let hop = 0; hop < 10 && next !== undefined; hop++) {
    const response = await fetch(next, { redirect: "manual" })
    const location = response.headers.get("location")
    await response.body?.cancel()
    next = location === null ? undefined : new URL(location, next).href
  }
}

/** `mcp-agentify auth`, with the authorization server's redirects followed to the loopback callback. */
const signIn = async () => {
  const child = spawn(process.execPath, [BIN, "auth", "server", "--config", config, "--no-browser"], {
    env,
    stdio: ["ignore", "pipe", "inherit"]
  })
  let out = ""
  child.stdout.on("data", (chunk) => {
    out += chunk
    process.stderr.write(chunk)
  })
  const exited = once(child, "exit")
  const deadline = Date.now() + 20_000
  let link
  while ((link = /^(https?:\/\/\S+)$/m.exec(out)?.[1]) === undefined && Date.now() < deadline) {
    if (child.exitCode !== null) break
    await new Promise((r) => setTimeout(r, 50))
  }
  if (link !== undefined) await follow(link)
  const [code] = await exited
  if (code !== 0) throw new Error(`mcp-agentify auth exited ${code}`)
}

try {
  if (!machine) await signIn()
  // A client that takes URL-mode elicitation: the gateway asks its user to sign in again for more
  // scope (a step-up) that way; the page is "opened" (its redirects followed) and accepted.
  const client = new Client(
    { name: "mcp-agentify-conformance", version: "1.0.0" },
    { capabilities: { elicitation: { url: {} } } }
  )
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    if (request.params.mode !== "url") return { action: "decline" }
    process.stderr.write(`asked to open ${request.params.url}\n`)
    void follow(request.params.url)
    return { action: "accept" }
  })
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [BIN, "--config", config], env, stderr: "inherit" })
  )
  const { tools } = await client.listTools()
  for (const tool of tools.filter((t) => t.name.startsWith("server__"))) {
    const result = await client.callTool({ name: tool.name, arguments: {} }).catch((error) => ({ error: String(error) }))
    process.stderr.write(`${tool.name}: ${JSON.stringify(result).slice(0, 200)}\n`)
  }
  await client.close()
} catch (error) {
  process.stderr.write(`conformance client: ${error.message}\n`)
  process.exitCode = 1
}
