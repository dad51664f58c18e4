/**
 * Streamable HTTP end to end: the built CLI with `--http`, in front of the fixture server and the
 * real server-filesystem, driven by the official SDK's StreamableHTTPClientTransport (aggregate and
 * per-server) and by raw HTTP for every status code the transport promises.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ListResourcesResultSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { mkdirSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { serverFilesystemEntry } from "../../../src/config/Config.js"
import { execFile } from "node:child_process"
import { ROOT, sleep, tempDir } from "../../support/stdioClient.js"
import { call, type HttpGateway, openSession, startHttpGateway } from "../../support/httpClient.js"
import { firstText, FIXTURE_TOOL_COUNT, fixtureBackend } from "../../support/mcpFixture.js"

const sdkClient = async (url: string, name = "http-e2e") => {
  const client = new Client({ name, version: "1.0.0" })
  const transport = new StreamableHTTPClientTransport(new URL(url))
  await client.connect(transport)
  return { client, transport }
}

describe("Streamable HTTP: the aggregate and per-server endpoints with the SDK client", () => {
  let gateway: HttpGateway
  let root: string
  beforeAll(async () => {
    root = realpathSync(tempDir())
    mkdirSync(join(root, "docs"))
    writeFileSync(join(root, "docs", "note.txt"), "shared over HTTP")
    gateway = await startHttpGateway({
      config: {
        backends: [
          fixtureBackend("fx"),
          { id: "files", type: "stdio", command: process.execPath, args: [serverFilesystemEntry(), root] }
        ]
      }
    })
  })
  afterAll(async () => {
    const exit = await gateway.close()
    expect(exit.code).toBe(0)
    // Stopped by the clean path (every backend stopped), not by the forced exit that follows a
    // shutdown stuck on open connections (SDK clients leave keep-alive connections behind).
    expect(gateway.stderr()).toMatch(/"msg":"backend stopped","backend":"files"/)
    // Over HTTP nothing at all goes to stdout.
    expect(gateway.stdout()).toBe("")
  })

  it("/mcp lists agentify_orchestrate and every backend tool, namespaced, and calls them", async () => {
    const { client } = await sdkClient(`${gateway.base}/mcp`)
    try {
      expect(client.getServerVersion()?.name).toBe("mcp-agentify")
      const { tools } = await client.listTools()
      const names = tools.map((t) => t.name)
      expect(names[0]).toBe("agentify_orchestrate")
      expect(names).toContain("fx__echo")
      expect(names).toContain("files__read_text_file")
      // The fixture's own tools, exactly: a test below adds tools at run time (fx__added_*), in any order.
      expect(names.filter((n) => n.startsWith("fx__") && !n.startsWith("fx__added_"))).toHaveLength(FIXTURE_TOOL_COUNT)
      const echoed = await client.callTool({ name: "fx__echo", arguments: { text: "over http" } })
      expect(JSON.parse(firstText(echoed))).toEqual({ text: "over http" })
      const read = await client.callTool({ name: "files__read_text_file", arguments: { path: join(root, "docs", "note.txt") } })
      expect(firstText(read)).toBe("shared over HTTP")
      // Without a key, orchestration answers with an isError result naming -32002, not a transport error.
      const orchestrated = await client.callTool({ name: "agentify_orchestrate", arguments: { query: "read note.txt" } })
      expect(orchestrated.isError).toBe(true)
      expect(firstText(orchestrated)).toMatch(/-32002/)
    } finally {
      await client.close()
    }
  })

  it("progress reaches the client on the request's SSE stream, before the result", async () => {
    const { client } = await sdkClient(`${gateway.base}/mcp`)
    try {
      const seen: Array<number> = []
      const result = await client.callTool({ name: "fx__progress", arguments: { steps: 4 } }, undefined, {
        onprogress: (p) => seen.push(p.progress)
      })
      expect(firstText(result)).toBe("done in 4 steps")
      expect(seen).toEqual([1, 2, 3, 4])
    } finally {
      await client.close()
    }
  })

  it("/servers/<id>/mcp serves one backend as itself: its names, capabilities, results and errors", async () => {
    const { client } = await sdkClient(`${gateway.base}/servers/files/mcp`)
    const direct = new Client({ name: "direct", version: "1.0.0" })
    await direct.connect(
      new StdioClientTransport({ command: process.execPath, args: [serverFilesystemEntry(), root], stderr: "pipe" })
    )
    try {
      expect(client.getServerVersion()).toEqual(direct.getServerVersion())
      expect(client.getServerCapabilities()).toEqual(direct.getServerCapabilities())
      expect((await client.listTools()).tools).toEqual((await direct.listTools()).tools)
      const args = { path: join(root, "docs", "note.txt") }
      expect(await client.callTool({ name: "read_text_file", arguments: args })).toEqual(
        await direct.callTool({ name: "read_text_file", arguments: args })
      )
      // A backend's own JSON-RPC error comes back as the backend sent it, not wrapped in -32004.
      const viaGateway = await client.request({ method: "resources/list", params: {} }, ListResourcesResultSchema).catch((e) => e)
      const viaDirect = await direct.request({ method: "resources/list", params: {} }, ListResourcesResultSchema).catch((e) => e)
      expect(viaDirect.code).toBe(-32601)
      expect(viaGateway.code).toBe(viaDirect.code)
      expect(viaGateway.message).toBe(viaDirect.message)
    } finally {
      await client.close()
      await direct.close()
    }
  })

  it("two sessions using the same progress token each see only their own progress and log messages", async () => {
    const url = `${gateway.base}/mcp`
    const a = await openSession(url)
    const b = await openSession(url)
    const progressCall = (sessionId: string, id: number, steps: number) =>
      call(url, sessionId, id, "tools/call", { name: "fx__progress", arguments: { steps }, _meta: { progressToken: "same" } })
    const [ra, rb] = await Promise.all([progressCall(a.sessionId, 1, 3), progressCall(b.sessionId, 1, 5)])
    const progressOf = (messages: Array<any>) =>
      messages.filter((m) => m.method === "notifications/progress").map((m) => m.params)
    expect(ra.contentType).toMatch(/^text\/event-stream/)
    expect(progressOf(ra.messages)).toEqual([1, 2, 3].map((progress) => ({ progressToken: "same", progress, total: 3 })))
    expect(progressOf(rb.messages)).toEqual([1, 2, 3, 4, 5].map((progress) => ({ progressToken: "same", progress, total: 5 })))
    expect(ra.messages.at(-1).result.content[0].text).toBe("done in 3 steps")
    expect(rb.messages.at(-1).result.content[0].text).toBe("done in 5 steps")

    // A log message sent during A's call goes with A's call, and B's notification stream stays quiet.
    const controller = new AbortController()
    const bStream = fetch(url, {
      headers: { accept: "text/event-stream", "mcp-session-id": b.sessionId },
      signal: controller.signal
    })
    const bResponse = await bStream
    expect(bResponse.status).toBe(200)
    const reader = bResponse.body!.getReader()
    let bText = ""
    const pump = (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read()
          if (done) return
          bText += Buffer.from(value).toString("utf8")
        }
      } catch {
        // aborted
      }
    })()
    const logged = await call(url, a.sessionId, 2, "tools/call", { name: "fx__log", arguments: { message: "for A only" } })
    const logs = logged.messages.filter((m) => m.method === "notifications/message")
    expect(logs).toEqual([
      { jsonrpc: "2.0", method: "notifications/message", params: { level: "info", logger: "fx", data: "for A only" } }
    ])
    await sleep(300)
    controller.abort()
    await pump
    expect(bText).not.toContain("for A only")
  })

  it("the MCP Inspector CLI (HTTP mode) lists and calls tools on /mcp and /servers/<id>/mcp", async () => {
    // v1's CLI (Node 20) resolves its own package.json against the working directory: run it there.
    const cwd = join(ROOT, "node_modules", "@modelcontextprotocol", "inspector-cli", "build")
    const inspect = (...args: Array<string>) =>
      new Promise<string>((resolve, reject) =>
        execFile(process.execPath, ["index.js", ...args], { cwd, timeout: 20_000 }, (error, stdout, stderr) =>
          error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)
        )
      )
    const listed = JSON.parse(await inspect(`${gateway.base}/mcp`, "--transport", "http", "--method", "tools/list"))
    expect(listed.tools.map((t: { name: string }) => t.name)).toContain("fx__add")
    const added = JSON.parse(
      await inspect(
        `${gateway.base}/mcp`,
        "--transport",
        "http",
        "--method",
        "tools/call",
        "--tool-name",
        "fx__add",
        "--tool-arg",
        "a=2",
        "b=3"
      )
    )
    expect(firstText(added)).toBe("5")
    const direct = JSON.parse(
      await inspect(
        `${gateway.base}/servers/files/mcp`,
        "--transport",
        "http",
        "--method",
        "tools/call",
        "--tool-name",
        "list_allowed_directories"
      )
    )
    expect(firstText(direct)).toContain(root)
  })

  it("a tools change reaches every session's GET stream as list_changed", async () => {
    const url = `${gateway.base}/mcp`
    const { client: a } = await sdkClient(url, "a")
    const { client: b } = await sdkClient(url, "b")
    try {
      const changed = (client: Client) =>
        new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()))
      const both = Promise.all([changed(a), changed(b)])
      // The SDK opens its GET stream after initialized; give it a moment before the change.
      await sleep(300)
      await a.callTool({ name: "fx__add_tool", arguments: { name: "added_over_http" } })
      await both
      const { tools } = await b.listTools()
      expect(tools.map((t) => t.name)).toContain("fx__added_over_http")
    } finally {
      await a.close()
      await b.close()
    }
  })
})
