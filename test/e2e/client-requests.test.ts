/**
 * Requests from backends to clients (sampling, elicitation, roots) through the gateway, and the
 * fidelity of what backends send back: the official SDK client in front of the built CLI, with
 * the real server-everything, server-filesystem and the fixture server behind it, over stdio and
 * Streamable HTTP.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import {
  CreateMessageRequestSchema,
  ElicitationCompleteNotificationSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import { mkdirSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest"
import { BIN, cleanEnv, ROOT, tempDir } from "../support/stdioClient.js"
import { startHttpGateway } from "../support/httpClient.js"
import { filesystemBackend, firstText, fixtureBackend } from "../support/mcpFixture.js"
import { sleep, until } from "../support/process.js"

const EVERYTHING = join(ROOT, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
const everythingBackend = { id: "everything", command: process.execPath, args: [EVERYTHING, "stdio"] }

const ALL_CLIENT_CAPABILITIES = { sampling: {}, elicitation: { form: {}, url: {} }, roots: { listChanged: true } }

/** What the test client was asked, and how it answers. */
interface Asked {
  sampling: Array<any>
  elicitation: Array<any>
  roots: Array<{ uri: string; name?: string }>
  completed: Array<any>
}

/** An SDK client answering sampling, elicitation and roots as a real client would. */
const answeringClient = (name: string, capabilities: Record<string, unknown> = ALL_CLIENT_CAPABILITIES) => {
  const asked: Asked = { sampling: [], elicitation: [], roots: [], completed: [] }
  const client = new Client({ name, version: "1.0.0" }, { capabilities })
  /** The client's own answers; a test that replaces one puts them back (tests run in any order). */
  const answerAsUsual = () => {
    if ("sampling" in capabilities) {
      client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
        asked.sampling.push(request.params)
        return { model: "test-model", role: "assistant", content: { type: "text", text: "sampled by the test client" } }
      })
    }
    if ("elicitation" in capabilities) {
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.elicitation.push(request.params)
        return request.params.mode === "url" ? { action: "accept" } : { action: "accept", content: { name: "Ada", check: true } }
      })
    }
    if ("roots" in capabilities) client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: asked.roots }))
  }
  answerAsUsual()
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
    asked.completed.push(n.params)
  })
  return { client, asked, answerAsUsual }
}

const stdioTransport = (dir: string, config: unknown) => {
  const file = join(dir, "gateway.json")
  writeFileSync(file, JSON.stringify(config))
  return new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "--config", file],
    cwd: dir,
    env: cleanEnv() as Record<string, string>,
    stderr: "pipe"
  })
}

const texts = (result: any): string => (result.content as Array<{ text?: string }>).map((c) => c.text ?? "").join("\n")

