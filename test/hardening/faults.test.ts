/**
 * Fault injection through the built CLI: backends that crash, hang, die at start-up, write broken
 * JSON, flood stderr or answer with JSON too deep to encode; an LLM endpoint that answers 401,
 * 429, 500, garbage or nothing; a client that vanishes or is SIGKILLed mid-request.
 *
 * Each case asserts the same three things: whoever waits gets a clear error, the gateway still
 * answers `ping` afterwards, and no process of its tree is left once it is gone.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { onTestFinished } from "vitest"
import { spawn } from "node:child_process"
import { type FakeOpenAI, startFakeOpenAI } from "../support/fakeOpenAI.js"
import { BIN } from "../support/stdioClient.js"
import { fixtureBackend } from "../support/mcpFixture.js"
import { cleanEnv, Client, closeCleanly, DEEP_BACKEND, descendants, HOLDER, sleep, untilGone, writeConfig } from "./support.js"
import { until } from "../support/process.js"

const expectPingStillAnswered = async (client: Client) => {
  const pong = await client.request("ping", undefined, undefined, 10_000)
  expect(pong).toMatchObject({ result: {} })
}

const pidsOf = async (client: Client, tool: string) => {
  const reply = await client.callTool(tool)
  const { pid, childPid } = reply.result.structuredContent as { pid: number; childPid: number | null }
  return childPid === null ? [pid] : [pid, childPid]
}

describe("backend faults", () => {
  let client: Client
  const tree: Array<number> = []

  beforeAll(async () => {
    const config = writeConfig({
      requestTimeoutMs: 30_000,
      startupTimeoutMs: 10_000,
      // Six backends' tools are more than maxListedTools' default: listed whole, as these tests read them.
      maxListedTools: 10_000,
      backends: [
        fixtureBackend("crashy", ["--spawn-child"]),
        fixtureBackend("hangy", [], { requestTimeoutMs: 500 }),
        fixtureBackend("dies", ["--exit-during-startup"]),
        fixtureBackend("junky", ["--invalid-json", "--junk-stdout"]),
        fixtureBackend("noisy", ["--stderr-flood"]),
        {
          id: "deep",
          type: "stdio",
          command: process.execPath,
          args: [DEEP_BACKEND],
          env: {},
          enabled: true,
          restartOnCrash: true
        }
      ]
    })
    client = new Client({ args: ["--config", config] })
    const init = await client.initialize()
    expect(init.result?.serverInfo?.name).toBe("mcp-agentify")
  })

  afterAll(async () => {
    await closeCleanly(client, [...tree, ...descendants(client.pid)])
  })

  it("a backend that crashes mid-call fails every call in flight with -32004 at once, then restarts", async () => {
    tree.push(...(await pidsOf(client, "crashy__pid")))
    const started = Date.now()
    const slow = [1, 2, 3].map((i) => client.callTool("crashy__slow", { ms: 25_000 }, `slow-${i}`))
    await sleep(100)
    const crash = client.callTool("crashy__crash", { ms: 200 }, "crash")
    const replies = await Promise.all([...slow, crash])
    const elapsed = Date.now() - started
    for (const reply of replies) {
      expect(reply.error?.code).toBe(-32004)
      expect(reply.error?.message).toMatch(/^Backend 'crashy' failed: .*exited with code 1/)
    }
    // The request timeout is 30 s; failing "at once" means long before it.
    expect(elapsed).toBeLessThan(10_000)
    await expectPingStillAnswered(client)
    // restartOnCrash: it comes back (backoff 0.5 s), and its new process is tracked for cleanup.
    let echoed: any
    for (let i = 0; i < 100; i++) {
      echoed = await client.callTool("crashy__echo", { text: "back" })
      if (echoed.result !== undefined) break
      await sleep(100)
    }
    expect(echoed.result.content[0].text).toContain("back")
    tree.push(...(await pidsOf(client, "crashy__pid")))
  })

  it("a backend that hangs fails the call with -32004 after its requestTimeoutMs", async () => {
    const started = Date.now()
    const reply = await client.callTool("hangy__hang")
    const elapsed = Date.now() - started
    expect(reply.error?.code).toBe(-32004)
    expect(reply.error?.message).toBe("Backend 'hangy' failed: tools/call timed out after 500 ms")
    expect(elapsed).toBeGreaterThanOrEqual(450)
    expect(elapsed).toBeLessThan(10_000)
    // The backend itself is fine and was told to stop working on it. (On a loaded machine another of
    // its calls may also pass 500 ms and be cancelled; the hang must be among them, once.)
    const cancelled = await client.callTool("hangy__cancelled")
    const ofHang = cancelled.result.structuredContent.cancellations.filter((c: { of?: string }) => c.of === "tools/call hang")
    expect(ofHang).toEqual([expect.objectContaining({ reason: "timed out after 500 ms" })])
    tree.push(...(await pidsOf(client, "hangy__pid")))
    await expectPingStillAnswered(client)
  })

  it("a backend that exits during start-up does not fail initialize; its calls get -32004 naming it", async () => {
    const reply = await client.callTool("dies__echo", { text: "x" })
    expect(reply.error?.code).toBe(-32004)
    expect(reply.error?.message).toMatch(/^Backend 'dies' failed: /)
    expect(reply.error?.data?.backendId).toBe("dies")
    // Its tools are not listed; the others are.
    const list = await client.request("tools/list", {})
    const names: Array<string> = list.result.tools.map((t: any) => t.name)
    expect(names.some((n) => n.startsWith("dies__"))).toBe(false)
    expect(names).toContain("junky__echo")
    await expectPingStillAnswered(client)
  })

  it("a backend that writes invalid JSON and banners between frames still answers", async () => {
    for (let i = 0; i < 20; i++) {
      const reply = await client.callTool("junky__echo", { text: `j${i}` })
      expect(reply.result?.content?.[0]?.text).toBe(JSON.stringify({ text: `j${i}` }))
    }
    tree.push(...(await pidsOf(client, "junky__pid")))
    await expectPingStillAnswered(client)
  })

  it("a backend that floods stderr does not block (its stderr is drained) and still answers", async () => {
    const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => client.callTool("noisy__echo", { text: `n${i}` })))
    replies.forEach((reply, i) => expect(reply.result?.content?.[0]?.text).toBe(JSON.stringify({ text: `n${i}` })))
    tree.push(...(await pidsOf(client, "noisy__pid")))
    await expectPingStillAnswered(client)
  })

  it("a backend reply nested too deeply to encode still gets its one reply, an error", async () => {
    const [result, error] = await Promise.all([
      client.callTool("deep__deep_result", {}, "deep-result"),
      client.callTool("deep__deep_error", {}, "deep-error")
    ])
    // A result that cannot be encoded: -32603 saying so. An error: its code and message, without the data.
    expect(result.error).toEqual({
      code: -32603,
      message: expect.stringMatching(/^Internal error: the result cannot be encoded as JSON/)
    })
    expect(error.error).toEqual({ code: -32004, message: "Backend 'deep' failed: tools/call returned error -32000: too deep" })
    expect(client.counts.get("deep-result")).toBe(1)
    expect(client.counts.get("deep-error")).toBe(1)
    await expectPingStillAnswered(client)
  })
})

describe("LLM endpoint faults", () => {
  let fake: FakeOpenAI
  let client: Client
  const KEY = "sk-hardening-faults-0a1b2c3d4e5f"

  /** A gateway in front of the fixture, with fx's tools listed (a busy machine starts it slowly). */
  const started = async (env: Record<string, string> = {}) => {
    const gateway = new Client({
      args: ["--config", writeConfig({ backends: [fixtureBackend("fx")] })],
      env: cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.baseUrl, ...env })
    })
    await gateway.initialize()
    await until("fx's tools", async () =>
      ((await gateway.request("tools/list")).result?.tools as Array<{ name: string }>).some((t) => t.name === "fx__echo")
    )
    return gateway
  }

  beforeAll(async () => {
    fake = await startFakeOpenAI()
    // The model's own timeout (30 s): an answer that comes late on a busy machine is still an answer.
    client = await started()
  })

  afterAll(async () => {
    await closeCleanly(client)
    await fake.close()
  })

  const orchestrate = (query: string) => client.request("agentify/orchestrateTask", { query }, undefined, 30_000)

  it("works when the endpoint does (the baseline)", async () => {
    fake.setReply({ tool: "fx__echo", arguments: { text: "fine" } })
    const reply = await orchestrate("echo fine")
    expect(reply.error).toBeUndefined()
    expect(reply.result?.content?.[0]?.text).toBe('{"text":"fine"}')
  })

  it.each([
    {
      name: "401",
      reply: { status: 401, message: `Incorrect API key provided: ${KEY}` },
      attempts: 1,
      reason: "auth",
      text: /rejected the API key \(401\)/
    },
    {
      name: "429",
      reply: { status: 429, message: "slow down" },
      attempts: 3,
      reason: "rate_limit",
      text: /rate limiting.*\(429\)/
    },
    {
      name: "500",
      reply: { status: 500, message: "boom", headers: { "retry-after-ms": "0" } },
      attempts: 3,
      reason: "server",
      text: /server error \(500\)/
    },
    { name: "garbage", reply: { garbage: "<html>not json</html>" }, attempts: 1, reason: "bad_response", text: /not JSON/ }
  ] as const)(
    "an endpoint answering $name: -32003 with a plain message, after $attempts attempt(s)",
    async ({ reply, attempts, reason, text }) => {
      fake.setReply(reply)
      const before = fake.requests.length
      const answer = await orchestrate("echo something")
      expect(answer.error?.code).toBe(-32003)
      expect(answer.error?.message).toMatch(text)
      expect(answer.error?.data?.reason).toBe(reason)
      expect(JSON.stringify(answer)).not.toContain(KEY)
      expect(fake.requests.length - before).toBe(attempts)
      // The MCP tool form: a result with isError naming the code.
      const tool = await client.callTool("agentify_orchestrate", { query: "echo something" }, undefined, 30_000)
      expect(tool.result?.isError).toBe(true)
      expect(tool.result?.content?.[0]?.text).toMatch(/^Error -32003: /)
      await expectPingStillAnswered(client)
    }
  )

  it("an endpoint that never answers: -32003 after the configured timeout, and the HTTP request is aborted", async () => {
    // A gateway of its own whose model times out after 1 s.
    const client = await started({ OPENAI_TIMEOUT_MS: "1000" })
    onTestFinished(() => closeCleanly(client))
    fake.setReply({ hang: true })
    const aborted = fake.aborted
    const startedAt = Date.now()
    const answer = await client.request("agentify/orchestrateTask", { query: "echo something" }, undefined, 30_000)
    const elapsed = Date.now() - startedAt
    expect(answer.error?.code).toBe(-32003)
    expect(answer.error?.data?.reason).toBe("timeout")
    expect(answer.error?.message).toMatch(/did not answer within 1s/)
    expect(elapsed).toBeGreaterThanOrEqual(900)
    expect(elapsed).toBeLessThan(15_000)
    await fake.untilAborted(aborted + 1)
    await expectPingStillAnswered(client)
  })
})

