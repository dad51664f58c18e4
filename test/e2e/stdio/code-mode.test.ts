/**
 * Code mode (`agentify_run_code`) through the built CLI with the real server-filesystem and
 * server-memory: scripts that call tools, the rules of a direct call kept inside the script
 * (filters, checked arguments, confirmation, dry run), and the sandbox's limits, with the gateway
 * answering meanwhile.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { serverFilesystemEntry } from "../../../src/config/Config.js"
import { BIN, cleanEnv, ROOT, startGateway, tempDir } from "../../support/stdioClient.js"
import { type FakeOpenAI, startFakeOpenAI } from "../../support/fakeOpenAI.js"

const MEMORY = join(ROOT, "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js")

const root = tempDir("agentify-code-")
writeFileSync(join(root, "pelican.txt"), "the pelican nests by the sea\n")
writeFileSync(join(root, "gulls.txt"), "gulls steal chips\n")
writeFileSync(join(root, "heron.txt"), "a heron and a pelican\n")
const config = (extra: Record<string, unknown> = {}) => {
  const file = join(tempDir(), "agentify.json")
  writeFileSync(
    file,
    JSON.stringify({
      ...extra,
      backends: [
        { id: "fs", command: process.execPath, args: [serverFilesystemEntry(), root], ...(extra.fs as object) },
        { id: "mem", command: process.execPath, args: [MEMORY], env: { MEMORY_FILE_PATH: join(root, "memory.jsonl") } }
      ],
      fs: undefined
    })
  )
  return file
}

describe("agentify_run_code over stdio", () => {
  let gateway: ReturnType<typeof startGateway>
  beforeAll(async () => {
    // A time far past what any script here needs, so that a busy machine never ends one at
    // timeoutMs first (the limits' tests assert which limit ends it; the timeout test sets its own).
    gateway = startGateway({ args: ["--config", config({ codeMode: { timeoutMs: 120_000 } })], cwd: root })
    await gateway.initialize()
  })
  afterAll(async () => {
    expect(await gateway.close()).toEqual({ code: 0, signal: null })
  })
  const run = async (args: Record<string, unknown>) =>
    (await gateway.callTool("agentify_run_code", args, undefined, 60_000)).result
  /** A script sent without waiting for its reply (which `gateway.reply(id)` then waits for). */
  const start = (id: string, code: string, timeoutMs: number) =>
    gateway.send({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "agentify_run_code", arguments: { code, timeoutMs } }
    })

  it("is listed beside agentify_orchestrate, declaring the tools a script can call", async () => {
    const listed = (await gateway.request("tools/list")).result.tools
    const tool = listed.find((t: any) => t.name === "agentify_run_code")
    expect(listed[0].name).toBe("agentify_orchestrate")
    expect(tool.description).toContain("declare const tools: {")
    expect(tool.description).toMatch(/ fs: \{[\s\S]*read_text_file\(args: \{[\s\S]*path: string/)
    expect(tool.description).toMatch(/ mem: \{[\s\S]*create_entities\(/)
    expect(tool.inputSchema.required).toEqual(["code"])
  })

  it("two calls, data combined in the script, an object returned; logs and calls reported", async () => {
    // A folder of its own: other tests write files of theirs in the root.
    const birds = join(root, "birds")
    mkdirSync(birds, { recursive: true })
    for (const name of ["pelican.txt", "gulls.txt", "heron.txt"]) writeFileSync(join(birds, name), readFileSync(join(root, name)))
    const result = await run({
      code: `
        const listing = await tools.fs.list_directory({ path: ${JSON.stringify(birds)} })
        const names = String(listing.content ?? listing).split("\\n").filter((l) => l.startsWith("[FILE]")).map((l) => l.slice(7))
        console.log("files:", names.length)
        const hits = []
        for (const name of names.filter((n) => n.endsWith(".txt"))) {
          const file = await callTool("fs__read_text_file", { path: ${JSON.stringify(birds)} + "/" + name })
          if (String(file.content ?? file).includes("pelican")) hits.push(name)
        }
        return { hits }`
    })
    expect(result.isError).toBeUndefined()
    expect(result.structuredContent.result).toEqual({ hits: ["heron.txt", "pelican.txt"] })
    expect(JSON.parse(result.content[0].text)).toEqual({ hits: ["heron.txt", "pelican.txt"] })
    expect(result.structuredContent.logs[0]).toMatch(/^files: \d+$/)
    expect(result.structuredContent.calls.map((c: any) => [c.tool, c.isError])).toEqual([
      ["fs__list_directory", false],
      ["fs__read_text_file", false],
      ["fs__read_text_file", false],
      ["fs__read_text_file", false]
    ])
  })

  it("invalid arguments reject inside the script, before any backend sees them; TypeScript annotations are stripped", async () => {
    const result = await run({
      code: `
        let message: string = ""
        try { await tools.fs.read_text_file({ path: 42 }) } catch (e: any) { message = e.message }
        return message`
    })
    expect(result.isError).toBeUndefined()
    expect(result.content[0].text).toBe("Invalid arguments for fs__read_text_file: /path: must be string")
    expect(result.structuredContent.calls).toEqual([
      { tool: "fs__read_text_file", arguments: { path: 42 }, ms: 0, isError: true }
    ])
  })

  it("searchTools() inside a script returns the declarations of the tools that match a query, and of none when none does", async () => {
    const result = await run({ code: `return await searchTools("read a file's text")` })
    expect(result.isError).toBeUndefined()
    expect(result.content[0].text).toContain("read_text_file(args: {")
    expect(result.content[0].text).toMatch(/^declare const tools: \{/)
    // Only tools that match: a query that matches none gets none (not the catalog's first tools).
    const none = await run({ code: `return await searchTools("xylophone quartz zebra")` })
    expect(none.content[0].text).toBe("// no tool matches")
  })

  it("a script that throws is an isError result naming the error, its line and the calls made", async () => {
    const result = await run({
      code: `await tools.fs.list_allowed_directories({})\nconst found = []\nif (found.length === 0) throw new Error("nothing found")`
    })
    expect(result.isError).toBe(true)
    expect(result.content[0].text).toBe("Error (line 3): nothing found; 1 tool call made")
    expect(result.structuredContent.calls).toHaveLength(1)
    const typeError = await run({ code: `const x = null\nreturn x.y` })
    expect(typeError.content[0].text).toBe("TypeError: cannot read property 'y' of null; 0 tool calls made")
  })

  it("no host objects, and no way to reach them", async () => {
    const result = await run({
      code: `return {
        process: typeof process, require: typeof require, fetch: typeof fetch, Buffer: typeof Buffer,
        escape: typeof constructor.constructor("return this")().process,
        viaFunction: (() => { try { return typeof Function("return process")() } catch (e) { return e.name } })(),
        importing: await import("node:fs").then(() => "loaded", (e) => e.name)
      }`
    })
    expect(result.structuredContent.result).toEqual({
      process: "undefined",
      require: "undefined",
      fetch: "undefined",
      Buffer: "undefined",
      escape: "undefined",
      viaFunction: "ReferenceError",
      importing: expect.not.stringMatching(/^loaded$/)
    })
  })

  it("an endless loop is stopped at timeoutMs while the gateway answers pings", async () => {
    start("loop", "while (true) {}", 1_500)
    const ping = await gateway.request("ping")
    expect(ping.result).toEqual({})
    // The ping was answered while the script still ran.
    expect(gateway.counts.has("loop")).toBe(false)
    const stopped = (await gateway.reply("loop")).result
    expect(stopped.isError).toBe(true)
    expect(stopped.content[0].text).toContain("the script ran longer than timeoutMs (1500 ms) [limit: timeoutMs]")
  })

  it("a memory bomb and a 50 MB result end at their limits; the gateway goes on", async () => {
    const bomb = await run({ code: `const a = []; while (true) a.push("x".repeat(1e6))` })
    expect(bomb.isError).toBe(true)
    expect(bomb.structuredContent.error.limit).toBe("memoryMb")
    const big = await run({ code: `return "x".repeat(50 * 1024 * 1024)` })
    expect(big.isError).toBe(true)
    expect(["memoryMb", "maxOutputBytes"]).toContain(big.structuredContent.error.limit)
    expect(JSON.stringify(big).length).toBeLessThan(10_000)
    expect((await gateway.request("ping")).result).toEqual({})
    // Two scripts that fill their memory, each recycled after: 30 s at load 23.
  }, 90_000)

  it("a value JSON cannot hold is the script's error, named at once, and the gateway stays up", async () => {
    const cases: Array<[string, RegExp]> = [
      ["return () => 1", /returned a function, which JSON cannot hold/],
      ['return Symbol("s")', /returned a symbol/],
      ["return { toJSON() { return undefined } }", /toJSON gave undefined/],
      ["return 1n", /cannot be written as JSON \(BigInt/],
      ["const a = {}; a.a = a; return a", /cannot be written as JSON \(circular/],
      ['return { get x() { throw new Error("boom") } }', /cannot be written as JSON \(boom\)/]
    ]
    for (const [code, said] of cases) {
      const result = await run({ code, timeoutMs: 60_000 })
      expect(result.isError).toBe(true)
      expect(result.structuredContent.error.name).toBe("TypeError")
      expect(result.content[0].text).toMatch(said)
      // Named, not waited out: no limit was reached.
      expect(result.structuredContent.error.limit).toBeUndefined()
    }
    expect((await gateway.request("ping")).result).toEqual({})
  })

  it("an object memory bomb ends at memoryMb, not 'Error: null'", async () => {
    const bomb = await run({ code: `const a = []; while (true) a.push({ i: a.length })` })
    expect(bomb.isError).toBe(true)
    expect(bomb.structuredContent.error.limit).toBe("memoryMb")
    expect(bomb.content[0].text).not.toContain("null")
  })

  it("10,000 calls stop at maxCalls", async () => {
    const result = await run({ code: `for (let i = 0; i < 10000; i++) await tools.fs.list_allowed_directories({})` })
    expect(result.isError).toBe(true)
    expect(result.structuredContent.error.limit).toBe("maxCalls")
    expect(result.structuredContent.calls).toHaveLength(100)
  })

  it("notifications/cancelled stops the script: one reply, -32800", async () => {
    start("to-cancel", "while (true) {}", 60_000)
    await gateway.request("ping")
    gateway.notify("notifications/cancelled", { requestId: "to-cancel" })
    expect((await gateway.reply("to-cancel")).error?.code).toBe(-32800)
    expect(gateway.counts.get("to-cancel")).toBe(1)
  })

  it("dryRun: read-only tools run, every other call is held back and listed", async () => {
    const target = join(root, "dry.txt")
    const result = await run({
      dryRun: true,
      code: `
        const before = await tools.fs.read_text_file({ path: ${JSON.stringify(join(root, "gulls.txt"))} })
        const written = await tools.fs.write_file({ path: ${JSON.stringify(target)}, content: "x" })
        let refused = ""
        try { await tools.fs.write_file({ path: ${JSON.stringify(target)} }) } catch (e) { refused = e.message }
        return { read: String(before.content ?? before), written, refused }`
    })
    expect(result.structuredContent.result).toMatchObject({ read: "gulls steal chips\n", written: { dryRun: true } })
    // A preview checks what it holds back: a call with arguments its tool would refuse rejects.
    expect(result.structuredContent.result.refused).toMatch(/^Invalid arguments for fs__write_file: .*content/)
    expect(result.structuredContent.calls.map((c: any) => [c.tool, c.dryRun === true])).toEqual([
      ["fs__read_text_file", false],
      ["fs__write_file", true],
      ["fs__write_file", false]
    ])
    expect(existsSync(target)).toBe(false)
  })
})

// Each test starts a gateway of its own with two backends: 25 s at load 23 on 2 cores.
describe("the rules of a direct call, inside the script", { timeout: 90_000 }, () => {
  const connect = async (file: string, answer?: "accept" | "decline") => {
    const client = new Client({ name: "sdk", version: "1" }, answer === undefined ? {} : { capabilities: { elicitation: {} } })
    const asked: Array<string> = []
    if (answer !== undefined) {
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params.message)
        return { action: answer }
      })
    }
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "--config", file],
        env: cleanEnv() as Record<string, string>,
        stderr: "pipe"
      })
    )
    return { client, asked }
  }
  const write = (target: string) => ({
    name: "agentify_run_code",
    arguments: {
      code: `try { await tools.fs.write_file({ path: ${JSON.stringify(target)}, content: "yes" }); return "written" } catch (e) { return e.message }`
    }
  })

  for (const [answer, expected] of [
    ["accept", "written"],
    ["decline", 'Not run: the user declined to run fs__write_file (confirmTools: "destructive")'],
    [
      undefined,
      'Not run: fs__write_file runs only after the user agrees (confirmTools: "destructive"), and this client cannot be asked'
    ]
  ] as const) {
    it(`confirmTools inside a script: ${answer ?? "a client that cannot be asked"}`, async () => {
      const target = join(root, `confirmed-${answer ?? "unasked"}.txt`)
      const { client, asked } = await connect(config(), answer)
      try {
        const result = (await client.callTool(write(target))) as any
        expect(result.content[0].text).toBe(expected)
        expect(existsSync(target)).toBe(answer === "accept")
        if (answer !== undefined) expect(asked[0]).toContain("fs__write_file")
        if (answer === "accept") expect(readFileSync(target, "utf8")).toBe("yes")
      } finally {
        await client.close()
      }
    })
  }

  it("a tool the backend's filters hide does not exist in the script, and callTool refuses it", async () => {
    const { client } = await connect(config({ fs: { denyTools: ["write_file"] } }))
    try {
      const result = (await client.callTool({
        name: "agentify_run_code",
        arguments: {
          code: `const missing = typeof tools.fs.write_file
            let refused = ""
            try { await callTool("fs__write_file", { path: "/tmp/x", content: "x" }) } catch (e) { refused = e.message }
            return { missing, refused }`
        }
      })) as any
      expect(result.structuredContent.result).toEqual({ missing: "undefined", refused: "Unknown tool: fs__write_file" })
      const listed = await client.listTools()
      expect(listed.tools.find((t) => t.name === "agentify_run_code")!.description).not.toContain("write_file")
    } finally {
      await client.close()
    }
  })

  it("codeMode: false removes the tool", async () => {
    const gateway = startGateway({ args: ["--config", config({ codeMode: false })] })
    try {
      await gateway.initialize()
      const names = (await gateway.request("tools/list")).result.tools.map((t: any) => t.name)
      expect(names).not.toContain("agentify_run_code")
      const refused = await gateway.callTool("agentify_run_code", { code: "return 1" })
      expect(refused.error?.code).toBe(-32602)
    } finally {
      await gateway.close()
    }
  })
})

