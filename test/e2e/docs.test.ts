/**
 * docs/protocol.md kept true by the code: every method of the method tables, every error code,
 * every HTTP status the transport sends, every command-line option and every configuration key is
 * documented there. The lists come from the code itself, so adding one without a line in the docs
 * fails here.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { describe, expect, it } from "vitest"
import { USAGE } from "../../src/cli/Cli.js"
import { BACKEND_KEYS, EXPOSURE_KEYS, OPTION_KEYS, Profile } from "../../src/config/Config.js"
import { ErrorCode } from "../../src/protocol/Errors.js"
import { AGGREGATE_METHODS } from "../../src/gateway/methods/Aggregate.js"
import { ROOT, startGateway, tempDir } from "../support/stdioClient.js"
import { fixtureBackend } from "../support/mcpFixture.js"
import { ClientRequestSchema } from "@modelcontextprotocol/sdk/types.js"

const docs = readFileSync(join(ROOT, "docs", "protocol.md"), "utf8")
const source = (file: string) => readFileSync(join(ROOT, "src", file), "utf8")
const backticked = (name: string) => docs.includes(`\`${name}\``)

describe("docs/protocol.md", () => {
  it("documents every method the method tables answer, in either protocol era", async () => {
    // Asked of a running gateway: every method MCP defines for a client, the 2026-07-28 era's, and
    // those the aggregate's table names; each one answered (not -32601) must be documented.
    const sdk = (ClientRequestSchema as unknown as { options: Array<{ shape: { method: { value: string } } }> }).options.map(
      (o) => o.shape.method.value
    )
    const named: Array<string> = [...AGGREGATE_METHODS]
    const candidates = [
      ...new Set([...sdk, ...named, "server/discover", "subscriptions/listen", "tasks/update", "agentify/orchestrateTask"])
    ].filter((m) => m !== "shutdown" && m !== "exit")
    const config = join(tempDir(), "gateway.json")
    writeFileSync(config, JSON.stringify({ backends: [fixtureBackend("fx")] }))
    const answered = new Set<string>(named)
    const session = startGateway({ args: ["--config", config] })
    const stateless = startGateway({ args: ["--config", config] })
    try {
      await session.initialize()
      for (const method of candidates) {
        if ((await session.request(method, {})).error?.code !== -32601) answered.add(method)
      }
      // The stateless era: its first message decides; a listen stream is acknowledged, not answered.
      const meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { name: "docs", version: "1" }
      }
      for (const method of candidates) {
        if (method === "subscriptions/listen") {
          stateless.send({
            jsonrpc: "2.0",
            id: "listen",
            method,
            params: { _meta: meta, notifications: { toolsListChanged: true } }
          })
          const first = await stateless.waitFor(
            (m) => m.id === "listen" || m.method === "notifications/subscriptions/acknowledged"
          )
          if (first.error?.code !== -32601) answered.add(method)
        } else if ((await stateless.request(method, { _meta: meta })).error?.code !== -32601) answered.add(method)
      }
    } finally {
      await session.close()
      await stateless.close()
    }
    expect(answered.has("server/discover")).toBe(true)
    expect(answered.size).toBeGreaterThan(12)
    expect([...answered].filter((m) => !backticked(m))).toEqual([])
  }, 60_000)

  it("documents every error code", () => {
    const codes = Object.values(ErrorCode).map(String)
    expect(codes.filter((code) => !new RegExp(`^\\| ${code} \\|`, "m").test(docs))).toEqual([])
  })

  it("documents every HTTP status the transport sends", () => {
    // The transport's own refusals, and those of the sessions behind it (see gateway/clients).
    const http = [
      "transport/Http.ts",
      "transport/HttpAccess.ts",
      "transport/HttpHandOff.ts",
      "transport/HttpExchange.ts",
      "transport/HttpWire.ts",
      "gateway/clients/SharedSessions.ts",
      "gateway/clients/Protocol.ts"
    ]
      .map(source)
      .join("\n")
    const statuses = new Set([...http.matchAll(/(?:reject|json)\((\d{3})\b|status: (\d{3})\b/g)].map((m) => m[1] ?? m[2]!))
    expect(statuses.size).toBeGreaterThan(10)
    expect([...statuses].filter((status) => !new RegExp(`^\\| ${status}\\b`, "m").test(docs))).toEqual([])
  })

  it("documents every command-line option", () => {
    const options = [...new Set([...USAGE.matchAll(/--[a-z][a-z-]+/g)].map((m) => m[0]))]
    expect(options).toContain("--http")
    expect(options.filter((option) => !docs.includes(option))).toEqual([])
  })

  it("documents every endpoint of the debug UI", () => {
    const routes = [...source("debug/DebugServer.ts").matchAll(/case "(\/[^"]*)":/g)].map((m) => m[1]!)
    expect(routes).toContain("/api/mcptrace")
    expect(routes.filter((route) => !new RegExp(`\`GET ${route.replace(/[/]/g, "\\/")}[?\`]`).test(docs))).toEqual([])
    expect(docs).toContain("`POST /api/backends/<id>/restart`")
  })

  it("documents every GatewayOptions and BackendConfig key", () => {
    expect(OPTION_KEYS.filter((key) => !backticked(key))).toEqual([])
    expect(BACKEND_KEYS.filter((key) => !backticked(key))).toEqual([])
    expect(Object.keys(Profile.fields).filter((key) => !backticked(key))).toEqual([])
  })
})

describe("docs/configuration.md", () => {
  const page = readFileSync(join(ROOT, "docs", "configuration.md"), "utf8")
  it("says how to use every exposure key, profiles and their endpoints", () => {
    const keys = [...EXPOSURE_KEYS, "profiles", ...Object.keys(Profile.fields)]
    expect(keys.filter((key) => !page.includes(`\`${key}\``))).toEqual([])
    for (const text of ["/profiles/<name>/mcp", "--profile", "check --profile", "backend removed"]) expect(page).toContain(text)
  })
})

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) =>
  heading
    .replace(/^#+\s*/, "")
    .toLowerCase()
    .replace(/[^\w\- ]/g, "")
    .replace(/ /g, "-")

