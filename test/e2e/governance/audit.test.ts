/**
 * The audit log, end to end: the built CLI over stdio with `audit` on, a client's own call, an
 * orchestration's step (the scripted model on a local Chat Completions server) and a code-mode
 * script's call; read after a clean stop (stdin EOF): one line per call and per run, each call
 * naming its run, secrets scrubbed from the arguments, the file private to its user.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { connectSdk } from "../../support/sdkClient.js"
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cleanEnv, tempDir } from "../../support/stdioClient.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { type FakeOpenAI, startFakeOpenAI } from "../../support/fakeOpenAI.js"
import { postStateless, startHttpGateway } from "../../support/httpClient.js"
import { CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { ROOT } from "../../support/stdioClient.js"
import { until } from "../../support/process.js"

const KEY = "sk-test-audit-secret-0123456789"
const TASKS = join(ROOT, "test", "fixtures", "tasks-server.mjs")

describe("the audit log", () => {
  let model: FakeOpenAI
  beforeAll(async () => {
    model = await startFakeOpenAI({ text: "nothing" })
  })
  afterAll(async () => {
    await model.close()
  })

  const session = async (audit: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const dir = tempDir()
    const config = join(dir, "gateway.json")
    writeFileSync(config, JSON.stringify({ backends: [fixtureBackend("fx")], audit, ...extra }))
    const { client } = await connectSdk(new Client({ name: "auditor", version: "2.5.0" }), {
      config,
      cwd: dir,
      env: cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: model.baseUrl })
    })
    return { dir, client }
  }
  const linesOf = (file: string) =>
    readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))

  it("has a line per call, however made, and per run; calls name their run; arguments scrubbed (full)", async () => {
    const { dir, client } = await session({ file: "audit.jsonl", arguments: "full" })
    await client.callTool({ name: "fx__echo", arguments: { text: `key ${KEY}` } })
    model.setSteps([{ tool: "fx__add", arguments: { a: 1, b: 2 } }, { text: "3" }])
    await client.callTool({ name: "agentify_orchestrate", arguments: { query: "add 1 and 2" } })
    await client.callTool({
      name: "agentify_run_code",
      arguments: { code: `return await tools.fx.echo({ text: "from a script" })` }
    })
    await client.callTool({ name: "fx__fail", arguments: {} })
    // A clean stop: everything queued is written.
    await client.close()

    const file = join(dir, "audit.jsonl")
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const lines = linesOf(file)
    const calls = lines.filter((l) => l.type === "call")
    const runs = lines.filter((l) => l.type === "run")
    expect(calls.map((c) => c.tool.exposed)).toEqual(["fx__echo", "fx__add", "fx__echo", "fx__fail"])
    expect(calls[0]).toMatchObject({
      backend: "fx",
      tool: { exposed: "fx__echo", own: "echo" },
      client: { name: "auditor", version: "2.5.0" },
      outcome: "ok",
      arguments: { text: "key <redacted>" }
    })
    expect(calls[0].parent).toBeUndefined()
    expect(typeof calls[0].ms).toBe("number")
    expect(typeof calls[0].session).toBe("string")
    expect(calls[3].outcome).toBe("isError")
    const orchestration = runs.find((r) => r.kind === "orchestration")
    const script = runs.find((r) => r.kind === "script")
    expect(orchestration).toMatchObject({ steps: 1, outcome: "ok", input: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) })
    expect(calls[1].parent).toBe(orchestration.id)
    expect(script).toMatchObject({ steps: 1, outcome: "ok" })
    expect(calls[2].parent).toBe(script.id)
    expect(readFileSync(file, "utf8")).not.toContain(KEY)
  })

  it("masks key-like arguments by name (full), in the log and in a script's calls", async () => {
    const { dir, client } = await session({ file: "audit.jsonl", arguments: "full" })
    const given = {
      text: "plain",
      api_key: "k-1",
      password: "p-2",
      token: "t-3",
      nested: { client_secret: "s-4", openai_key: "o-5" }
    }
    await client.callTool({ name: "fx__echo", arguments: given })
    const script = (await client.callTool({
      name: "agentify_run_code",
      arguments: { code: `return await tools.fx.echo(${JSON.stringify(given)})` }
    })) as any
    await client.close()
    const masked = {
      text: "plain",
      api_key: "<redacted>",
      password: "<redacted>",
      token: "<redacted>",
      nested: { client_secret: "<redacted>", openai_key: "<redacted>" }
    }
    expect(script.structuredContent.calls[0].arguments).toEqual(masked)
    const calls = linesOf(join(dir, "audit.jsonl")).filter((l) => l.type === "call")
    expect(calls.map((c) => c.arguments)).toEqual([masked, masked])
    const text = readFileSync(join(dir, "audit.jsonl"), "utf8")
    for (const secret of ["k-1", "p-2", "t-3", "s-4", "o-5"]) expect(text).not.toContain(secret)
  })

  it("a refused call has a line of its own with the error's code: a client's and a script's", async () => {
    const { dir, client } = await session({ file: "audit.jsonl" })
    const unknown = await client.callTool({ name: "fx__nothing_here", arguments: {} }).catch((e: any) => e)
    expect(unknown.code).toBe(-32602)
    const script = (await client.callTool({
      name: "agentify_run_code",
      arguments: { code: `try { await callTool("fx__absent", {}) } catch (e) { return e.message }` }
    })) as any
    expect(script.structuredContent.result).toBe("Unknown tool: fx__absent")
    await client.close()
    const lines = linesOf(join(dir, "audit.jsonl"))
    const refused = lines.filter((l) => l.type === "call")
    expect(refused.map((l) => [l.tool.exposed, l.outcome, l.backend])).toEqual([
      ["fx__nothing_here", -32602, undefined],
      ["fx__absent", -32602, undefined]
    ])
    // The script's refusal names its run.
    expect(refused[1].parent).toBe(lines.find((l) => l.type === "run").id)
  })

  it("a script's calls list every call that reached a backend: those stopped by maxCalls, and one that outlived return", async () => {
    const { dir, client } = await session({ file: "audit.jsonl" }, { codeMode: { maxCalls: 10 } })
    const stopped = (await client.callTool({
      name: "agentify_run_code",
      arguments: { code: `await Promise.all(Array.from({ length: 12 }, () => tools.fx.slow({ ms: 5000 })))` }
    })) as any
    expect(stopped.structuredContent.error.limit).toBe("maxCalls")
    const outlived = (await client.callTool({
      name: "agentify_run_code",
      arguments: { code: `(async () => { for (;;) await tools.fx.slow({ ms: 5000 }) })(); await tools.fx.echo({}); return 1` }
    })) as any
    expect(outlived.structuredContent.result).toBe(1)
    await client.close()
    const lines = linesOf(join(dir, "audit.jsonl"))
    const runs = lines.filter((l) => l.type === "run")
    const reached = (run: any) => lines.filter((l) => l.type === "call" && l.parent === run.id)
    // What each backend saw is what the script's result counts, and what its text says.
    expect(stopped.structuredContent.calls.length).toBe(reached(runs[0]).length)
    expect(stopped.structuredContent.calls.length).toBeGreaterThan(0)
    expect(stopped.content[0].text).toContain(`; ${reached(runs[0]).length} tool call`)
    expect(outlived.structuredContent.calls.map((c: any) => c.tool).sort()).toEqual(
      reached(runs[1])
        .map((l) => l.tool.exposed)
        .sort()
    )
    expect(outlived.structuredContent.calls).toContainEqual(expect.objectContaining({ tool: "fx__slow", interrupted: true }))
  })

  it("a call made in each of the six ways leaves one line naming how it was made (via)", async () => {
    const dir = tempDir()
    const file = join(dir, "audit.jsonl")
    const gateway = await startHttpGateway({
      env: { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: model.baseUrl },
      config: {
        backends: [fixtureBackend("fx"), { id: "jobs", command: process.execPath, args: [TASKS] }],
        audit: { file }
      }
    })
    try {
      const client = new Client({ name: "ways", version: "1" })
      await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp`)))
      await until("both backends", async () => {
        const names = (await client.listTools()).tools.map((t) => t.name)
        return names.includes("fx__echo") && names.includes("jobs__slow")
      })
      await client.callTool({ name: "fx__echo", arguments: { text: "client" } })
      model.setSteps([{ tool: "fx__add", arguments: { a: 1, b: 2 } }, { text: "3" }])
      await client.callTool({ name: "agentify_orchestrate", arguments: { query: "add" } })
      await client.callTool({ name: "agentify_run_code", arguments: { code: `return await tools.fx.echo({ text: "script" })` } })
      await client.request(
        { method: "tools/call", params: { name: "jobs__slow", arguments: { ms: 1, text: "task" }, task: { ttl: 60_000 } } },
        CreateTaskResultSchema
      )
      const own = new Client({ name: "own", version: "1" })
      await own.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/servers/fx/mcp`)))
      await own.callTool({ name: "echo", arguments: { text: "endpoint" } })
      await own.close()
      const stateless = await postStateless(`${gateway.base}/mcp`, "tools/call", {
        name: "fx__echo",
        arguments: { text: "stateless" }
      })
      expect(stateless.body.result.isError).toBeFalsy()
      await client.close()
      const lines = await until("six call lines", () => {
        const calls = existsSync(file) ? linesOf(file).filter((l) => l.type === "call") : []
        return calls.length >= 6 ? calls : undefined
      })
      // Each names the tool both ways (a backend's own endpoint calls it by its own name).
      expect(lines.map((l) => [l.via, l.tool.exposed, l.tool.own]).sort()).toEqual(
        [
          ["backend-endpoint", "fx__echo", "echo"],
          ["client", "fx__echo", "echo"],
          ["client", "fx__echo", "echo"],
          ["orchestration", "fx__add", "add"],
          ["script", "fx__echo", "echo"],
          ["task", "jobs__slow", "slow"]
        ].sort()
      )
      expect(lines.every((l) => l.outcome === "ok" && typeof l.backend === "string")).toBe(true)
    } finally {
      await gateway.close()
    }
  })

  it("holds a hash of the arguments by default, and none with arguments: none", async () => {
    const hashed = await session({ file: "a.jsonl" })
    await hashed.client.callTool({ name: "fx__echo", arguments: { text: "private words" } })
    await hashed.client.close()
    const [line] = linesOf(join(hashed.dir, "a.jsonl"))
    expect(line.arguments).toMatch(/^sha256:[0-9a-f]{64}$/)
    expect(readFileSync(join(hashed.dir, "a.jsonl"), "utf8")).not.toContain("private words")

    const none = await session({ file: "b.jsonl", arguments: "none" })
    await none.client.callTool({ name: "fx__echo", arguments: { text: "private words" } })
    await none.client.close()
    expect(linesOf(join(none.dir, "b.jsonl"))[0]).not.toHaveProperty("arguments")
  })

  it("the debug UI shows a run's audit id, and the run's line has it", async () => {
    const dir = tempDir()
    const gateway = await startHttpGateway({
      args: ["--debug-port", "0"],
      env: { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: model.baseUrl },
      config: { backends: [fixtureBackend("fx")], audit: { file: join(dir, "audit.jsonl") } }
    })
    try {
      const port = await until("the debug UI", () => /debug UI at http:\/\/127\.0\.0\.1:(\d+)\//.exec(gateway.stderr())?.[1])
      const debug = `http://127.0.0.1:${port}`
      const client = new Client({ name: "auditor", version: "1" })
      await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp`)))
      await until("fx ready", async () => (await client.listTools()).tools.some((t) => t.name === "fx__add"))
      model.setSteps([{ tool: "fx__add", arguments: { a: 2, b: 2 } }, { text: "4" }])
      await client.callTool({ name: "agentify_orchestrate", arguments: { query: "add 2 and 2" } })
      await client.close()
      const shown = await until("the run in the debug UI", async () => {
        const runs = (await (await fetch(`${debug}/api/orchestrations`)).json()) as Array<any>
        return runs.find((r) => r.query === "add 2 and 2" && r.auditId !== undefined)
      })
      const line = await until("the run's line", () =>
        existsSync(join(dir, "audit.jsonl")) ? linesOf(join(dir, "audit.jsonl")).find((l) => l.type === "run") : undefined
      )
      expect(shown.auditId).toBe(line.id)
    } finally {
      await gateway.close()
    }
  })
})
