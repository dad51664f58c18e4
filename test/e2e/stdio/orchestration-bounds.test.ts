/**
 * Orchestration with real data and a misbehaving model, through the built CLI, the real
 * server-filesystem and a local Chat Completions server: results too big for the model's context,
 * arguments too big to replay, a model turn that fans out to thousands of calls, a failure after a
 * step ran, and a user who says no.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { serverFilesystemEntry } from "../../../src/config/Config.js"
import { type FakeOpenAI, startFakeOpenAI, unmarked } from "../../support/fakeOpenAI.js"
import { BIN, cleanEnv, startGateway, tempDir } from "../../support/stdioClient.js"

const KEY = "sk-bounds-distinctive-key-93be1f07"

describe("orchestration bounds, through the real openai client", () => {
  let fake: FakeOpenAI
  const root = tempDir("agentify-bounds-")
  // 1 MB of numbered lines: a cut can be told from the whole, and reading on from re-reading.
  const lines = Array.from({ length: 40_000 }, (_, i) => `line ${String(i).padStart(6, "0")} of the big file`)
  const bigText = lines.join("\n")
  writeFileSync(join(root, "big.txt"), bigText)
  const configFile = join(root, "agentify.json")
  writeFileSync(
    configFile,
    JSON.stringify({
      maxResultChars: 5_000,
      // This client cannot be asked; confirmation has its own tests.
      confirmTools: "never",
      mcpServers: { filesystem: { command: process.execPath, args: [serverFilesystemEntry(), root] } }
    })
  )
  let gateway: ReturnType<typeof startGateway>

  beforeAll(async () => {
    fake = await startFakeOpenAI()
    gateway = startGateway({
      args: ["--config", configFile],
      env: cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.baseUrl }),
      cwd: root
    })
    await gateway.initialize()
  })
  afterAll(async () => {
    await gateway.close()
    await fake.close()
  })

  const toolMessages = (request: number) =>
    fake.requests[request]!.body.messages.filter((m: any) => m.role === "tool").map((m: any) => unmarked(m.content as string))
  const offered = (request: number) => fake.requests[request]!.body.tools.map((t: any) => t.function.name as string)

  it("a result over maxResultChars is cut with its full size named, and the model reads on with agentify_read_result", async () => {
    fake.setSteps([
      { tool: "filesystem__read_text_file", arguments: { path: join(root, "big.txt") } },
      { tool: "agentify_read_result", arguments: { ref: "r1", offset: 2_000 } },
      { text: "The file has 40,000 lines." }
    ])
    const before = fake.requests.length
    const reply = await gateway.request("agentify/orchestrateTask", {
      query: "how many lines has big.txt?",
      maxResultChars: 2_000
    })
    expect(reply.error).toBeUndefined()
    // The client gets the whole result; only the model's copy is cut.
    expect(reply.result.content[0].text).toBe(bigText)
    expect(reply.result._meta["agentify/answer"]).toBe("The file has 40,000 lines.")

    // Nothing was cut yet: reading on is not offered in the first turn.
    expect(offered(before)).not.toContain("agentify_read_result")
    const [cut] = toolMessages(before + 1)
    expect(cut!.startsWith(bigText.slice(0, 2_000))).toBe(true)
    expect(cut).toContain(`[cut: showing 2,000 of ${bigText.length.toLocaleString("en-US")} characters`)
    expect(cut).toContain('agentify_read_result {"ref":"r1","offset":2000}')
    expect(cut!.length).toBeLessThan(2_200)
    expect(offered(before + 1)).toContain("agentify_read_result")

    // The next part, exactly where the cut left off.
    const read = toolMessages(before + 2)[1]!
    expect(read.startsWith(bigText.slice(2_000, 4_000))).toBe(true)
    expect(read).toContain(`[r1: characters 2,000 to 4,000 of ${bigText.length.toLocaleString("en-US")}; read on at offset 4000]`)
    expect(reply.result._meta["agentify/steps"].map((s: any) => s.tool)).toEqual([
      "filesystem__read_text_file",
      "agentify_read_result"
    ])
  })

  it("the config's maxResultChars applies when the request names none; out of bounds is -32602", async () => {
    fake.setSteps([{ tool: "filesystem__read_text_file", arguments: { path: join(root, "big.txt") } }, { text: "Read." }])
    const before = fake.requests.length
    const reply = await gateway.request("agentify/orchestrateTask", { query: "read big.txt" })
    expect(reply.error).toBeUndefined()
    expect(toolMessages(before + 1)[0]).toContain("[cut: showing 5,000 of")
    const refused = await gateway.request("agentify/orchestrateTask", { query: "read big.txt", maxResultChars: 10 })
    expect(refused.error).toMatchObject({ code: -32602, message: expect.stringContaining("maxResultChars") })
  })

  it("a call's arguments over the bound are not replayed whole in later turns", async () => {
    const target = join(root, "huge-args.txt")
    // 8 MiB: the MCP SDK's stdio servers stop reading a line past 10 MiB.
    const content = "z".repeat(8 * 1024 * 1024)
    fake.setSteps([{ tool: "filesystem__write_file", arguments: { path: target, content } }, { text: "Written." }])
    const before = fake.requests.length
    const reply = await gateway.request("agentify/orchestrateTask", { query: "search", maxResultChars: 2_000 })
    expect(reply.error).toBeUndefined()
    const replayed = fake.requests[before + 1]!.body.messages.find((m: any) => m.role === "assistant").tool_calls[0].function
      .arguments as string
    expect(replayed.length).toBeLessThan(2_500)
    // Still JSON, and saying what it left out.
    expect(JSON.parse(replayed)["[cut]"]).toContain("arguments of 8,388,")
    // The backend got them whole.
    expect(statSync(target).size).toBe(content.length)
  })

  it("a failure after a step ran carries the steps that ran", async () => {
    const target = join(root, "written-before-failure.txt")
    fake.setSteps([
      { tool: "filesystem__write_file", arguments: { path: target, content: "done" } },
      { status: 401, message: "key revoked" }
    ])
    const reply = await gateway.request("agentify/orchestrateTask", { query: "write a file then fail" })
    expect(reply.error.code).toBe(-32003)
    expect(readFileSync(target, "utf8")).toBe("done")
    expect(reply.error.data.steps).toEqual([
      { tool: "filesystem__write_file", arguments: { path: target, content: "done" }, isError: false, ms: expect.any(Number) }
    ])
    expect(reply.error.data.query).toBe("write a file then fail")
    // A failure before any step ran has none.
    fake.setSteps([{ status: 401, message: "key revoked" }])
    const early = await gateway.request("agentify/orchestrateTask", { query: "fail at once" })
    expect(early.error.code).toBe(-32003)
    expect(early.error.data.steps).toBeUndefined()
  })
})

describe("a model turn that fans out to thousands of calls", () => {
  let fake: FakeOpenAI
  const root = tempDir("agentify-fanout-")
  writeFileSync(join(root, "a.txt"), "a\n")
  const configFile = join(root, "agentify.json")
  writeFileSync(
    configFile,
    JSON.stringify({ mcpServers: { filesystem: { command: process.execPath, args: [serverFilesystemEntry(), root] } } })
  )
  const fanOut = (n: number) => ({
    toolCalls: Array.from({ length: n }, () => ({ name: "filesystem__read_text_file", arguments: { path: join(root, "a.txt") } }))
  })
  beforeAll(async () => {
    fake = await startFakeOpenAI()
  })
  afterAll(async () => {
    await fake.close()
  })
  const start = () =>
    startGateway({
      args: ["--config", configFile],
      env: cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.baseUrl }),
      cwd: root
    })

  it("10,000 calls in one turn: none runs, the model is told the bound once, and insisting is -32003 naming it; pings answered meanwhile", async () => {
    const gateway = start()
    try {
      await gateway.initialize()
      fake.setSteps([fanOut(10_000)])
      const before = fake.requests.length
      gateway.send({
        jsonrpc: "2.0",
        id: "fan",
        method: "agentify/orchestrateTask",
        params: { query: "read a.txt ten thousand times" }
      })
      await fake.untilRequests(before + 1)
      const ping = await gateway.request("ping")
      expect(ping.result).toEqual({})
      const reply = await gateway.reply("fan")
      expect(reply.error).toMatchObject({ code: -32003, message: expect.stringContaining("maxCallsPerTurn (16)") })
      expect(fake.requests.length - before).toBe(2)
      const told = fake.requests[before + 1]!.body.messages
      expect(told.filter((m: any) => m.role === "tool")).toHaveLength(0)
      expect(told.at(-1)).toMatchObject({ role: "system", content: expect.stringContaining("at most 16") })
      // Nothing ran: the steps are empty and the backend saw no call.
      expect((reply.error as any).data.steps).toBeUndefined()
      expect(gateway.stderr()).not.toContain("orchestration plan")
    } finally {
      expect(await gateway.close()).toEqual({ code: 0, signal: null })
    }
  })

  it("told once, a model that keeps to the bound goes on; maxCallsPerTurn is a request param too", async () => {
    const gateway = start()
    try {
      await gateway.initialize()
      fake.setSteps([fanOut(5), fanOut(3), { text: "Read it three times." }])
      const before = fake.requests.length
      const reply = await gateway.request("agentify/orchestrateTask", { query: "read a.txt a few times", maxCallsPerTurn: 4 })
      expect(reply.error).toBeUndefined()
      expect(reply.result._meta["agentify/steps"]).toHaveLength(3)
      expect(reply.result._meta["agentify/answer"]).toBe("Read it three times.")
      expect(fake.requests[before + 1]!.body.messages.at(-1).content).toContain("at most 4")
    } finally {
      await gateway.close()
    }
  })

  it("stdin EOF while the model's fan-out is being answered: the gateway exits 0", async () => {
    const gateway = start()
    await gateway.initialize()
    fake.setSteps([fanOut(10_000)])
    const before = fake.requests.length
    gateway.send({ jsonrpc: "2.0", id: "eof", method: "agentify/orchestrateTask", params: { query: "fan out" } })
    await fake.untilRequests(before + 1)
    expect(await gateway.close()).toEqual({ code: 0, signal: null })
  })
})

describe("a declined confirmation is the user's answer", () => {
  it("nothing ran because the user declined: a result, not an error, with the model's closing words", async () => {
    const fake = await startFakeOpenAI()
    const root = tempDir("agentify-decline-")
    const configFile = join(root, "agentify.json")
    writeFileSync(
      configFile,
      JSON.stringify({ mcpServers: { filesystem: { command: process.execPath, args: [serverFilesystemEntry(), root] } } })
    )
    const target = join(root, "declined.txt")
    fake.setSteps([
      { tool: "filesystem__write_file", arguments: { path: target, content: "no" } },
      { text: "Understood, I left it alone." }
    ])
    const client = new Client({ name: "sdk", version: "1" }, { capabilities: { elicitation: {} } })
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "decline" }))
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "--config", configFile],
        env: cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.baseUrl }) as Record<string, string>,
        stderr: "pipe"
      })
    )
    try {
      const tool = (await client.callTool({ name: "agentify_orchestrate", arguments: { query: "write no" } })) as any
      expect(tool.isError).toBeUndefined()
      expect(tool.content.map((c: any) => c.text)).toEqual([
        "Nothing ran: the user declined to run filesystem__write_file.",
        "Understood, I left it alone."
      ])
      expect(tool.structuredContent).toEqual({ declined: ["filesystem__write_file"] })
      expect(tool._meta["agentify/steps"]).toEqual([
        { tool: "filesystem__write_file", arguments: { path: target, content: "no" }, isError: true, ms: 0, declined: true }
      ])
      const method = (await client.request(
        { method: "agentify/orchestrateTask" as any, params: { query: "write no again" } },
        (await import("zod")).z.any()
      )) as any
      // The method's result says the same, and is not an error either.
      expect(method.isError).toBeUndefined()
      expect(method.content[0].text).toBe("Nothing ran: the user declined to run filesystem__write_file.")
      expect(method._meta["agentify/answer"]).toBe("Understood, I left it alone.")
      expect(existsSync(target)).toBe(false)
    } finally {
      await client.close()
      await fake.close()
    }
  })
})