/** server-everything's dynamic resources say when they were made: two reads may straddle a second. */
const undated = (result: unknown) => JSON.parse(JSON.stringify(result).replace(/created at [^"]*/g, "created at <time>"))

/**
 * server-everything's resources, templates, prompts, completion, subscriptions and logging through
 * the gateway's aggregate (`client`), against the same server directly (`direct`).
 */
const checkSurface = async (client: Client, direct: Client) => {
  const { resources } = await direct.listResources()
  const relayed = (await client.listResources()).resources
  for (const resource of resources) expect(relayed).toContainEqual(resource)
  expect((await client.listResourceTemplates()).resourceTemplates).toEqual(
    (await direct.listResourceTemplates()).resourceTemplates
  )
  expect(undated(await client.readResource({ uri: resources[0]!.uri }))).toEqual(
    undated(await direct.readResource({ uri: resources[0]!.uri }))
  )
  const templated = { uri: "demo://resource/dynamic/text/7" }
  const relayedTemplated = await client.readResource(templated)
  expect(JSON.stringify(relayedTemplated)).toContain("Resource 7: This is a plaintext resource created at")
  expect(undated(relayedTemplated)).toEqual(undated(await direct.readResource(templated)))
  await client.subscribeResource({ uri: resources[0]!.uri })
  await client.unsubscribeResource({ uri: resources[0]!.uri })

  const prompts = (await direct.listPrompts()).prompts
  expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(prompts.map((p) => `everything__${p.name}`))
  const args = { city: "Lyon", state: "Rhône" }
  expect(await client.getPrompt({ name: "everything__args-prompt", arguments: args })).toEqual(
    await direct.getPrompt({ name: "args-prompt", arguments: args })
  )
  const department = await client.complete({
    ref: { type: "ref/prompt", name: "everything__completable-prompt" },
    argument: { name: "department", value: "Eng" }
  })
  expect(department.completion.values).toEqual(["Engineering"])
  const lead = await client.complete({
    ref: { type: "ref/prompt", name: "everything__completable-prompt" },
    argument: { name: "name", value: "A" },
    context: { arguments: { department: "Engineering" } }
  })
  expect(lead.completion.values).toEqual(["Alice"])
  expect(await client.setLoggingLevel("warning")).toEqual({})
}

describe("over stdio, backends' requests reach the client and its answers go back", () => {
  let client: Client
  let asked: Asked
  let answerAsUsual: () => void
  let direct: Client
  const rootDir = realpathSync(tempDir())
  beforeAll(async () => {
    ;({ client, asked, answerAsUsual } = answeringClient("stdio-relay"))
    asked.roots.push({ uri: pathToFileURL(rootDir).href, name: "workspace" })
    await client.connect(stdioTransport(tempDir(), { backends: [everythingBackend, fixtureBackend("fx")] }))
    // The same server directly, declared the same capabilities, for the fidelity comparisons.
    direct = answeringClient("direct").client
    await direct.connect(new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, "stdio"], stderr: "pipe" }))
  }, 30_000)
  afterAll(async () => {
    await client.close()
    await direct.close()
  })

  it("the backend was told the client's capabilities: its sampling, elicitation and roots tools are listed", async () => {
    const names = (await client.listTools()).tools.map((t) => t.name)
    expect(names).toEqual(
      expect.arrayContaining([
        "everything__trigger-sampling-request",
        "everything__trigger-elicitation-request",
        "everything__trigger-url-elicitation",
        "everything__get-roots-list"
      ])
    )
    const init = (await client.callTool({ name: "fx__client_info", arguments: {} })).structuredContent as any
    expect(init.capabilities).toEqual(ALL_CLIENT_CAPABILITIES)
  })

  it("sampling/createMessage is answered by the client", async () => {
    const before = asked.sampling.length
    const result = await client.callTool({
      name: "everything__trigger-sampling-request",
      arguments: { prompt: "say hi", maxTokens: 12 }
    })
    expect(asked.sampling).toHaveLength(before + 1)
    expect(asked.sampling.at(-1)).toMatchObject({ maxTokens: 12, systemPrompt: "You are a helpful test server." })
    expect(JSON.stringify(asked.sampling.at(-1).messages)).toContain("say hi")
    expect(texts(result)).toContain("sampled by the test client")
  })

  it("elicitation/create in form and URL modes is answered by the client", async () => {
    const before = asked.elicitation.length
    const form = await client.callTool({ name: "everything__trigger-elicitation-request", arguments: {} })
    expect(asked.elicitation[before]).toMatchObject({ message: "Please provide inputs for the following fields:" })
    expect(asked.elicitation[before].requestedSchema.properties.name).toMatchObject({ type: "string" })
    expect(texts(form)).toContain('"name": "Ada"')
    const url = await client.callTool({
      name: "everything__trigger-url-elicitation",
      arguments: { url: "https://example.com/authorize", message: "Sign in" }
    })
    expect(asked.elicitation[before + 1]).toMatchObject({ mode: "url", url: "https://example.com/authorize", message: "Sign in" })
    expect(texts(url)).toMatch(/accept/i)
    // The error path: the backend's -32042 and its elicitations reach the client as sent.
    const required = await client
      .callTool({
        name: "everything__trigger-url-elicitation",
        arguments: { url: "https://example.com/authorize", message: "Sign in", errorPath: true }
      })
      .catch((e) => e)
    expect(required.code).toBe(-32042)
    expect(required.data.elicitations[0]).toMatchObject({ mode: "url", url: "https://modelcontextprotocol.io" })
  })

  it("roots/list is answered with the client's roots, and a change of roots reaches the backend", async () => {
    expect(texts(await client.callTool({ name: "everything__get-roots-list", arguments: {} }))).toContain(
      pathToFileURL(rootDir).href
    )
    const other = join(rootDir, "other")
    mkdirSync(other)
    asked.roots.splice(0, 1, { uri: pathToFileURL(other).href, name: "other" })
    await client.sendRootsListChanged()
    await until("the backend to list the new root", async () =>
      texts(await client.callTool({ name: "everything__get-roots-list", arguments: {} })).includes(pathToFileURL(other).href)
    )
  })

  it("the client's progress on a backend's request reaches that backend under its own token; the client's error goes back", async () => {
    onTestFinished(answerAsUsual)
    client.setRequestHandler(ListRootsRequestSchema, async (request, extra) => {
      const token = request.params?._meta?.progressToken
      // The gateway's token, not the backend's: two backends may use the same one.
      expect(token).toMatch(/^agentify-b\d+$/)
      await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token!, progress: 1, total: 2 } })
      return { roots: [] }
    })
    const answered = (await client.callTool({ name: "fx__ask_client", arguments: { method: "roots/list", progressToken: 7 } }))
      .structuredContent as any
    expect(answered.result).toEqual({ roots: [] })
    expect(answered.progress).toEqual([{ progressToken: 7, progress: 1, total: 2 }])

    client.setRequestHandler(ListRootsRequestSchema, async () => {
      throw Object.assign(new Error("roots are private"), { code: -32001 })
    })
    const refused = (await client.callTool({ name: "fx__ask_client", arguments: { method: "roots/list" } }))
      .structuredContent as any
    expect(refused.error).toMatchObject({ message: expect.stringContaining("roots are private") })
  })

  it("a backend cancelling its request reaches the client as notifications/cancelled", async () => {
    onTestFinished(answerAsUsual)
    let signal: AbortSignal | undefined
    client.setRequestHandler(CreateMessageRequestSchema, async (_request, extra) => {
      signal = extra.signal
      await new Promise((resolve) => extra.signal.addEventListener("abort", resolve))
      throw new Error("aborted")
    })
    const outcome = (
      await client.callTool({
        name: "fx__ask_client",
        arguments: { method: "sampling/createMessage", params: { messages: [], maxTokens: 1 }, cancelAfterMs: 300 }
      })
    ).structuredContent as any
    expect(outcome.cancelled).toBe(true)
    // The SDK aborts a handler when notifications/cancelled names its request.
    await until("the client's handler to be aborted", () => signal?.aborted === true)
    expect(String(signal!.reason)).toContain("the backend cancelled its request")
  })

  it("a method the client does not have is -32601 from the client, relayed to the backend", async () => {
    const unknown = (await client.callTool({ name: "fx__ask_client", arguments: { method: "tasks/list" } }))
      .structuredContent as any
    expect(unknown.error).toMatchObject({ code: -32601 })
  })

  it("resources, templates, prompts with arguments, completion, subscriptions and logging are relayed", async () => {
    await checkSurface(client, direct)
  })

  it("tools, their results and content pass unchanged: title, annotations, schemas, structured, image, audio, resources", async () => {
    const viaGateway = new Map((await client.listTools()).tools.map((t) => [t.name, t]))
    for (const tool of (await direct.listTools()).tools) {
      const relayed = viaGateway.get(`everything__${tool.name}`)
      expect(relayed, tool.name).toBeDefined()
      const { name: _name, description: _description, ...rest } = tool
      const { name: _relayedName, description: _relayedDescription, ...relayedRest } = relayed!
      expect(relayedRest, tool.name).toEqual(rest)
    }
    const calls: Array<[string, Record<string, unknown>]> = [
      ["get-structured-content", { location: "New York" }],
      ["get-tiny-image", {}],
      ["get-annotated-message", { messageType: "error", includeImage: true }],
      ["get-resource-reference", { resourceType: "Text", resourceId: 3 }],
      ["get-resource-links", { count: 3 }],
      ["echo", { message: "hello" }]
    ]
    for (const [name, args] of calls) {
      const meta = { note: "carried both ways" }
      const a = await direct.callTool({ name, arguments: args, _meta: meta })
      const b = await client.callTool({ name: `everything__${name}`, arguments: args, _meta: meta })
      expect(undated(b), name).toEqual(undated(a))
    }
    const image = await client.callTool({ name: "everything__get-tiny-image", arguments: {} })
    expect((image.content as Array<{ type: string }>).map((c) => c.type)).toContain("image")
    const weather = await client.callTool({ name: "everything__get-structured-content", arguments: { location: "New York" } })
    expect(weather.structuredContent).toBeDefined()
  })
})

