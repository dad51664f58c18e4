/**
 * The real `openai` client code path, end to end: the built CLI, the real server-filesystem, and
 * a local HTTP server on 127.0.0.1 speaking the Chat Completions API in place of OpenAI.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { join } from "node:path"
import { serverFilesystemEntry } from "../../../src/config/Config.js"
import { type FakeOpenAI, startFakeOpenAI, unmarked } from "../../support/fakeOpenAI.js"
import { assertOnlyFrames, BIN, cleanEnv, ROOT, startGateway, tempDir } from "../../support/stdioClient.js"

const KEY = "sk-e2e-distinctive-key-6f1c2a9b7d"

describe("orchestration through the real openai client", () => {
  let fake: FakeOpenAI
  const root = tempDir("agentify-openai-")
  writeFileSync(join(root, "notes.txt"), "buy oat milk\n")
  const configFile = join(root, "agentify.json")
  writeFileSync(
    configFile,
    JSON.stringify({ mcpServers: { filesystem: { command: process.execPath, args: [serverFilesystemEntry(), root] } } })
  )

  beforeAll(async () => {
    fake = await startFakeOpenAI()
  })
  afterAll(async () => {
    await fake.close()
  })

  const env = () => cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: "gpt-test-model" })

  it("agentify/orchestrateTask returns the file's content; the gateway sent tools, tool_choice, context and the key", async () => {
    fake.setReply({ tool: "filesystem__read_text_file", arguments: { path: join(root, "notes.txt") } })
    const before = fake.requests.length
    const gateway = startGateway({ args: ["--config", configFile, "--log-level", "trace"], env: env(), cwd: root })
    try {
      await gateway.request("initialize", {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "t", version: "1" }
      })
      const reply = await gateway.request("agentify/orchestrateTask", {
        query: "show me what is in notes.txt",
        context: { currentWorkingDirectory: root }
      })
      expect(reply.error).toBeUndefined()
      expect(reply.result.content[0].text).toContain("buy oat milk")

      // Two turns: the call, then (with its result as a tool message) the model's closing answer.
      expect(fake.requests.length).toBe(before + 2)
      const followUp = fake.requests[before + 1]!.body.messages
      const assistant = followUp.find((m: any) => m.role === "assistant")
      expect(assistant.tool_calls[0].function.name).toBe("filesystem__read_text_file")
      const toolMessage = followUp.find((m: any) => m.role === "tool")
      expect(toolMessage.tool_call_id).toBe(assistant.tool_calls[0].id)
      expect(toolMessage.content).toContain("buy oat milk")
      expect(reply.result._meta["agentify/answer"]).toBe("Done.")
      expect(reply.result._meta["agentify/steps"]).toEqual([
        {
          tool: "filesystem__read_text_file",
          arguments: { path: join(root, "notes.txt") },
          isError: false,
          ms: expect.any(Number)
        }
      ])
      const sent = fake.requests[before]!
      expect(sent.path).toBe("/v1/chat/completions")
      expect(sent.headers.authorization).toBe(`Bearer ${KEY}`)
      expect(sent.body.model).toBe("gpt-test-model")
      expect(sent.body.tool_choice).toBe("auto")
      const names = sent.body.tools.map((t: any) => t.function.name)
      expect(names).toContain("filesystem__read_text_file")
      expect(names).not.toContain("agentify_orchestrate")
      // Every tool fits: nothing to search for.
      expect(names).not.toContain("agentify_search_tools")
      expect(sent.body.messages[0].role).toBe("system")
      const user = sent.body.messages.find((m: any) => m.role === "user").content
      expect(user).toContain("show me what is in notes.txt")
      expect(user).toContain(root)
    } finally {
      const { code } = await gateway.close()
      expect(code).toBe(0)
    }
    assertOnlyFrames(gateway.stdout())
    // At trace level, with the full request body logged, the key appears nowhere on stderr.
    expect(gateway.stderr()).toContain("chat")
    expect(gateway.stderr()).not.toContain(KEY)
    expect(gateway.stderr()).not.toContain(KEY.slice(3, 20))
  })

  it("the agentify_orchestrate tool does the same from any MCP client", async () => {
    fake.setReply({ tool: "filesystem__read_text_file", arguments: { path: join(root, "notes.txt") } })
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "--config", configFile],
      env: env() as Record<string, string>,
      stderr: "pipe"
    })
    const client = new Client({ name: "sdk", version: "1" })
    await client.connect(transport)
    try {
      const { tools } = await client.listTools()
      const orchestrate = tools.find((t) => t.name === "agentify_orchestrate")!
      expect(orchestrate.inputSchema.required).toEqual(["query"])
      const result = await client.callTool({
        name: "agentify_orchestrate",
        arguments: { query: "show me what is in notes.txt", context: { currentWorkingDirectory: root } }
      })
      expect(result.isError).not.toBe(true)
      const blocks = result.content as Array<{ text: string }>
      expect(blocks[0]!.text).toContain("buy oat milk")
      // The model's closing words follow the tool's content (most clients show only the content).
      expect(blocks[blocks.length - 1]).toEqual({ type: "text", text: "Done." })
    } finally {
      await client.close()
    }
  })

  it("LLM failures come back as -32003 with a plain message and no key; no tool call is -32000", async () => {
    const gateway = startGateway({ args: ["--config", configFile], env: env(), cwd: root })
    try {
      await gateway.request("initialize", {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "t", version: "1" }
      })
      fake.setReply({ status: 401, message: `Incorrect API key provided: ${KEY.slice(0, 12)}***` })
      const denied = await gateway.request("agentify/orchestrateTask", { query: "show notes.txt" })
      expect(denied.error.code).toBe(-32003)
      expect(denied.error.message).toMatch(/401/)
      expect(JSON.stringify(denied)).not.toContain(KEY.slice(3, 12))
      expect(denied.error.data.query).toBe("show notes.txt")

      fake.setReply({ garbage: "<html>bad gateway</html>" })
      expect((await gateway.request("agentify/orchestrateTask", { query: "show notes.txt" })).error.code).toBe(-32003)

      fake.setReply({ text: "I am not sure which file you mean." })
      const none = await gateway.request("agentify/orchestrateTask", { query: "do the thing" })
      expect(none.error).toMatchObject({ code: -32000, message: "AI orchestrator could not determine an action for your query." })
      expect(none.error.data.modelMessage).toBe("I am not sure which file you mean.")

      // A model that answers 12 MiB of text and calls nothing: still -32000, its words cut (not a
      // reply too large for maxReplyBytes, whose advice would not apply).
      const long = "word ".repeat((12 * 1024 * 1024) / 5)
      fake.setReply({ text: long })
      const wordy = await gateway.request("agentify/orchestrateTask", { query: "do the thing" })
      expect(wordy.error.code).toBe(-32000)
      expect(wordy.error.data.modelMessage.length).toBeLessThan(2_100)
      expect(wordy.error.data.modelMessage).toMatch(/\[cut: 2,000 of 12,582,910 characters\]$/)
      const asTool = await gateway.request("tools/call", { name: "agentify_orchestrate", arguments: { query: "do the thing" } })
      expect(asTool.result.isError).toBe(true)
      expect(JSON.stringify(asTool.result).length).toBeLessThan(6_000)
      expect(asTool.result.content[0].text).toMatch(/^Error -32000: [^]*The model answered: word word/)

      fake.setReply({ tool: "filesystem__read_text_file", arguments: { path: "/etc/hostname" } })
      const outside = await gateway.request("agentify/orchestrateTask", { query: "read /etc/hostname" })
      expect(outside.error.code).toBe(-32004)
      expect(outside.error.message).toMatch(/^Backend 'filesystem' failed: /)
    } finally {
      await gateway.close()
    }
    expect(gateway.stderr()).not.toContain(KEY)
  })
})

describe("orchestration in several steps, through the real openai client", () => {
  let fake: FakeOpenAI
  const root = tempDir("agentify-steps-")
  writeFileSync(join(root, "pelican.txt"), "the pelican nests by the sea\n")
  writeFileSync(join(root, "gulls.txt"), "gulls steal chips\n")
  const configFile = join(root, "agentify.json")
  writeFileSync(
    configFile,
    JSON.stringify({ mcpServers: { filesystem: { command: process.execPath, args: [serverFilesystemEntry(), root] } } })
  )
  const env = () => cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.baseUrl })
  let gateway: ReturnType<typeof startGateway>

  beforeAll(async () => {
    fake = await startFakeOpenAI()
    gateway = startGateway({ args: ["--config", configFile], env: env(), cwd: root })
    await gateway.request("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "t", version: "1" }
    })
  })
  afterAll(async () => {
    await gateway.close()
    await fake.close()
  })

  it("a two-step task: each result goes back to the model, the last result is the answer, the steps in _meta, progress per step", async () => {
    fake.setSteps([
      { tool: "filesystem__list_directory", arguments: { path: root } },
      { tool: "filesystem__read_text_file", arguments: { path: join(root, "pelican.txt") } },
      { text: "pelican.txt mentions the pelican; here it is." }
    ])
    const before = fake.requests.length
    const reply = await gateway.request("agentify/orchestrateTask", {
      query: "find the file that mentions the pelican and show it",
      _meta: { progressToken: "steps-1" }
    })
    expect(reply.error).toBeUndefined()
    expect(reply.result.content[0].text).toBe("the pelican nests by the sea\n")
    expect(reply.result._meta["agentify/answer"]).toBe("pelican.txt mentions the pelican; here it is.")
    expect(reply.result._meta["agentify/steps"].map((s: any) => [s.tool, s.isError])).toEqual([
      ["filesystem__list_directory", false],
      ["filesystem__read_text_file", false]
    ])
    const sent = fake.requests.slice(before).map((r) => r.body.messages)
    expect(sent).toHaveLength(3)
    // The listing reached the model before it chose what to read.
    const listing = sent[1].find((m: any) => m.role === "tool")
    expect(listing.content).toContain("pelican.txt")
    expect(sent[2].filter((m: any) => m.role === "tool")).toHaveLength(2)
    const progress = gateway.messages.filter((m) => m.method === "notifications/progress" && m.params.progressToken === "steps-1")
    expect(progress.map((m) => m.params.message)).toEqual([
      "step 1/6: filesystem__list_directory",
      "step 2/6: filesystem__read_text_file"
    ])
    expect(progress.map((m) => [m.params.progress, m.params.total])).toEqual([
      [1, 6],
      [2, 6]
    ])
  })

  it("two calls in one turn run together; both results go back; the last is the result", async () => {
    fake.setSteps([
      {
        toolCalls: [
          { name: "filesystem__read_text_file", arguments: { path: join(root, "gulls.txt") } },
          { name: "filesystem__read_text_file", arguments: { path: join(root, "pelican.txt") } }
        ]
      },
      { text: "Both read." }
    ])
    const before = fake.requests.length
    const reply = await gateway.request("agentify/orchestrateTask", { query: "read both bird files" })
    expect(reply.result.content[0].text).toBe("the pelican nests by the sea\n")
    expect(reply.result._meta["agentify/steps"]).toHaveLength(2)
    const followUp = fake.requests[before + 1]!.body.messages
    const results = followUp.filter((m: any) => m.role === "tool")
    // Each marked as data, between lines of one random code.
    expect(results.map((m: any) => unmarked(m.content))).toEqual(["gulls steal chips\n", "the pelican nests by the sea\n"])
    expect(new Set(results.map((m: any) => m.content.split("\n")[0])).size).toBe(1)
    const calls = followUp.find((m: any) => m.role === "assistant").tool_calls
    expect(results.map((m: any) => m.tool_call_id)).toEqual(calls.map((c: any) => c.id))
  })

  it("maxSteps bounds the turns: a model that keeps calling stops there, with the last result", async () => {
    fake.setSteps([{ tool: "filesystem__read_text_file", arguments: { path: join(root, "gulls.txt") } }])
    const before = fake.requests.length
    const reply = await gateway.request("agentify/orchestrateTask", { query: "read gulls forever", maxSteps: 2 })
    expect(reply.result.content[0].text).toBe("gulls steal chips\n")
    expect(reply.result._meta["agentify/steps"]).toHaveLength(2)
    expect(reply.result._meta["agentify/answer"]).toBeUndefined()
    expect(fake.requests.length - before).toBe(2)
    // maxSteps 1 is the single shot: one request, whose system prompt asks for exactly one call.
    const single = await gateway.request("agentify/orchestrateTask", { query: "read gulls once", maxSteps: 1 })
    expect(single.result._meta["agentify/steps"]).toHaveLength(1)
    expect(fake.requests.length - before).toBe(3)
    expect(fake.requests[before + 2]!.body.messages[0].content).toContain("Choose exactly one function")
    const refused = await gateway.request("agentify/orchestrateTask", { query: "x", maxSteps: 0 })
    expect(refused.error).toMatchObject({ code: -32602, message: expect.stringContaining("maxSteps") })
  })

  it("dryRun plans the first call and runs nothing", async () => {
    const target = join(root, "new-file.txt")
    fake.setSteps([{ tool: "filesystem__write_file", arguments: { path: target, content: "hello" } }])
    const before = fake.requests.length
    const reply = await gateway.request("agentify/orchestrateTask", { query: "write hello to new-file.txt", dryRun: true })
    expect(reply.result.structuredContent).toEqual({
      dryRun: true,
      plan: {
        tool: "filesystem__write_file",
        backendId: "filesystem",
        method: "tools/call",
        arguments: { path: target, content: "hello" }
      },
      valid: true,
      // write_file is annotated destructive: the default confirmTools would ask first.
      needsConfirmation: true
    })
    expect(fake.requests.length - before).toBe(1)
    expect(existsSync(target)).toBe(false)
    // A plan that would be refused says why, and still runs nothing.
    fake.setSteps([{ tool: "filesystem__write_file", arguments: { path: target, content: 42 } }])
    const invalid = await gateway.request("agentify/orchestrateTask", { query: "write 42", dryRun: true })
    expect(invalid.result.structuredContent).toMatchObject({ dryRun: true, valid: false, problems: ["/content: must be string"] })
    expect(existsSync(target)).toBe(false)
  })

  it("a cancelled orchestration stops where it is: the model's request in flight is dropped and no step follows", async () => {
    fake.setSteps([{ tool: "filesystem__list_directory", arguments: { path: root } }, { hang: true }])
    const before = fake.requests.length
    const abortedBefore = fake.aborted
    gateway.send({ jsonrpc: "2.0", id: "to-cancel", method: "agentify/orchestrateTask", params: { query: "list then wait" } })
    await fake.untilRequests(before + 2)
    gateway.notify("notifications/cancelled", { requestId: "to-cancel", reason: "the user gave up" })
    await fake.untilAborted(abortedBefore + 1)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(fake.requests.length - before).toBe(2)
    // The gateway still answers.
    expect((await gateway.request("ping")).result).toEqual({})
  })

  it("a tool ranked outside the offered ones is reached through agentify_search_tools, and only so", async () => {
    const narrow = join(root, "narrow.json")
    writeFileSync(
      narrow,
      JSON.stringify({
        maxToolsPerRequest: 3,
        mcpServers: { filesystem: { command: process.execPath, args: [serverFilesystemEntry(), root] } }
      })
    )
    const small = startGateway({ args: ["--config", narrow], env: env(), cwd: root })
    try {
      await small.request("initialize", {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "t", version: "1" }
      })
      fake.setSteps([
        { tool: "agentify_search_tools", arguments: { query: "file size and modification time" } },
        { tool: "filesystem__get_file_info", arguments: { path: join(root, "gulls.txt") } },
        { text: "Here is its information." }
      ])
      const before = fake.requests.length
      const reply = await small.request("agentify/orchestrateTask", { query: "read the gulls file" })
      expect(reply.error).toBeUndefined()
      const offered = (i: number) => fake.requests[before + i]!.body.tools.map((t: any) => t.function.name)
      expect(offered(0)).toContain("agentify_search_tools")
      // Three tools, the search, and agentify_plan (the plan travels with the first turn).
      expect(offered(0)).toHaveLength(5)
      expect(offered(0)).toContain("agentify_plan")
      expect(offered(0)).not.toContain("filesystem__get_file_info")
      const found = JSON.parse(fake.requests[before + 1]!.body.messages.find((m: any) => m.role === "tool").content)
      expect(found.tools.map((t: any) => t.name)).toContain("filesystem__get_file_info")
      expect(offered(1)).toContain("filesystem__get_file_info")
      expect(reply.result.content[0].text).toMatch(/size/)
      expect(reply.result._meta["agentify/steps"].map((s: any) => s.tool)).toEqual([
        "agentify_search_tools",
        "filesystem__get_file_info"
      ])
      // Called without the search, the same tool is not among the offered ones: -32003 naming it.
      fake.setSteps([{ tool: "filesystem__get_file_info", arguments: { path: join(root, "gulls.txt") } }])
      const refused = await small.request("agentify/orchestrateTask", { query: "read the gulls file" })
      expect(refused.error).toMatchObject({ code: -32003, message: expect.stringContaining("filesystem__get_file_info") })
    } finally {
      await small.close()
    }
  })

  it("the model's arguments are checked against the tool's inputSchema: one repair turn, then -32003 naming each problem", async () => {
    const made = join(root, "made-dir")
    fake.setSteps([
      { tool: "filesystem__create_directory", arguments: { path: 7 } },
      { tool: "filesystem__create_directory", arguments: { path: made } },
      { text: "Made." }
    ])
    const before = fake.requests.length
    const repaired = await gateway.request("agentify/orchestrateTask", { query: "make a directory" })
    expect(repaired.error).toBeUndefined()
    expect(existsSync(made)).toBe(true)
    // The model was told what was wrong, by path; the invalid call never reached the backend.
    const told = fake.requests[before + 1]!.body.messages.find((m: any) => m.role === "tool").content
    expect(told).toContain("/path: must be string")
    expect(repaired.result._meta["agentify/steps"]).toEqual([
      { tool: "filesystem__create_directory", arguments: { path: made }, isError: false, ms: expect.any(Number) }
    ])

    fake.setSteps([{ tool: "filesystem__write_file", arguments: { path: 7, extra: true } }])
    const refused = await gateway.request("agentify/orchestrateTask", { query: "write badly" })
    expect(refused.error.code).toBe(-32003)
    expect(refused.error.message).toContain("/path: must be string")
    expect(refused.error.message).toContain("must have required property 'content'")
    expect(refused.error.data.problems).toEqual(
      expect.arrayContaining(["/path: must be string", "(root): must have required property 'content'"])
    )
  })
})

describe("confirmation before destructive actions", () => {
  let fake: FakeOpenAI
  const root = tempDir("agentify-confirm-")
  const config = (extra: Record<string, unknown> = {}) => {
    const file = join(root, `agentify-${Object.keys(extra).join("-") || "default"}.json`)
    writeFileSync(
      file,
      JSON.stringify({
        ...extra,
        mcpServers: { filesystem: { command: process.execPath, args: [serverFilesystemEntry(), root] } }
      })
    )
    return file
  }
  beforeAll(async () => {
    fake = await startFakeOpenAI()
  })
  afterAll(async () => {
    await fake.close()
  })

  /** An SDK client over stdio; with `answer`, it declares elicitation and answers each request so. */
  const connect = async (configFile: string, answer?: "accept" | "decline") => {
    const client = new Client({ name: "sdk", version: "1" }, answer === undefined ? {} : { capabilities: { elicitation: {} } })
    const asked: Array<any> = []
    if (answer !== undefined) {
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params)
        return { action: answer }
      })
    }
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "--config", configFile],
        env: cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.baseUrl }) as Record<string, string>,
        stderr: "pipe"
      })
    )
    return { client, asked }
  }
  const orchestrate = (client: Client, query: string) =>
    client.callTool({ name: "agentify_orchestrate", arguments: { query } }) as Promise<{
      content: Array<any>
      isError?: boolean
      _meta?: any
    }>

  it("a destructive tool runs once the user agreed; the question names the tool and shows its arguments", async () => {
    const target = join(root, "agreed.txt")
    fake.setSteps([{ tool: "filesystem__write_file", arguments: { path: target, content: "yes" } }, { text: "Written." }])
    const { client, asked } = await connect(config(), "accept")
    try {
      const result = await orchestrate(client, "write yes to agreed.txt")
      expect(result.isError).not.toBe(true)
      expect(readFileSync(target, "utf8")).toBe("yes")
      expect(asked).toHaveLength(1)
      expect(asked[0].message).toContain("filesystem__write_file")
      expect(asked[0].message).toContain(JSON.stringify(target))
    } finally {
      await client.close()
    }
  })

  it("declined: nothing runs, the model is told and may answer instead", async () => {
    const target = join(root, "declined.txt")
    fake.setSteps([
      { tool: "filesystem__write_file", arguments: { path: target, content: "no" } },
      { text: "I did not write it." }
    ])
    const before = fake.requests.length
    const { client, asked } = await connect(config(), "decline")
    try {
      const result = await orchestrate(client, "write no to declined.txt")
      expect(asked).toHaveLength(1)
      expect(existsSync(target)).toBe(false)
      const told = fake.requests[before + 1]!.body.messages.find((m: any) => m.role === "tool").content
      expect(told).toContain("the user declined to run filesystem__write_file")
      // The user decided: nothing ran, which is a result naming what was declined, with the model's words.
      expect(result.isError).toBeUndefined()
      expect(result.content.map((c: any) => c.text)).toEqual([
        "Nothing ran: the user declined to run filesystem__write_file.",
        "I did not write it."
      ])
    } finally {
      await client.close()
    }
  })

  it("a client that cannot be asked gets a refusal naming the tool and the setting; confirmTools never and read-only tools are not asked", async () => {
    const target = join(root, "unasked.txt")
    fake.setSteps([{ tool: "filesystem__write_file", arguments: { path: target, content: "x" } }, { text: "Written." }])
    const { client } = await connect(config())
    try {
      const refused = await orchestrate(client, "write x")
      expect(refused.isError).toBe(true)
      expect(refused.content[0].text).toContain("filesystem__write_file")
      expect(refused.content[0].text).toContain('confirmTools: "never"')
      expect(existsSync(target)).toBe(false)
      // Direct calls are the client's own decision: not gated.
      await client.callTool({ name: "filesystem__write_file", arguments: { path: target, content: "direct" } })
      expect(readFileSync(target, "utf8")).toBe("direct")
    } finally {
      await client.close()
    }
    const never = await connect(config({ confirmTools: "never" }))
    try {
      fake.setSteps([{ tool: "filesystem__write_file", arguments: { path: target, content: "unasked" } }, { text: "Written." }])
      expect((await orchestrate(never.client, "write unasked")).isError).not.toBe(true)
      expect(readFileSync(target, "utf8")).toBe("unasked")
    } finally {
      await never.client.close()
    }
    // "writes": create_directory (not destructive, not read-only) is asked too; a read never is.
    const writes = await connect(config({ confirmTools: "writes" }), "accept")
    try {
      fake.setSteps([{ tool: "filesystem__create_directory", arguments: { path: join(root, "w") } }, { text: "Made." }])
      await orchestrate(writes.client, "make w")
      fake.setSteps([{ tool: "filesystem__read_text_file", arguments: { path: target } }, { text: "Read." }])
      await orchestrate(writes.client, "read it")
      expect(writes.asked.map((a) => a.message.split(" ")[1])).toEqual(["filesystem__create_directory"])
    } finally {
      await writes.client.close()
    }
  })
})

