/**
 * MCP 2026-07-28 (stateless) over HTTP, end to end through the built CLI: a scripted client of
 * that era (plain fetch: no SDK speaks it yet in TypeScript) against session-era backends (the
 * real server-everything and the fixture), the bridge's InputRequiredResult round trips included.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { join } from "node:path"
import { writeFileSync } from "node:fs"
import { BIN, CliClient, cleanEnv, ROOT, tempDir } from "../../support/stdioClient.js"
import { type HttpGateway, parseSse, sepHeaders, startHttpGateway } from "../../support/httpClient.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { until } from "../../support/process.js"

const EVERYTHING = join(ROOT, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
const MODERN = join(ROOT, "test", "fixtures", "stateless-server.mjs")
const modernBackend = { id: "modern", command: process.execPath, args: [MODERN] }
const VERSION = "2026-07-28"

const meta = (capabilities: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  "io.modelcontextprotocol/protocolVersion": VERSION,
  "io.modelcontextprotocol/clientCapabilities": capabilities,
  "io.modelcontextprotocol/clientInfo": { name: "stateless-test", version: "1.0.0" },
  ...extra
})

interface Reply {
  readonly status: number
  readonly messages: Array<any>
  /** The message with the request's id. */
  readonly reply: any
}

let gateway: HttpGateway
let nextId = 0