describe("orchestrateTask in code mode, through the real openai client", () => {
  let fake: FakeOpenAI
  let gateway: ReturnType<typeof startGateway>
  beforeAll(async () => {
    fake = await startFakeOpenAI()
    gateway = startGateway({
      args: ["--config", config()],
      env: cleanEnv({ OPENAI_API_KEY: "sk-code-mode-7b21c9", OPENAI_BASE_URL: fake.baseUrl }),
      cwd: root
    })
    await gateway.initialize()
  })
  afterAll(async () => {
    await gateway.close()
    await fake.close()
  })
  const good = `const files = ["pelican.txt", "gulls.txt", "heron.txt"]
    const hits = []
    for (const f of files) {
      const t = await tools.fs.read_text_file({ path: ${JSON.stringify(root)} + "/" + f })
      if (String(t.content ?? t).includes("pelican")) hits.push(f)
    }
    return { hits }`

  it("the model writes a script; a failing one goes back to it for a repair; the result carries the script and its calls", async () => {
    fake.setSteps([
      { tool: "run_code", arguments: { code: `throw new Error("first try")` } },
      { tool: "run_code", arguments: { code: good } },
      { text: "pelican.txt and heron.txt mention the pelican." }
    ])
    const before = fake.requests.length
    const reply = await gateway.request("agentify/orchestrateTask", { query: "which files mention the pelican?", mode: "code" })
    expect(reply.error).toBeUndefined()
    expect(JSON.parse(reply.result.content[0].text)).toEqual({ hits: ["pelican.txt", "heron.txt"] })
    expect(reply.result._meta["agentify/code"]).toBe(good)
    expect(reply.result._meta["agentify/answer"]).toBe("pelican.txt and heron.txt mention the pelican.")
    expect(reply.result._meta["agentify/steps"].map((s: any) => s.tool)).toEqual([
      "fs__read_text_file",
      "fs__read_text_file",
      "fs__read_text_file"
    ])
    // One function offered, declaring the tools; the system prompt asks for a script.
    const first = fake.requests[before]!.body
    expect(first.tools.map((t: any) => t.function.name)).toEqual(["run_code"])
    expect(first.tools[0].function.description).toContain("read_text_file(args: {")
    expect(first.messages[0].content).toContain("writing one JavaScript script")
    // The failure was the tool message of the repair turn.
    const repair = fake.requests[before + 1]!.body.messages.find((m: any) => m.role === "tool").content
    expect(repair).toContain("The script failed: Error (line 1): first try")
  })

  it("dryRun: the script runs with its writes held back, and nothing is written", async () => {
    const target = join(root, "code-dry.txt")
    fake.setSteps([
      {
        tool: "run_code",
        arguments: { code: `await tools.fs.write_file({ path: ${JSON.stringify(target)}, content: "x" }); return "ok"` }
      }
    ])
    const reply = await gateway.request("agentify/orchestrateTask", { query: "write it", mode: "code", dryRun: true })
    expect(reply.error).toBeUndefined()
    expect(reply.result.structuredContent.calls).toEqual([
      { tool: "fs__write_file", arguments: { path: target, content: "x" }, ms: 0, isError: false, dryRun: true }
    ])
    expect(reply.result._meta["agentify/code"]).toContain("write_file")
    expect(existsSync(target)).toBe(false)
  })

  it("mode code with codeMode false is -32602", async () => {
    const off = startGateway({
      args: ["--config", config({ codeMode: false })],
      env: cleanEnv({ OPENAI_API_KEY: "sk-code-mode-7b21c9", OPENAI_BASE_URL: fake.baseUrl })
    })
    try {
      await off.initialize()
      const reply = await off.request("agentify/orchestrateTask", { query: "x", mode: "code" })
      expect(reply.error).toMatchObject({ code: -32602, message: expect.stringContaining("codeMode is false") })
    } finally {
      await off.close()
    }
  })
})