describe("over stdio, server-filesystem serves exactly the client's roots", () => {
  it("replaces its command-line directory with the client's roots, and follows their changes", async () => {
    const commandLineDir = realpathSync(tempDir())
    const first = realpathSync(tempDir())
    const second = realpathSync(tempDir())
    const { client, asked } = answeringClient("roots", { roots: { listChanged: true } })
    asked.roots.push({ uri: pathToFileURL(first).href, name: "first" })
    await client.connect(stdioTransport(tempDir(), { backends: [filesystemBackend("fs", commandLineDir)] }))
    try {
      const allowed = async () => firstText(await client.callTool({ name: "fs__list_allowed_directories", arguments: {} }))
      await until("the client's root to be allowed", async () => (await allowed()).includes(first))
      expect(await allowed()).not.toContain(commandLineDir)
      asked.roots.splice(0, 1, { uri: pathToFileURL(second).href, name: "second" })
      await client.sendRootsListChanged()
      await until("the changed root to be allowed", async () => (await allowed()).includes(second))
      expect(await allowed()).not.toContain(first)
    } finally {
      await client.close()
    }
  }, 30_000)

  it("a client without roots leaves the command-line directory; a backend's configured roots are used then", async () => {
    const commandLineDir = realpathSync(tempDir())
    const configured = realpathSync(tempDir())
    const { client } = answeringClient("no-roots", {})
    await client.connect(
      stdioTransport(tempDir(), {
        backends: [
          filesystemBackend("plain", commandLineDir),
          { ...filesystemBackend("rooted", commandLineDir), roots: [configured] }
        ]
      })
    )
    try {
      const allowed = async (id: string) =>
        firstText(await client.callTool({ name: `${id}__list_allowed_directories`, arguments: {} }))
      expect(await allowed("plain")).toContain(commandLineDir)
      await until("the configured root to be allowed", async () => (await allowed("rooted")).includes(configured))
      expect(await allowed("rooted")).not.toContain(commandLineDir)
    } finally {
      await client.close()
    }
  }, 30_000)
})