const rpc = async (
  method: string,
  params: unknown,
  options: { path?: string; headers?: Record<string, string>; accept?: string } = {}
): Promise<Reply> => {
  const id = ++nextId
  const body = { jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) }
  const res = await fetch(`${gateway.base}${options.path ?? "/mcp"}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: options.accept ?? "application/json, text/event-stream",
      "mcp-protocol-version": VERSION,
      ...sepHeaders(body),
      ...options.headers
    },
    body: JSON.stringify(body)
  })
  const text = await res.text()
  const messages = (res.headers.get("content-type") ?? "").includes("text/event-stream") ? parseSse(text) : [JSON.parse(text)]
  return { status: res.status, messages, reply: messages.find((m) => m.id === id) }
}

beforeAll(async () => {
  gateway = await startHttpGateway({
    config: {
      backends: [
        { id: "everything", command: process.execPath, args: [EVERYTHING, "stdio"] },
        fixtureBackend("fx"),
        modernBackend
      ]
    }
  })
})
afterAll(async () => {
  await gateway.close()
})

describe("serving 2026-07-28 clients without sessions", () => {
  it("server/discover: versions, capabilities, instructions and serverInfo in _meta; a backend's own on its endpoint", async () => {
    const { status, reply } = await rpc("server/discover", { _meta: meta() })
    expect(status).toBe(200)
    expect(reply.result).toMatchObject({
      supportedVersions: expect.arrayContaining([VERSION, "2025-11-25"]),
      capabilities: { tools: { listChanged: true }, resources: { listChanged: true }, prompts: { listChanged: true } },
      resultType: "complete",
      ttlMs: 0,
      cacheScope: "public",
      _meta: { "io.modelcontextprotocol/serverInfo": { name: "mcp-agentify" } }
    })
    expect(reply.result.capabilities.logging).toBeUndefined()
    const own = await rpc("server/discover", { _meta: meta() }, { path: "/servers/everything/mcp" })
    expect(own.reply.result._meta["io.modelcontextprotocol/serverInfo"].name).toMatch(/everything/)
    expect(own.reply.result.capabilities.tools).toBeDefined()
    expect(own.reply.result.capabilities.resources?.subscribe).toBeUndefined()
  })

  it("refuses what the era forbids, with the status and code it names, and the request's id", async () => {
    const noMeta = await rpc("server/discover", {})
    expect([noMeta.status, noMeta.reply.error.code]).toEqual([400, -32602])
    const noCapabilities = await rpc("tools/list", { _meta: { "io.modelcontextprotocol/protocolVersion": VERSION } })
    expect([noCapabilities.status, noCapabilities.reply.error.code]).toEqual([400, -32602])
    const mismatch = await rpc("tools/list", { _meta: { ...meta(), "io.modelcontextprotocol/protocolVersion": "v999" } })
    expect([mismatch.status, mismatch.reply.error.code]).toEqual([400, -32020])
    const noHeader = await fetch(`${gateway.base}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 77, method: "tools/list", params: { _meta: meta() } })
    })
    expect(noHeader.status).toBe(400)
    expect(((await noHeader.json()) as any).error).toMatchObject({ code: -32020 })
    const unknownVersion = await rpc(
      "server/discover",
      { _meta: { ...meta(), "io.modelcontextprotocol/protocolVersion": "v999" } },
      { headers: { "mcp-protocol-version": "v999" } }
    )
    expect(unknownVersion.status).toBe(400)
    expect(unknownVersion.reply.error).toMatchObject({ code: -32022, data: { supported: [VERSION], requested: "v999" } })
    for (const removed of ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "no/such"]) {
      const r = await rpc(removed, { _meta: meta() })
      expect([removed, r.status, r.reply.error.code]).toEqual([removed, 404, -32601])
    }
  })

  it("serves tools, resources and prompts with resultType and caching hints; _meta of the era never reaches a backend", async () => {
    const tools = await rpc("tools/list", { _meta: meta() })
    expect(tools.reply.result).toMatchObject({ resultType: "complete", ttlMs: 0, cacheScope: "private" })
    expect(tools.reply.result.tools.map((t: any) => t.name)).toContain("fx__echo")
    const echoed = await rpc("tools/call", { name: "fx__echo", arguments: { text: "hi" }, _meta: meta() })
    expect(echoed.reply.result).toMatchObject({ resultType: "complete", content: [{ type: "text", text: '{"text":"hi"}' }] })
    const resources = await rpc("resources/list", { _meta: meta() })
    const uri = resources.reply.result.resources[0].uri
    const read = await rpc("resources/read", { uri, _meta: meta() })
    expect(read.reply.result).toMatchObject({ resultType: "complete", ttlMs: 0, contents: [{ uri }] })
    const prompt = await rpc("prompts/get", { name: "everything__args-prompt", arguments: { city: "Lyon" }, _meta: meta() })
    expect(JSON.stringify(prompt.reply.result.messages)).toContain("Lyon")
    // A session-era backend gets the call's own _meta (its progress token, the gateway's), not the era's keys.
    const sent = await rpc("tools/call", { name: "fx__meta", arguments: {}, _meta: meta({}, { progressToken: 5, note: "kept" }) })
    expect(sent.reply.result.structuredContent.meta).toEqual({
      progressToken: expect.stringMatching(/^agentify-\d+$/),
      note: "kept"
    })
  })

  it("log messages only for a request that set a log level", async () => {
    const silent = await rpc("tools/call", { name: "fx__log", arguments: { message: "quiet please" }, _meta: meta() })
    expect(silent.messages.filter((m) => m.method === "notifications/message")).toEqual([])
    const loud = await rpc("tools/call", {
      name: "fx__log",
      arguments: { message: "hello log" },
      _meta: meta({}, { "io.modelcontextprotocol/logLevel": "debug" })
    })
    expect(loud.messages.find((m) => m.method === "notifications/message")?.params).toMatchObject({ data: "hello log" })
  })
})