describe("client faults", () => {
  it("a client that vanishes mid-request (stdin closed, stdout destroyed): exit 0, backends killed", async () => {
    const client = new Client({ args: ["--config", writeConfig({ backends: [fixtureBackend("fx", ["--spawn-child"])] })] })
    await client.initialize()
    const pids = await pidsOf(client, "fx__pid")
    expect(pids).toHaveLength(2)
    client.send({ jsonrpc: "2.0", id: "slow", method: "tools/call", params: { name: "fx__slow", arguments: { ms: 60_000 } } })
    await sleep(200)
    client.child.stdin!.end()
    client.child.stdout!.destroy()
    const started = Date.now()
    const { code, signal } = await client.exited
    expect({ code, signal }).toEqual({ code: 0, signal: null })
    // Drain (2 s) then the kill grace: nowhere near the 60 s call.
    expect(Date.now() - started).toBeLessThan(15_000)
    await untilGone([...pids, ...descendants(client.pid)])
    expect(client.stderr()).toMatch(/stopping backends/)
  })

  it("a client killed with SIGKILL: the gateway sees its stdin close, exits, and its backends are gone", async () => {
    const holder = spawn(process.execPath, [HOLDER, "--", process.execPath, BIN], {
      env: cleanEnv({
        HOLDER_INIT_OPTIONS: JSON.stringify({ backends: [fixtureBackend("fx", ["--spawn-child"])] }),
        HOLDER_CALLS: JSON.stringify([
          { name: "fx__slow", arguments: { ms: 60_000 } },
          { name: "fx__hang", arguments: {} }
        ])
      }),
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stderr = ""
    holder.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    // Whatever happens, the holder goes (the gateway and its backends are checked below).
    onTestFinished(() => {
      holder.kill("SIGKILL")
    })
    const ready = await new Promise<{ gateway: number }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`holder never got ready; stderr:\n${stderr}`)), 20_000)
      let text = ""
      holder.stdout!.on("data", (chunk: Buffer) => {
        text += chunk.toString("utf8")
        if (text.includes("\n")) {
          clearTimeout(timer)
          resolve(JSON.parse(text.split("\n")[0]!))
        }
      })
    })
    const gateway = ready.gateway
    const tree = descendants(gateway)
    // The backend and its grandchild.
    expect(tree.length).toBeGreaterThanOrEqual(2)
    holder.kill("SIGKILL")
    await untilGone([gateway], 15_000)
    await untilGone(tree)
    expect(stderr).toMatch(/client disconnected: stopping backends/)
  })
})