describe("over Streamable HTTP, a backend's request goes to the session whose call is in flight", () => {
  it("relays server-everything's surface; answers on the call's own stream; a client without the capability gets a clear error; two sessions in flight are not guessed between", async () => {
    const gateway = await startHttpGateway({ config: { backends: [everythingBackend, fixtureBackend("fx")] } })
    const connect = async (name: string, capabilities?: Record<string, unknown>) => {
      const answering = answeringClient(name, capabilities)
      await answering.client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp`)))
      return answering
    }
    const a = await connect("a")
    const b = await connect("b", {})
    const direct = answeringClient("direct").client
    await direct.connect(new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, "stdio"], stderr: "pipe" }))
    try {
      await checkSurface(a.client, direct)

      const sampled = await a.client.callTool({
        name: "everything__trigger-sampling-request",
        arguments: { prompt: "over http" }
      })
      expect(texts(sampled)).toContain("sampled by the test client")
      expect(JSON.stringify(a.asked.sampling[0].messages)).toContain("over http")

      const url = await a.client.callTool({
        name: "everything__trigger-url-elicitation",
        arguments: { url: "https://example.com/x", message: "go" }
      })
      expect(texts(url)).toMatch(/accept/i)

      // b declared nothing: its call fails with the reason, and a was not asked in its place.
      const refused = await b.client.callTool({ name: "everything__trigger-sampling-request", arguments: { prompt: "no" } }).then(
        (r) => texts(r),
        (e: Error) => e.message
      )
      expect(refused).toMatch(/did not declare the sampling capability/)
      expect(a.asked.sampling).toHaveLength(1)

      // Both sessions with a call in flight on fx: fx's request cannot be attributed to either.
      // Long enough that a's call is surely running when b's starts, even on a loaded machine.
      const slow = a.client.callTool({ name: "fx__slow", arguments: { ms: 4_000 } })
      await sleep(800)
      const ambiguous = (
        await b.client.callTool({ name: "fx__ask_client", arguments: { method: "sampling/createMessage", params: {} } })
      ).structuredContent as any
      expect(ambiguous.error.message).toMatch(/2 client sessions have requests in flight on backend 'fx'/)
      await slow
      expect(a.asked.sampling).toHaveLength(1)

      // A URL elicitation's completion reaches only the client that was asked.
      const elicited = (
        await a.client.callTool({
          name: "fx__ask_client",
          arguments: {
            method: "elicitation/create",
            params: { mode: "url", url: "https://example.com/done", message: "finish", elicitationId: "el-1" }
          }
        })
      ).structuredContent as any
      expect(elicited.result).toEqual({ action: "accept" })
      await until("the completion to reach a", () => a.asked.completed.length > 0)
      expect(a.asked.completed).toEqual([{ elicitationId: "el-1" }])
      expect(b.asked.completed).toEqual([])
    } finally {
      await a.client.close()
      await b.client.close()
      await direct.close()
      await gateway.close()
    }
  }, 40_000)
})

describe("orchestration runs the chosen tool as the session's own call", () => {
  it("a backend's sampling during agentify_orchestrate reaches the client that asked; a model that declines is explained in the text", async () => {
    const gateway = await startHttpGateway({
      scripted: true,
      env: {
        SCRIPTED_TOOL: "everything__trigger-sampling-request",
        SCRIPTED_ARGUMENTS: JSON.stringify({ prompt: "via the model" })
      },
      config: { backends: [everythingBackend] }
    })
    const declining = await startHttpGateway({
      scripted: true,
      env: { SCRIPTED_TOOL: "none", SCRIPTED_CONTENT: "Which file do you mean? Give me its path." },
      config: { backends: [fixtureBackend("fx")] }
    })
    const { client, asked } = answeringClient("orchestrating")
    const other = answeringClient("declined")
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp`)))
      const result = await client.callTool({ name: "agentify_orchestrate", arguments: { query: "ask the model" } })
      expect(texts(result)).toContain("sampled by the test client")
      expect(JSON.stringify(asked.sampling[0].messages)).toContain("via the model")

      await other.client.connect(new StreamableHTTPClientTransport(new URL(`${declining.base}/mcp`)))
      const declined = await other.client.callTool({ name: "agentify_orchestrate", arguments: { query: "open it" } })
      expect(declined.isError).toBe(true)
      expect(firstText(declined)).toBe(
        "Error -32000: AI orchestrator could not determine an action for your query.\n\nThe model answered: Which file do you mean? Give me its path."
      )
    } finally {
      await client.close()
      await other.client.close()
      await gateway.close()
      await declining.close()
    }
  }, 40_000)
})
