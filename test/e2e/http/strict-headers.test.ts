/**
 * A remote backend of the 2026-07-28 revision that checks the SEP-2243 headers (as servers MUST):
 * the gateway sends `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*` its tools declare, computed
 * for the backend's own names, so such a server is usable through it.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { startGateway, tempDir } from "../../support/stdioClient.js"
import { startHttpGateway } from "../../support/httpClient.js"

const STRICT = fileURLToPath(new URL("../../fixtures/strict-headers-server.mjs", import.meta.url))

describe("a strict 2026-07-28 server over Streamable HTTP", () => {
  let server: ChildProcess
  let url: string
  beforeAll(async () => {
    server = spawn(process.execPath, [STRICT], { stdio: ["ignore", "pipe", "inherit"] })
    const [line] = (await once(server.stdout!, "data")) as [Buffer]
    url = `http://127.0.0.1:${JSON.parse(String(line)).port}/mcp`
  })
  afterAll(() => {
    server.kill("SIGKILL")
  })

  it("is ready behind the gateway, and its tools are called with the headers it checks, for its own names", async () => {
    const dir = tempDir()
    const config = join(dir, "agentify.json")
    writeFileSync(config, JSON.stringify({ mcpServers: { strict: { type: "http", url, namespace: "eu" } } }))
    const gateway = startGateway({ args: ["--config", config], cwd: dir })
    try {
      await gateway.initialize()
      const listed = await gateway.request("tools/list")
      expect(listed.result.tools.map((t: any) => t.name)).toEqual(expect.arrayContaining(["eu__echo", "eu__route"]))

      const echoed = await gateway.callTool("eu__echo", { text: "hello" })
      expect(echoed.result.content[0].text).toBe("hello")

      // Its HTTP 400 with -32021 is the backend's own answer: the client reads the code and the capability.
      const refused = await gateway.callTool("eu__needs_sampling", {})
      expect(refused.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } })

      const plain = await gateway.callTool("eu__route", { region: "eu-west-1", count: 3, note: "not a header" })
      expect(plain.result.structuredContent).toEqual({
        "mcp-method": "tools/call",
        "mcp-name": "route",
        "mcp-param-region": "eu-west-1",
        "mcp-param-count": "3",
        "mcp-protocol-version": "2026-07-28"
      })
      // A value a header cannot carry as it is travels Base64 in the revision's sentinel; an absent one not at all.
      const encoded = await gateway.callTool("eu__route", { region: " Zürich " })
      expect(encoded.result.structuredContent["mcp-param-region"]).toBe(
        `=?base64?${Buffer.from(" Zürich ").toString("base64")}?=`
      )
      expect(encoded.result.structuredContent["mcp-param-count"]).toBeUndefined()
    } finally {
      expect(await gateway.close()).toEqual({ code: 0, signal: null })
    }
    expect(gateway.stderr()).not.toContain("-32020")
  })

  it("is checked at the gateway's own endpoints: a 2026-07-28 client's headers must agree with its body (400, -32020)", async () => {
    const gateway = await startHttpGateway({ config: { mcpServers: { strict: { type: "http", url, namespace: "eu" } } } })
    const VERSION = "2026-07-28"
    const meta = { "io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {} }
    let id = 0
    const post = async (path: string, method: string, params: Record<string, unknown>, headers: Record<string, string>) => {
      const res = await fetch(`${gateway.base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json", "mcp-protocol-version": VERSION, ...headers },
        body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params: { ...params, _meta: meta } })
      })
      return { status: res.status, body: (await res.json()) as any }
    }
    const route = (args: Record<string, unknown>, headers: Record<string, string>, path = "/mcp", name = "eu__route") =>
      post(path, "tools/call", { name, arguments: args }, { "mcp-method": "tools/call", "mcp-name": name, ...headers })
    try {
      // Ready once the aggregate lists the backend's tools (it connects in the background).
      for (;;) {
        const listed = await post("/mcp", "tools/list", {}, { "mcp-method": "tools/list" })
        if (listed.body.result?.tools.some((t: any) => t.name === "eu__route")) break
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const refused = (r: { status: number; body: any }) => [r.status, r.body.error?.code]

      expect(refused(await post("/mcp", "tools/list", {}, { "Mcp-Method": "prompts/list" }))).toEqual([400, -32020])
      expect(refused(await post("/mcp", "tools/list", {}, {}))).toEqual([400, -32020])
      expect(refused(await post("/mcp", "tools/list", {}, { "MCP-METHOD": "TOOLS/LIST" }))).toEqual([400, -32020])
      expect((await post("/mcp", "tools/list", {}, { "MCP-METHOD": " tools/list\t" })).status).toBe(200)

      // The names the client sees at each endpoint: the namespaced one at /mcp, the backend's own at its endpoint.
      const ok = await route({ region: "eu-west-1", count: 3 }, { "mcp-param-region": "eu-west-1", "mcp-param-count": "3" })
      expect(ok.status).toBe(200)
      expect(ok.body.result.structuredContent).toMatchObject({ "mcp-name": "route", "mcp-param-region": "eu-west-1" })
      expect(refused(await route({ region: "x" }, { "mcp-name": "route", "mcp-param-region": "x" }))).toEqual([400, -32020])
      expect((await route({ region: "x" }, { "mcp-param-region": "x" }, "/servers/strict/mcp", "route")).status).toBe(200)
      expect(refused(await route({ region: "x" }, {}, "/mcp", "eu__route"))).toEqual([400, -32020])
      expect((await route({ region: "x" }, { "mcp-name": "  eu__route  ", "mcp-param-region": "x" })).status).toBe(200)

      // Mcp-Param-*: missing, different, Base64 (valid, badly padded, half-wrapped: literal).
      const missing = await route({ region: "eu-west-1" }, {})
      expect(refused(missing)).toEqual([400, -32020])
      expect(missing.body.error.message).toContain("Mcp-Param-Region")
      expect(refused(await route({ region: "eu-west-1" }, { "mcp-param-region": "us-east-1" }))).toEqual([400, -32020])
      const hello = Buffer.from("Hello").toString("base64")
      expect((await route({ region: "Hello" }, { "mcp-param-region": `=?base64?${hello}?=` })).status).toBe(200)
      expect(refused(await route({ region: "Hello" }, { "mcp-param-region": "=?base64?SGVsbG8?=" }))).toEqual([400, -32020])
      expect(refused(await route({ region: "Hello" }, { "mcp-param-region": "=?base64?SGVs!!!bG8=?=" }))).toEqual([400, -32020])
      expect((await route({ region: `=?base64?${hello}` }, { "mcp-param-region": `=?base64?${hello}` })).status).toBe(200)
      expect((await route({ region: "x", count: 2 }, { "mcp-param-region": "x", "mcp-param-count": "2" })).status).toBe(200)
      expect(refused(await route({ region: "x" }, { "mcp-param-region": "x", "mcp-param-count": "2" }))).toEqual([400, -32020])
    } finally {
      expect(await gateway.close()).toEqual({ code: 0, signal: null })
    }
  })
})
