/**
 * MCP Apps (`io.modelcontextprotocol/ui`) through the aggregate: a server on the SDK that gates its
 * UI tools on the client's extension (test/fixtures/apps-server.mjs), behind the gateway over stdio
 * (the client's extension relayed to it) and over HTTP (many clients: the gateway gates for each).
 * The app-only tool is never offered to the gateway's model nor declared to code mode, and the app
 * calls its server's own tool names through /mcp.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { connectSdk } from "../support/sdkClient.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cleanEnv, ROOT, tempDir } from "../support/stdioClient.js"
import { firstText } from "../support/mcpFixture.js"
import { type HttpGateway, startHttpGateway } from "../support/httpClient.js"
import { startFakeOpenAI, type FakeOpenAI } from "../support/fakeOpenAI.js"
import { until } from "../support/process.js"

const APPS = join(ROOT, "test", "fixtures", "apps-server.mjs")
const UI = { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } }
const APP_URI = "ui://chart/app.html?theme=dark#top"
const backend = (id: string) => ({ id, command: process.execPath, args: [APPS] })
const names = async (client: Client) => (await client.listTools()).tools.map((t) => t.name)

describe("MCP Apps over stdio: the client's extension reaches the backend", () => {
  let model: FakeOpenAI
  beforeAll(async () => {
    model = await startFakeOpenAI({ text: "nothing to do" })
  })
  afterAll(async () => {
    await model.close()
  })

  const start = async (capabilities: Record<string, unknown>) => {
    const dir = tempDir()
    const config = join(dir, "gateway.json")
    writeFileSync(config, JSON.stringify({ backends: [backend("apps")] }))
    const { client } = await connectSdk(new Client({ name: "host", version: "1.0.0" }, { capabilities }), {
      config,
      cwd: dir,
      env: cleanEnv({ OPENAI_API_KEY: "sk-test-apps-0000000000000000", OPENAI_BASE_URL: model.baseUrl })
    })
    await until("the backend's tools", async () => (await names(client)).includes("apps__weather"))
    return client
  }

  it("a host that renders apps gets the UI tools, calls the app's own tool names, reads the app unchanged", async () => {
    const client = await start(UI)
    try {
      const tools = await client.listTools()
      expect(tools.tools.map((t) => t.name)).toEqual(expect.arrayContaining(["apps__show_chart", "apps__refresh_chart"]))
      expect(tools.tools.find((t) => t.name === "apps__show_chart")?._meta).toEqual({ ui: { resourceUri: APP_URI } })
      // The app calls its server's tools by their own names.
      expect(firstText(await client.callTool({ name: "refresh_chart", arguments: { city: "Oslo" } }))).toBe("fresh data for Oslo")
      const read = await client.readResource({ uri: APP_URI })
      expect(read.contents[0]).toMatchObject({ uri: APP_URI, text: "<html><body>chart</body></html>" })

      // The gateway's model is offered the UI tool, never the app-only one; code mode does not declare it.
      const before = model.requests.length
      await client.callTool({ name: "agentify_orchestrate", arguments: { query: "weather in Oslo", maxSteps: 1 } })
      const offered = (model.requests[before]?.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)
      expect(offered).toEqual(expect.arrayContaining(["apps__weather", "apps__show_chart"]))
      expect(offered).not.toContain("apps__refresh_chart")
      const runCode = (await client.listTools()).tools.find((t) => t.name === "agentify_run_code")!
      expect(runCode.description).toContain("show_chart(")
      expect(runCode.description).not.toContain("refresh_chart")
      const script = (await client.callTool({
        name: "agentify_run_code",
        arguments: {
          code: `let refused = ""
            try { await callTool("apps__refresh_chart", { city: "Oslo" }) } catch (e) { refused = e.message }
            return { declared: typeof tools.apps.refresh_chart, refused }`
        }
      })) as unknown as { structuredContent: { result: unknown } }
      expect(script.structuredContent.result).toEqual({ declared: "undefined", refused: "Unknown tool: apps__refresh_chart" })
    } finally {
      await client.close()
    }
  })

  it("a host that renders no apps gets neither UI tool (the backend was told so)", async () => {
    const client = await start({})
    try {
      const listed = await names(client)
      expect(listed).toContain("apps__weather")
      expect(listed.filter((n) => n.includes("chart"))).toEqual([])
    } finally {
      await client.close()
    }
  })
})

describe("MCP Apps over HTTP: one gateway, hosts with and without apps", () => {
  let gateway: HttpGateway
  beforeAll(async () => {
    gateway = await startHttpGateway({ config: { backends: [backend("apps"), backend("more")] } })
  })
  afterAll(async () => {
    await gateway.close()
  })
  const connect = async (capabilities: Record<string, unknown>) => {
    const client = new Client({ name: "host", version: "1.0.0" }, { capabilities })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp`)))
    await until("both backends' tools", async () => (await names(client)).filter((n) => n.endsWith("__weather")).length === 2)
    return client
  }

  it("lists the UI tools to the host that renders apps only; an own name two backends share is refused, naming both", async () => {
    const host = await connect(UI)
    const plain = await connect({})
    try {
      expect(await names(host)).toEqual(
        expect.arrayContaining(["apps__show_chart", "apps__refresh_chart", "more__refresh_chart"])
      )
      expect((await names(plain)).filter((n) => n.includes("chart"))).toEqual([])
      const ambiguous = await host.callTool({ name: "refresh_chart", arguments: { city: "Oslo" } }).catch((e) => e)
      expect(ambiguous.code).toBe(-32602)
      expect(ambiguous.message).toContain("apps__refresh_chart")
      expect(ambiguous.message).toContain("more__refresh_chart")
      expect(firstText(await host.callTool({ name: "apps__refresh_chart", arguments: { city: "Oslo" } }))).toBe(
        "fresh data for Oslo"
      )
    } finally {
      await host.close()
      await plain.close()
    }
  })
})
