/**
 * The real `openai` client code path, end to end: the built CLI, the real server-filesystem, and
 * a local HTTP server on 127.0.0.1 speaking the Chat Completions API in place of OpenAI.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { serverFilesystemEntry } from "../../../src/config/Config.js"
import { type FakeOpenAI, startFakeOpenAI } from "../../support/fakeOpenAI.js"
import { assertOnlyFrames, BIN, cleanEnv, startGateway, tempDir } from "../../support/stdioClient.js"

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

      expect(fake.requests.length).toBe(before + 1)
      const sent = fake.requests[before]!
      expect(sent.path).toBe("/v1/chat/completions")
      expect(sent.headers.authorization).toBe(`Bearer ${KEY}`)
      expect(sent.body.model).toBe("gpt-test-model")
      expect(sent.body.tool_choice).toBe("auto")
      const names = sent.body.tools.map((t: any) => t.function.name)
      expect(names).toContain("filesystem__read_text_file")
      expect(names).not.toContain("agentify_orchestrate")
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
      expect((result.content as Array<{ text: string }>)[0]!.text).toContain("buy oat milk")
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