describe("README and docs/", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8")
  const pages = ["README.md", ...readdirSync(join(ROOT, "docs")).map((f) => `docs/${f}`)]

  it("the README is short and starts with the two commands", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(400)
    const firstBlock = readme.slice(readme.indexOf("```sh"), readme.indexOf("```", readme.indexOf("```sh") + 5))
    expect(firstBlock).toContain("npm install && npm start")
    expect(firstBlock).toContain("npm test")
  })

  it("every link between them reaches a page that exists, and a heading on it", () => {
    const broken: Array<string> = []
    for (const page of pages) {
      const text = readFileSync(join(ROOT, page), "utf8")
      for (const m of text.matchAll(/\]\(([^)\s#]*\.md)?(#[^)\s]*)?\)/g)) {
        const file = m[1] === undefined ? page : join(dirname(page), m[1])
        if (m[1] === undefined && m[2] === undefined) continue
        let target: string
        try {
          target = readFileSync(join(ROOT, file), "utf8")
        } catch {
          broken.push(`${page}: ${m[0]} (no such page)`)
          continue
        }
        const anchor = m[2]?.slice(1)
        if (anchor === undefined) continue
        const anchors = target
          .split("\n")
          .filter((line) => /^#{1,6} /.test(line))
          .map(anchorOf)
        if (!anchors.includes(anchor)) broken.push(`${page}: ${m[0]} (no such heading)`)
      }
    }
    expect(broken).toEqual([])
  })

  it("the project stands alone: no page points outside the repository", () => {
    for (const page of pages) expect(readFileSync(join(ROOT, page), "utf8")).not.toMatch(/\.\.\/shared|\]\(\.\.\/\.\.\//)
  })
})
