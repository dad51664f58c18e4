/**
 * Cancellation end to end, through the built CLI and the real openai client: `notifications/cancelled`
 * (and LSP's `$/cancelRequest`) from the client aborts the LLM's HTTP request, sends
 * `notifications/cancelled` to the backend for a passthrough or orchestrated call, and the
 * cancelled request still gets its single reply, -32800.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type FakeOpenAI, startFakeOpenAI } from "../support/fakeOpenAI.js"
import { fixtureBackend } from "../support/mcpFixture.js"
import { cleanEnv, Client, closeCleanly, descendants, sleep, until, writeConfig } from "./support.js"

const CANCELLED = { code: -32800, message: "Request cancelled" }

describe("cancellation end to end", () => {
  let fake: FakeOpenAI
  let client: Client
  let tree: Array<number> = []

  beforeAll(async () => {
    fake = await startFakeOpenAI()
    client = new Client({
      args: ["--config", writeConfig({ backends: [fixtureBackend("fx")], requestTimeoutMs: 60_000 })],
      // The default LLM timeout (30 s) stays: only the cancellation can end these requests early.
      env: cleanEnv({ OPENAI_API_KEY: "sk-cancel-test-000000", OPENAI_BASE_URL: fake.baseUrl })
    })
    await client.initialize()
    // initialize does not wait for the backends; a first request does.
    await client.request("tools/list")
    tree = descendants(client.pid)
  })

  afterAll(async () => {
    await closeCleanly(client, tree)
    await fake.close()
  })

  /** The cancellations the fixture backend has received so far. */
  const backendCancellations = async (): Promise<Array<{ requestId: number; reason?: string }>> =>
    (await client.callTool("fx__cancelled")).result.structuredContent.cancellations

  /** The backend's recorded cancellations, once there are more than `before` (polled up to 2.5 s). */
  const cancellationsAfter = async (before: number): Promise<Array<{ requestId: number; reason?: string }>> => {
    let cancellations = await backendCancellations()
    for (let i = 0; i < 50 && cancellations.length === before; i++) {
      await sleep(50)
      cancellations = await backendCancellations()
    }
    return cancellations
  }

  /** After a moment, still exactly one reply for `id`: a cancelled request is not answered twice. */
  const expectSingleReply = async (id: string) => {
    await client.request("ping")
    await sleep(200)
    expect(client.counts.get(id)).toBe(1)
  }

  it.each([
    {
      how: "notifications/cancelled",
      method: "notifications/cancelled",
      params: (id: string) => ({ requestId: id, reason: "user pressed stop" })
    },
    { how: "$/cancelRequest", method: "$/cancelRequest", params: (id: string) => ({ id }) }
  ])("$how aborts the in-flight LLM request; the request gets one -32800", async ({ method, params }) => {
    fake.setReply({ hang: true })
    const requests = fake.requests.length
    const aborted = fake.aborted
    const id = `llm-${method}`
    const started = Date.now()
    const reply = client.request("agentify/orchestrateTask", { query: "this will hang" }, id)
    await fake.untilRequests(requests + 1)
    client.notify(method, params(id))
    expect((await reply).error).toEqual(CANCELLED)
    await fake.untilAborted(aborted + 1)
    // Well before the 30 s LLM timeout that would otherwise have ended it.
    expect(Date.now() - started).toBeLessThan(15_000)
    await expectSingleReply(id)
  })

  it("cancelling the agentify_orchestrate tool call aborts the LLM request too", async () => {
    fake.setReply({ hang: true })
    const requests = fake.requests.length
    const aborted = fake.aborted
    const reply = client.callTool("agentify_orchestrate", { query: "this will hang" }, "tool-llm")
    await fake.untilRequests(requests + 1)
    client.notify("notifications/cancelled", { requestId: "tool-llm" })
    expect((await reply).error).toEqual(CANCELLED)
    await fake.untilAborted(aborted + 1)
    await expectSingleReply("tool-llm")
  })

  it("cancelling a passthrough call sends notifications/cancelled to the backend", async () => {
    const before = (await backendCancellations()).length
    const reply = client.callTool("fx__slow", { ms: 60_000 }, "pass-slow")
    // The request reaches the backend as soon as the gateway reads it; give it a moment to be read.
    await sleep(300)
    client.notify("notifications/cancelled", { requestId: "pass-slow", reason: "not needed" })
    expect((await reply).error).toEqual(CANCELLED)
    const cancellations = await cancellationsAfter(before)
    expect(cancellations.length).toBe(before + 1)
    expect(cancellations[before]).toMatchObject({ requestId: expect.any(Number), reason: expect.any(String) })
    await expectSingleReply("pass-slow")
  })

  it("cancelling an orchestration while its backend call runs cancels the backend call", async () => {
    fake.setReply({ tool: "fx__slow", arguments: { ms: 60_000 } })
    const before = (await backendCancellations()).length
    const plans = () => client.stderr().split('"msg":"orchestration plan"').length
    const plansBefore = plans()
    const reply = client.request("agentify/orchestrateTask", { query: "take your time" }, "orc-slow")
    // The plan is logged, then the backend call goes out in the same step; a moment more for it to be read.
    await until("the orchestration plan", () => plans() > plansBefore)
    await sleep(100)
    client.notify("notifications/cancelled", { requestId: "orc-slow" })
    expect((await reply).error).toEqual(CANCELLED)
    const cancellations = await cancellationsAfter(before)
    expect(cancellations.length).toBe(before + 1)
    await expectSingleReply("orc-slow")
  })

  it("a cancelled request inside a batch gets -32800 in the batch reply; the others their results", async () => {
    fake.setReply({ hang: true })
    const requests = fake.requests.length
    client.send([
      { jsonrpc: "2.0", id: "batch-llm", method: "agentify/orchestrateTask", params: { query: "hang in a batch" } },
      { jsonrpc: "2.0", id: "batch-echo", method: "tools/call", params: { name: "fx__echo", arguments: { text: "b" } } }
    ])
    await fake.untilRequests(requests + 1)
    client.notify("notifications/cancelled", { requestId: "batch-llm" })
    const [llm, echo] = await Promise.all([client.reply("batch-llm"), client.reply("batch-echo")])
    expect(llm.error).toEqual(CANCELLED)
    expect(echo.result?.content?.[0]?.text).toBe('{"text":"b"}')
    expect(client.batches.some((b) => b.length === 2 && b.some((r) => r.id === "batch-llm"))).toBe(true)
    await expectSingleReply("batch-llm")
  })

  it("cancelling a request that already finished, or one never sent, changes nothing", async () => {
    const done = await client.callTool("fx__echo", { text: "done" }, "finished")
    expect(done.result).toBeDefined()
    client.notify("notifications/cancelled", { requestId: "finished" })
    client.notify("notifications/cancelled", { requestId: "never-sent" })
    client.notify("notifications/cancelled", { requestId: { not: "an id" } })
    client.notify("notifications/cancelled", {})
    await expectSingleReply("finished")
    expect(client.counts.has("never-sent")).toBe(false)
    expect(client.nullReplies).toEqual([])
  })
})