describe("a task over server-memory in steps", () => {
  it("'record that Alice manages Bob': the two people in one turn, then the relation, then read back", async () => {
    const fake = await startFakeOpenAI()
    const dir = tempDir("agentify-memory-")
    const configFile = join(dir, "agentify.json")
    const memoryEntry = join(ROOT, "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js")
    writeFileSync(
      configFile,
      JSON.stringify({
        mcpServers: {
          memory: { command: process.execPath, args: [memoryEntry], env: { MEMORY_FILE_PATH: join(dir, "memory.jsonl") } }
        }
      })
    )
    const gateway = startGateway({
      args: ["--config", configFile],
      env: cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.baseUrl }),
      cwd: dir
    })
    try {
      await gateway.request("initialize", {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "t", version: "1" }
      })
      const person = (name: string) => ({ name, entityType: "person", observations: [] })
      fake.setSteps([
        {
          toolCalls: [
            { name: "memory__create_entities", arguments: { entities: [person("Alice")] } },
            { name: "memory__create_entities", arguments: { entities: [person("Bob")] } }
          ]
        },
        { tool: "memory__create_relations", arguments: { relations: [{ from: "Alice", to: "Bob", relationType: "manages" }] } },
        { tool: "memory__read_graph", arguments: {} },
        { text: "Recorded: Alice manages Bob." }
      ])
      const reply = await gateway.request("agentify/orchestrateTask", { query: "record that Alice manages Bob" })
      expect(reply.error).toBeUndefined()
      expect(reply.result._meta["agentify/steps"].map((s: any) => s.tool)).toEqual([
        "memory__create_entities",
        "memory__create_entities",
        "memory__create_relations",
        "memory__read_graph"
      ])
      const graph = reply.result.structuredContent ?? JSON.parse(reply.result.content[0].text)
      expect(graph.entities.map((e: any) => e.name).sort()).toEqual(["Alice", "Bob"])
      expect(graph.relations).toEqual([{ from: "Alice", to: "Bob", relationType: "manages" }])
      expect(reply.result._meta["agentify/answer"]).toBe("Recorded: Alice manages Bob.")
    } finally {
      await gateway.close()
      await fake.close()
    }
  })
})
