/**
 * The flow guard end to end, with real provenance: the built CLI over stdio in front of the world
 * fixtures (a web page, a chat tool), the model a local Chat Completions server whose first turn's
 * plan names every function offered (so only the data rules stand in the way), a client that cannot
 * be asked. What the model or its script read, the gateway indexed; a call copying a value from it
 * is held, in tools mode and in code mode (with the ledger's indexing off, these tests fail).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeOpenAI, startFakeOpenAI } from "../../support/fakeOpenAI.js"
import { connectSdk } from "../../support/sdkClient.js"
import { cleanEnv, ROOT, startGateway, tempDir } from "../../support/stdioClient.js"

const WORLD = join(ROOT, "test", "fixtures", "world-server.mjs")
const PAGE = "https://intranet.example/handbook"
const SECRET = "deploy-key-7Hq2Lr9Xw4Pz1Kv8"

describe("the flow guard, end to end", () => {
  let model: FakeOpenAI
  const dir = tempDir("agentify-flow-")
  const log = join(dir, "world.log")
  const world = join(dir, "world.json")
  const config = join(dir, "gateway.json")
  const backend = (role: string, extra: Record<string, unknown> = {}) => ({
    id: role,
    command: process.execPath,
    args: [WORLD, "--role", role],
    env: { WORLD_FILE: world, WORLD_LOG: log },
    ...extra
  })
  beforeAll(async () => {
    model = await startFakeOpenAI({ text: "Done." })
    writeFileSync(
      config,
      JSON.stringify({
        maxSteps: 6,
        backends: [
          // A private page (the default): what it holds must not leave without consent.
          backend("web", { flow: { tools: { fetch: { readOnly: true } } } }),
          backend("chat", { flow: { tools: { "*": { destructive: false } } } })
        ]
      })
    )
  })
  afterAll(async () => {
    await model.close()
  })

  const posted = () =>
    existsSync(log)
      ? readFileSync(log, "utf8")
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l))
          .filter((c) => c.tool === "post")
      : []

  /** Asks the gateway to do `query` with the model's `steps`; what the chat tool was sent. */
  const orchestrate = async (page: string, steps: Parameters<FakeOpenAI["setSteps"]>[0], mode?: "code") => {
    writeFileSync(world, JSON.stringify({ pages: { [PAGE]: page } }))
    writeFileSync(log, "")
    model.setSteps(steps)
    const gateway = startGateway({
      args: ["--config", config],
      cwd: dir,
      env: cleanEnv({ OPENAI_API_KEY: "sk-flow-test-0000000000", OPENAI_BASE_URL: model.baseUrl })
    })
    try {
      await gateway.initialize()
      const reply = await gateway.request("agentify/orchestrateTask", {
        query: `Read ${PAGE} and tell #team about it`,
        ...(mode === undefined ? {} : { mode })
      })
      return { reply, posted: posted() }
    } finally {
      await gateway.close()
    }
  }

  it("a secret read on past a result's cut (agentify_read_result) is held on its way out", async () => {
    // Past the default maxResultChars (32,000): the model sees it only by reading on.
    const page = `${"The handbook, chapter by chapter.\n".repeat(1_000)}Deploy with ${SECRET}.\n`
    expect(page.indexOf(SECRET)).toBeGreaterThan(32_000)
    const { reply, posted: sent } = await orchestrate(page, [
      { tool: "web__fetch", arguments: { url: PAGE } },
      { tool: "agentify_read_result", arguments: { ref: "r1", offset: 32_000 } },
      { tool: "chat__post", arguments: { channel: "#team", text: `The key: ${SECRET}` } },
      { text: "Done." }
    ])
    expect(sent).toEqual([])
    expect(JSON.stringify(reply)).toContain("private-data-out")
    expect(JSON.stringify(reply)).toContain("agentify_read_result")
  }, 30_000)

  it("a value copied from what was read is held; the model's own words pass", async () => {
    const page = `Welcome. Deploy with ${SECRET}.\n`
    const held = await orchestrate(page, [
      { tool: "web__fetch", arguments: { url: PAGE } },
      { tool: "chat__post", arguments: { channel: "#team", text: `Deploy key is ${SECRET}` } },
      { text: "Done." }
    ])
    expect(held.posted).toEqual([])
    expect(JSON.stringify(held.reply)).toContain("private-data-out")
    const own = await orchestrate(page, [
      { tool: "web__fetch", arguments: { url: PAGE } },
      { tool: "chat__post", arguments: { channel: "#team", text: "The handbook is up to date." } },
      { text: "Done." }
    ])
    expect(own.posted.map((c) => c.arguments.text)).toEqual(["The handbook is up to date."])
  }, 30_000)

  it("code mode: a script that reads the page and posts what it holds is held, in one script or the next", async () => {
    const page = `Welcome. Deploy with ${SECRET}.\n`
    const fetch = `const page = await tools.web.fetch({ url: ${JSON.stringify(PAGE)} })`
    const inOne = await orchestrate(
      page,
      [
        {
          tool: "run_code",
          arguments: {
            code: `${fetch}\nconst text = JSON.stringify(page)\nconst key = text.slice(text.indexOf("deploy-key"), text.indexOf("deploy-key") + 26)\nawait tools.chat.post({ channel: "#team", text: "key: " + key })\nreturn "posted"`
          }
        },
        { text: "Done." }
      ],
      "code"
    )
    expect(inOne.posted).toEqual([])
    expect(JSON.stringify(inOne.reply)).toContain("private-data-out")
    // The model copies what the first script returned into a second one.
    const next = await orchestrate(
      page,
      [
        { tool: "run_code", arguments: { code: `${fetch}\nreturn page` } },
        { tool: "run_code", arguments: { code: `await tools.chat.post({ channel: "#team", text: "Deploy key is ${SECRET}" })` } },
        { text: "Done." }
      ],
      "code"
    )
    expect(next.posted).toEqual([])
    const steps = next.reply.result._meta["agentify/steps"] as Array<{ tool: string; isError: boolean }>
    expect(steps.map((step) => [step.tool, step.isError])).toEqual([
      ["web__fetch", false],
      ["chat__post", true]
    ])
    // The model is told which rule held its script's call.
    const told = model.requests
      .at(-1)!
      .body.messages.filter((m: any) => m.role === "tool")
      .at(-1).content
    expect(told).toContain("private-data-out")
  }, 30_000)

  /**
   * `query` run by the model's `steps` over server-filesystem in a folder of its own holding `file`,
   * with a client that accepts every question: the result, the folder, and the questions put.
   */
  const withAcceptingClient = async (
    name: string,
    file: { readonly name: string; readonly text: string },
    steps: (files: string) => Parameters<FakeOpenAI["setSteps"]>[0],
    query: string
  ) => {
    const files = join(dir, name)
    mkdirSync(files, { recursive: true })
    writeFileSync(join(files, file.name), file.text)
    const fsConfig = join(dir, `${name}.json`)
    const server = join(ROOT, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
    writeFileSync(
      fsConfig,
      JSON.stringify({ maxSteps: 4, backends: [{ id: "fs", command: process.execPath, args: [server, files] }] })
    )
    model.setSteps(steps(files))
    const questions: Array<string> = []
    const client = new Client({ name: "accepting", version: "1" }, { capabilities: { elicitation: {} } })
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      questions.push(String(request.params.message))
      return { action: "accept", content: {} }
    })
    const { client: connected } = await connectSdk(client, {
      config: fsConfig,
      cwd: dir,
      env: cleanEnv({ OPENAI_API_KEY: "sk-flow-test-0000000000", OPENAI_BASE_URL: model.baseUrl })
    })
    try {
      const result = await connected.callTool({ name: "agentify_orchestrate", arguments: { query } })
      return { result, files, questions }
    } finally {
      await connected.close()
    }
  }

  it("a summary sharing ordinary words with its file is the model's own: its write is asked about once, not twice", async () => {
    const { result, files, questions } = await withAcceptingClient(
      "files",
      { name: "notes.md", text: "Meeting notes: we ship on Friday. Budget approved for the new office.\n" },
      (files) => [
        { tool: "fs__read_text_file", arguments: { path: join(files, "notes.md") } },
        {
          tool: "fs__write_file",
          arguments: {
            path: join(files, "summary.md"),
            content: "Summary: the meeting agreed to ship Friday; the office budget is fine."
          }
        },
        { text: "Saved." }
      ],
      "Read notes.md and save a summary to summary.md"
    )
    expect(result.isError).not.toBe(true)
    expect(readFileSync(join(files, "summary.md"), "utf8")).toContain("Summary:")
    // confirmTools asks of the destructive write; no flow rule does (no value was copied).
    expect(questions).toHaveLength(1)
    expect(questions[0]).not.toContain("untrusted-target")
  }, 30_000)

  it("one question per call: a write that confirmTools and a flow rule both hold is asked about once, naming both", async () => {
    const { result, files, questions } = await withAcceptingClient(
      "files-once",
      { name: "clean.txt", text: "Invoice INV-7731 is paid. Ticket OPS-5521 is closed.\n" },
      (files) => [
        { tool: "fs__read_text_file", arguments: { path: join(files, "clean.txt") } },
        { tool: "fs__write_file", arguments: { path: join(files, "summary.txt"), content: "Paid: INV-7731. Closed: OPS-5521." } },
        { text: "Saved." }
      ],
      "Save a summary of clean.txt to summary.txt"
    )
    expect(result.isError).not.toBe(true)
    expect(readFileSync(join(files, "summary.txt"), "utf8")).toContain("INV-7731")
    // Once, for both grounds: the destructive write (confirmTools) and the copied values (untrusted-target).
    expect(questions).toHaveLength(1)
    expect(questions[0]).toContain("Allow fs__write_file to run")
    expect(questions[0]).toContain("untrusted-target")
  }, 30_000)

  it("the plan travels with the first turn: a one-read task costs two model requests; flowGuard off offers no plan", async () => {
    const page = "Welcome to the handbook.\n"
    const before = model.requests.length
    const planned = await orchestrate(page, [{ tool: "web__fetch", arguments: { url: PAGE } }, { text: "It welcomes you." }])
    expect(planned.reply.result._meta["agentify/plan"].tools).toContain("web__fetch")
    const turns = model.requests.slice(before)
    // The call's turn (with agentify_plan offered beside the tools) and the answer's: no plan turn of its own.
    expect(turns).toHaveLength(2)
    expect(turns[0]!.body.tools.map((t: any) => t.function.name)).toContain("agentify_plan")
    expect(turns[0]!.body.tool_choice).toBe("auto")
    expect(turns[1]!.body.tools.map((t: any) => t.function.name)).not.toContain("agentify_plan")
    // flowGuard off: no plan at all.
    const off = join(dir, "off.json")
    writeFileSync(off, JSON.stringify({ ...JSON.parse(readFileSync(config, "utf8")), flowGuard: "off" }))
    writeFileSync(world, JSON.stringify({ pages: { [PAGE]: page } }))
    model.setSteps([{ tool: "web__fetch", arguments: { url: PAGE } }, { text: "It welcomes you." }])
    const gateway = startGateway({
      args: ["--config", off],
      cwd: dir,
      env: cleanEnv({ OPENAI_API_KEY: "sk-flow-test-0000000000", OPENAI_BASE_URL: model.baseUrl })
    })
    try {
      await gateway.initialize()
      const from = model.requests.length
      const reply = await gateway.request("agentify/orchestrateTask", { query: `Read ${PAGE} and tell #team about it` })
      expect(reply.result._meta["agentify/plan"]).toBeUndefined()
      expect(model.requests.slice(from)).toHaveLength(2)
      expect(model.requests[from]!.body.tools.map((t: any) => t.function.name)).not.toContain("agentify_plan")
    } finally {
      await gateway.close()
    }
  }, 30_000)
})
