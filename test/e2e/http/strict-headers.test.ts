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
})