describe("a stateless client that goes away", () => {
  it("cancels its call: the backend hears notifications/cancelled", async () => {
    const controller = new AbortController()
    const before = (await rpc("tools/call", { name: "fx__cancelled", arguments: {}, _meta: meta() })).reply.result
      .structuredContent.cancellations.length
    const hanging = fetch(`${gateway.base}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json",
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/call",
        "mcp-name": "fx__hang"
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "fx__hang", arguments: {}, _meta: meta() }
      }),
      signal: controller.signal
    }).catch(() => undefined)
    await new Promise((resolve) => setTimeout(resolve, 300))
    controller.abort()
    await hanging
    await until("the backend to hear of the cancellation", async () => {
      const seen = await rpc("tools/call", { name: "fx__cancelled", arguments: {}, _meta: meta() })
      return seen.reply.result.structuredContent.cancellations.length > before
    })
  })
})

describe("the bridge: a session-era backend's questions become InputRequiredResults", () => {
  const sampling = (prompt: string, extra: Record<string, unknown> = {}) => ({
    name: "everything__trigger-sampling-request",
    arguments: { prompt },
    _meta: meta({ sampling: {} }),
    ...extra
  })

  it("sampling: round 1 asks, the retry with inputResponses completes the backend's call", async () => {
    const first = await rpc("tools/call", sampling("capital of France?"))
    const asked = first.reply.result
    expect(asked.resultType).toBe("input_required")
    const [key, request] = Object.entries(asked.inputRequests)[0] as [string, any]
    expect(request.method).toBe("sampling/createMessage")
    expect(JSON.stringify(request.params.messages)).toContain("capital of France?")
    expect(typeof asked.requestState).toBe("string")
    const answer = { role: "assistant", content: { type: "text", text: "Paris" }, model: "test-model" }
    const done = await rpc(
      "tools/call",
      sampling("capital of France?", {
        requestState: asked.requestState,
        inputResponses: { [key]: answer, extra: { ignored: true } }
      })
    )
    expect(done.reply.result.resultType).toBe("complete")
    expect(done.reply.result.content[0].text).toContain("Paris")
  })

  it("elicitation and roots through the fixture; a retry missing an answer is asked again, a tampered or replayed state refused", async () => {
    const ask = (method: string, params: unknown = {}) => ({
      name: "fx__ask_client",
      arguments: { method, params },
      _meta: meta({ elicitation: {}, roots: {} })
    })
    const first = await rpc("tools/call", ask("elicitation/create", { message: "Name?", requestedSchema: { type: "object" } }))
    const state = first.reply.result.requestState
    const key = Object.keys(first.reply.result.inputRequests)[0]!
    expect(key).toMatch(/^elicitation-/)

    const tampered = state.slice(0, -2) + (state.endsWith("AA") ? "BB" : "AA")
    const refused = await rpc("tools/call", { ...ask("elicitation/create"), requestState: tampered, inputResponses: {} })
    expect(refused.reply.error).toMatchObject({ code: -32602, message: expect.stringContaining("integrity") })

    const again = await rpc("tools/call", { ...ask("elicitation/create"), requestState: state, inputResponses: { other: {} } })
    expect(again.reply.result.resultType).toBe("input_required")
    expect(Object.keys(again.reply.result.inputRequests)).toEqual([key])
    // The state of the earlier round no longer resumes the call.
    const stale = await rpc("tools/call", { ...ask("elicitation/create"), requestState: state, inputResponses: {} })
    expect(stale.reply.error.code).toBe(-32602)

    const done = await rpc("tools/call", {
      ...ask("elicitation/create"),
      requestState: again.reply.result.requestState,
      inputResponses: { [key]: { action: "accept", content: { name: "Ada" } } }
    })
    expect(done.reply.result.structuredContent.result).toEqual({ action: "accept", content: { name: "Ada" } })

    const roots = await rpc("tools/call", ask("roots/list"))
    const rootsKey = Object.keys(roots.reply.result.inputRequests)[0]!
    expect(roots.reply.result.inputRequests[rootsKey].method).toBe("roots/list")
    const rootsDone = await rpc("tools/call", {
      ...ask("roots/list"),
      requestState: roots.reply.result.requestState,
      inputResponses: { [rootsKey]: { roots: [{ uri: "file:///work" }] } }
    })
    expect(rootsDone.reply.result.structuredContent.result).toEqual({ roots: [{ uri: "file:///work" }] })
  })

  it("a session-era backend may name its question's key (_meta agentify/inputKey), which the client never sees in _meta", async () => {
    const call = {
      name: "fx__ask_client",
      arguments: {
        method: "elicitation/create",
        params: { message: "Name?", requestedSchema: { type: "object" }, _meta: { "agentify/inputKey": "user_name", kept: 1 } }
      },
      _meta: meta({ elicitation: {} })
    }
    const first = await rpc("tools/call", call)
    const requests = first.reply.result.inputRequests
    expect(Object.keys(requests)).toEqual(["user_name"])
    expect(requests.user_name.params._meta).toEqual({ kept: 1 })
    const done = await rpc("tools/call", {
      ...call,
      requestState: first.reply.result.requestState,
      inputResponses: { user_name: { action: "accept", content: { name: "Ada" } } }
    })
    expect(done.reply.result.structuredContent.result).toEqual({ action: "accept", content: { name: "Ada" } })
  })

  it("a first request may answer a named question at once (inputResponses without requestState); a non-object answer is asked for", async () => {
    const call = (inputResponses: Record<string, unknown>) => ({
      name: "fx__ask_client",
      arguments: {
        method: "elicitation/create",
        params: { message: "Name?", requestedSchema: { type: "object" }, _meta: { "agentify/inputKey": "user_name" } }
      },
      inputResponses,
      _meta: meta({ elicitation: {} })
    })
    const answer = { action: "accept", content: { name: "Alice" } }
    const once = await rpc("tools/call", call({ user_name: answer, unknown_extra: { action: "accept" } }))
    expect(once.reply.result.resultType).toBe("complete")
    expect(once.reply.result.structuredContent.result).toEqual(answer)
    const invalid = await rpc("tools/call", call({ user_name: 12345 }))
    expect(invalid.reply.result.resultType).toBe("input_required")
    expect(Object.keys(invalid.reply.result.inputRequests)).toEqual(["user_name"])
  })

  it("questions the client cannot answer are held while it answers the ones it can, then refused", async () => {
    const call = {
      name: "fx__ask_client_all",
      arguments: {
        requests: [
          { method: "elicitation/create", params: { message: "Name?", requestedSchema: { type: "object" } } },
          { method: "sampling/createMessage", params: { messages: [], maxTokens: 5 } }
        ]
      },
      _meta: meta({ sampling: {} })
    }
    const first = await rpc("tools/call", call)
    const asked = first.reply.result
    expect(asked.resultType).toBe("input_required")
    expect(Object.values(asked.inputRequests).map((r: any) => r.method)).toEqual(["sampling/createMessage"])
    const [key] = Object.keys(asked.inputRequests)
    const answer = { role: "assistant", content: { type: "text", text: "hi" }, model: "m" }
    const done = await rpc("tools/call", { ...call, requestState: asked.requestState, inputResponses: { [key!]: answer } })
    const [elicited, sampled] = done.reply.result.structuredContent.outcomes
    expect(sampled).toEqual({ result: answer })
    expect(elicited.error.message).toContain("did not declare the elicitation capability")
  })

  it("a question the client declared no capability for is -32021 naming it (HTTP 400)", async () => {
    const r = await rpc("tools/call", { name: "everything__trigger-sampling-request", arguments: { prompt: "x" }, _meta: meta() })
    expect(r.status).toBe(400)
    expect(r.reply.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } })
  })
})

/** Opens a `subscriptions/listen` stream on `base`'s /mcp. */
const listen = (base: string, notifications: Record<string, unknown>, signal?: AbortSignal) =>
  fetch(`${base}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "text/event-stream",
      "mcp-protocol-version": VERSION,
      "mcp-method": "subscriptions/listen"
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "subscriptions/listen", params: { _meta: meta(), notifications } }),
    ...(signal === undefined ? {} : { signal })
  })

describe("subscriptions/listen", () => {
  it("acknowledges what it honors, then sends only the notifications asked for, tagged with the subscription id", async () => {
    const controller = new AbortController()
    const res = await listen(gateway.base, { toolsListChanged: true, resourceSubscriptions: ["x://y"] }, controller.signal)
    expect(res.headers.get("content-type")).toContain("text/event-stream")
    const reader = res.body!.getReader()
    let text = ""
    const frames = async (count: number) => {
      while (parseSse(text).length < count) {
        const { value, done } = await reader.read()
        if (done) break
        text += new TextDecoder().decode(value)
      }
      return parseSse(text)
    }
    const [ack] = await frames(1)
    expect(ack.method).toBe("notifications/subscriptions/acknowledged")
    expect(ack.params.notifications).toEqual({ toolsListChanged: true })
    const id = ack.params._meta["io.modelcontextprotocol/subscriptionId"]
    expect(typeof id).toBe("string")
    await rpc("tools/call", { name: "fx__add_tool", arguments: { name: "fresh" }, _meta: meta() })
    const [, changed] = await frames(2)
    expect(changed.method).toBe("notifications/tools/list_changed")
    expect(changed.params._meta["io.modelcontextprotocol/subscriptionId"]).toBe(id)
    controller.abort()
  })
})

describe("listen streams are bounded", () => {
  it("they count against maxSessions: past it, 503", async () => {
    const small = await startHttpGateway({ config: { maxSessions: 1, backends: [fixtureBackend("fx")] } })
    const controller = new AbortController()
    try {
      const first = await listen(small.base, { toolsListChanged: true }, controller.signal)
      expect(first.status).toBe(200)
      const second = await listen(small.base, { toolsListChanged: true })
      expect(second.status).toBe(503)
      expect(((await second.json()) as any).error.message).toMatch(/maxSessions/)
    } finally {
      controller.abort()
      await small.close()
    }
  })
})

describe("over stdio, the first message decides the connection's era", () => {
  it("a stateless first request: discover, calls and the bridge's rounds; a session-era initialize is a removed method", async () => {
    const dir = tempDir()
    writeFileSync(join(dir, "gateway.json"), JSON.stringify({ backends: [fixtureBackend("fx")] }))
    const client = new CliClient({ args: ["--config", join(dir, "gateway.json")], cwd: dir })
    try {
      const discovered = await client.request("server/discover", { _meta: meta() })
      expect(discovered.result.supportedVersions).toContain(VERSION)
      const ask = { name: "fx__ask_client", arguments: { method: "roots/list" }, _meta: meta({ roots: {} }) }
      const first = await client.request("tools/call", ask)
      expect(first.result.resultType).toBe("input_required")
      const key = Object.keys(first.result.inputRequests)[0]!
      const done = await client.request("tools/call", {
        ...ask,
        requestState: first.result.requestState,
        inputResponses: { [key]: { roots: [{ uri: "file:///from/stdio" }] } }
      })
      expect(done.result.structuredContent.result).toEqual({ roots: [{ uri: "file:///from/stdio" }] })
      const initialize = await client.request("initialize", {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "x", version: "1" }
      })
      expect(initialize.error.code).toBe(-32601)
      const noMeta = await client.request("tools/list", {})
      expect(noMeta.error.code).toBe(-32602)
      // Cancelling a stateless request: its one reply is -32800 and the backend's call is cancelled.
      const hanging = client.request("tools/call", { name: "fx__hang", arguments: {}, _meta: meta() }, "hang-1")
      await new Promise((resolve) => setTimeout(resolve, 300))
      client.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "hang-1" } })
      expect((await hanging).error.code).toBe(-32800)
      await until("the backend to hear of the cancellation", async () => {
        const seen = await client.request("tools/call", { name: "fx__cancelled", arguments: {}, _meta: meta() })
        return seen.result.structuredContent.cancellations.length > 0
      })
    } finally {
      client.child.stdin!.end()
      await client.exited
    }
  }, 30_000)
})

