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
import { startHttpGateway } from "../../support/httpClient.js"
import { until } from "../../support/process.js"

const KEY = "sk-test-audit-secret-0123456789"

describe("the audit log", () => {
  let model: FakeOpenAI
  beforeAll(async () => {
    model = await startFakeOpenAI({ text: "nothing" })
  })
  afterAll(async () => {
    await model.close()
  })

  const session = async (audit: Record<string, unknown>) => {
    const dir = tempDir()
    const config = join(dir, "gateway.json")
    writeFileSync(config, JSON.stringify({ backends: [fixtureBackend("fx")], audit }))
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
