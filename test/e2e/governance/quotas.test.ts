/**
 * `limits` through the built CLI over stdio, with a real backend: a tool's calls per minute, and
 * the subject's, counted for a client's own calls and a script's alike; past them -32029 (or the
 * script's error) names the limit and when to retry, and other tools still run. Over HTTP, under
 * concurrent load: a backend's calls at once hold as the backend itself counts them, and a whole
 * request refused is 429 with Retry-After.
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, type HttpGateway, openSession, postStateless, startHttpGateway } from "../../support/httpClient.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { type CliClient, startGateway, tempDir } from "../../support/stdioClient.js"
import { startFakeOpenAI } from "../../support/fakeOpenAI.js"

describe("quotas (limits) over stdio", () => {
  let client: CliClient
  beforeAll(async () => {
    const config = join(tempDir(), "gateway.json")
    writeFileSync(
      config,
      JSON.stringify({
        backends: [fixtureBackend("fx")],
        limits: { subject: { callsPerMinute: 5 }, tools: { fx__add: { callsPerMinute: 2 } } }
      })
    )
    client = startGateway({ args: ["--config", config] })
    await client.initialize()
  })
  afterAll(async () => {
    await client.close()
  })

  it("a tool past its calls per minute is refused naming the limit and when to retry; the subject's count goes on", async () => {
    expect((await client.callTool("fx__add", { a: 1, b: 2 })).result?.isError).not.toBe(true)
    expect((await client.callTool("fx__add", { a: 1, b: 2 })).result?.isError).not.toBe(true)
    const refused = await client.callTool("fx__add", { a: 1, b: 2 })
    expect(refused.error?.code).toBe(-32029)
    expect(refused.error?.message).toMatch(
      /^Too many calls: fx__add is past limits\.tools\["fx__add"\] \(2 calls per minute\); retry in \d+ s$/
    )
    expect(refused.error?.data).toMatchObject({ limit: 'limits.tools["fx__add"]' })
    // Another tool runs: the subject has used 3 of its 5 (the refused call took none).
    expect((await client.callTool("fx__echo", { text: "a" })).result?.isError).not.toBe(true)
    // A script's calls count against the same subject: its third call is the subject's sixth.
    const script = await client.callTool("agentify_run_code", {
      code: 'await tools.fx.echo({ text: "b" }); await tools.fx.echo({ text: "c" }); return await tools.fx.echo({ text: "d" })'
    })
    expect(script.result?.isError).toBe(true)
    expect(JSON.stringify(script.result?.content)).toContain("past limits.subject (5 calls per minute)")
  }, 30_000)
})

describe("quotas (limits) in an orchestration", () => {
  it("a planned call past a quota answers -32029 with when to retry, not an invalid plan", async () => {
    const model = await startFakeOpenAI({ tool: "fx__add", arguments: { a: 1, b: 2 } })
    const config = join(tempDir(), "gateway.json")
    writeFileSync(
      config,
      JSON.stringify({ backends: [fixtureBackend("fx")], limits: { tools: { fx__add: { callsPerMinute: 1 } } } })
    )
    const client = startGateway({
      args: ["--config", config],
      env: { OPENAI_API_KEY: "sk-quotas-test-123456", OPENAI_BASE_URL: model.baseUrl }
    })
    try {
      await client.initialize()
      expect((await client.callTool("fx__add", { a: 1, b: 2 })).result?.isError).not.toBe(true)
      const refused = await client.request("agentify/orchestrateTask", { query: "add one and two", maxSteps: 1 })
      expect(refused.error?.code).toBe(-32029)
      expect(refused.error?.message).toMatch(/^Too many calls: fx__add is past limits\.tools\["fx__add"\]/)
      expect(refused.error?.data).toMatchObject({ limit: 'limits.tools["fx__add"]', retryAfterMs: expect.any(Number) })
    } finally {
      await client.close()
      await model.close()
    }
  }, 60_000)
})

describe("quotas (limits) over HTTP, under concurrent load", () => {
  let gateway: HttpGateway
  let url: string
  beforeAll(async () => {
    gateway = await startHttpGateway({
      config: {
        backends: [fixtureBackend("fx")],
        limits: { backends: { fx: { concurrent: 3 } }, tools: { fx__add: { callsPerMinute: 1 } } }
      }
    })
    url = `${gateway.base}/mcp`
  })
  afterAll(async () => {
    await gateway?.close()
  })

  const slowCalls = (sessionId: string, n: number, from: number) =>
    Promise.all(
      Array.from({ length: n }, (_, i) =>
        call(url, sessionId, from + i, "tools/call", { name: "fx__slow", arguments: { ms: 1_500 } })
      )
    )

  it("twenty calls at once against `concurrent: 3`: the backend never runs more than three, the rest get 429 with Retry-After, and the places come back", async () => {
    const { sessionId } = await openSession(url)
    const replies = await slowCalls(sessionId, 20, 1)
    const served = replies.filter((r) => r.status === 200)
    const refused = replies.filter((r) => r.status === 429)
    expect(served.length + refused.length).toBe(20)
    expect(refused.length).toBeGreaterThan(0)
    for (const r of served) expect(r.messages[0].result.isError).not.toBe(true)
    // What the backend itself counted: never more than three of its slow calls at once.
    const inFlight = served.map((r) => r.messages[0].result.structuredContent.inFlight as number)
    expect(Math.max(...inFlight)).toBeLessThanOrEqual(3)
    for (const r of refused) {
      expect(r.headers.get("retry-after")).toBe("1")
      expect(r.messages[0].error).toMatchObject({ code: -32029, data: { limit: 'limits.backends["fx"]' } })
      expect(r.messages[0].error.message).toContain("(3 calls at once)")
    }
    // Every place was given back: three more at once all run.
    const again = await slowCalls(sessionId, 3, 100)
    expect(again.map((r) => r.status)).toEqual([200, 200, 200])
  }, 60_000)

  it("a 2026-07-28 request past a tool's calls per minute is 429 with Retry-After in seconds", async () => {
    const first = await postStateless(url, "tools/call", { name: "fx__add", arguments: { a: 1, b: 2 } })
    expect(first.status).toBe(200)
    expect(first.body.result.structuredContent).toEqual({ sum: 3 })
    const res = await postStateless(url, "tools/call", { name: "fx__add", arguments: { a: 1, b: 2 } })
    expect(res.status).toBe(429)
    const seconds = Number(res.headers.get("retry-after"))
    expect(seconds).toBeGreaterThanOrEqual(1)
    expect(seconds).toBeLessThanOrEqual(60)
    const body = res.body
    expect(body.error.code).toBe(-32029)
    expect(body.error.message).toContain(`retry in ${seconds} s`)
  }, 30_000)
})