describe("a 2026-07-28 backend", () => {
  it("is spoken to in its era: server/discover instead of initialize, the era's _meta on every request", async () => {
    const listed = await rpc("tools/list", { _meta: meta() })
    expect(listed.reply.result.tools.map((t: any) => t.name)).toEqual(
      expect.arrayContaining(["modern__ask_name", "modern__echo"])
    )
    const own = await rpc("server/discover", { _meta: meta() }, { path: "/servers/modern/mcp" })
    expect(own.reply.result._meta["io.modelcontextprotocol/serverInfo"]).toEqual({ name: "modern", version: "1.0.0" })
    const sent = await rpc("tools/call", { name: "modern__meta", arguments: {}, _meta: meta({ elicitation: {} }) })
    expect(sent.reply.result.structuredContent).toMatchObject({
      "io.modelcontextprotocol/protocolVersion": VERSION,
      "io.modelcontextprotocol/clientCapabilities": { elicitation: {} },
      "io.modelcontextprotocol/clientInfo": { name: "mcp-agentify" }
    })
  })

  it("its list changes, announced on the subscriptions/listen stream the gateway keeps open, reach clients", async () => {
    // A client listening at the aggregate hears list_changed, and the list then holds the new tool.
    const controller = new AbortController()
    const res = await listen(gateway.base, { toolsListChanged: true }, controller.signal)
    const reader = res.body!.getReader()
    let text = ""
    const next = async (count: number) => {
      while (parseSse(text).length < count) {
        const { value, done } = await reader.read()
        if (done) throw new Error(`the listen stream ended after ${parseSse(text).length} frames`)
        text += new TextDecoder().decode(value)
      }
      return parseSse(text)
    }
    try {
      const [ack] = await next(1)
      expect(ack.method).toBe("notifications/subscriptions/acknowledged")
      await rpc("tools/call", { name: "modern__add_tool", arguments: { name: "late_tool" }, _meta: meta() })
      const [, changed] = await next(2)
      expect(changed.method).toBe("notifications/tools/list_changed")
      await until("the new tool to be listed", async () => {
        const listed = await rpc("tools/list", { _meta: meta() })
        return listed.reply.result.tools.some((t: any) => t.name === "modern__late_tool")
      })
    } finally {
      controller.abort()
    }
  })

  it("a stateless client gets the backend's InputRequiredResult as it is and retries with the backend's own requestState", async () => {
    const call = { name: "modern__ask_name", arguments: {}, _meta: meta({ elicitation: {} }) }
    const first = await rpc("tools/call", call)
    expect(first.reply.result).toMatchObject({
      resultType: "input_required",
      inputRequests: { user_name: { method: "elicitation/create" } }
    })
    const done = await rpc("tools/call", {
      ...call,
      requestState: first.reply.result.requestState,
      inputResponses: { user_name: { action: "accept", content: { name: "Ada" } } }
    })
    expect(done.reply.result).toMatchObject({ resultType: "complete", content: [{ type: "text", text: "Hello, Ada!" }] })
  })

  it("a session-era client is asked for real (elicitation, sampling, two rounds) and gets the backend's result", async () => {
    const dir = tempDir()
    writeFileSync(join(dir, "gateway.json"), JSON.stringify({ backends: [modernBackend] }))
    const client = new Client({ name: "legacy", version: "1.0.0" }, { capabilities: { elicitation: {}, sampling: {} } })
    const asked: Array<string> = []
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message)
      return { action: "accept", content: { name: "Ada", color: "green" } }
    })
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({
      model: "m",
      role: "assistant",
      content: { type: "text", text: "Paris" }
    }))
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "--config", join(dir, "gateway.json")],
        cwd: dir,
        env: cleanEnv() as Record<string, string>,
        stderr: "pipe"
      })
    )
    try {
      const greeted = await client.callTool({ name: "modern__ask_name", arguments: {} })
      expect((greeted.content as Array<{ text: string }>)[0]!.text).toBe("Hello, Ada!")
      const twice = await client.callTool({ name: "modern__ask_twice", arguments: {} })
      expect((twice.content as Array<{ text: string }>)[0]!.text).toBe("Ada likes green")
      expect(asked).toEqual(["What is your name?", "Step 1: your name?", "Step 2: your colour?"])
      const sampled = await client.callTool({ name: "modern__sample", arguments: {} })
      expect((sampled.content as Array<{ text: string }>)[0]!.text).toBe("The model said: Paris")
      // The backend was told what this client can answer.
      const sent = await client.callTool({ name: "modern__meta", arguments: {} })
      expect(sent.structuredContent).toMatchObject({
        "io.modelcontextprotocol/clientCapabilities": { elicitation: {}, sampling: {} }
      })
    } finally {
      await client.close()
    }
  }, 30_000)
})
