/**
 * Load through one gateway: 1,000 concurrent passthrough calls, 200 concurrent orchestrations with
 * a scripted LLM (beside 200 more passthrough calls) and 200 through the real openai client, and
 * 20,000 calls (one in ten orchestrated) with the gateway's memory measured before and after. Every request must be answered exactly once, with its own
 * result (each call echoes a payload unique to it), and stdout must hold nothing but frames.
 *
 * The memory check is a bound, not a timing: the gateway's RSS and live heap after warm-up against
 * the same after 20,000 more calls, each read right after a full GC (a test-only preload forces it).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type FakeOpenAI, startFakeOpenAI } from "../support/fakeOpenAI.js"
import { existsSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { assertOnlyFrames, BIN, tempDir } from "../support/stdioClient.js"
import { fixtureBackend } from "../support/mcpFixture.js"
import {
  cleanEnv,
  Client,
  closeCleanly,
  descendants,
  HEAP_PROBE,
  rssKiB,
  SCRIPTED_GATEWAY,
  sleep,
  until,
  untilGone,
  writeConfig
} from "./support.js"

const echoed = (reply: any): string => reply?.result?.content?.[0]?.text

/** Sends `count` requests with at most `window` in flight; checks each reply with `check`. */
const pump = async (
  client: Client,
  count: number,
  window: number,
  make: (i: number) => { id: string; method: string; params: unknown },
  check: (i: number, reply: any) => void
) => {
  let next = 0
  const worker = async () => {
    while (next < count) {
      const i = next++
      const { id, method, params } = make(i)
      check(i, await client.request(method, params, id, 60_000))
    }
  }
  await Promise.all(Array.from({ length: window }, worker))
}

const expectEachAnsweredOnce = (client: Client, ids: Iterable<string>) => {
  for (const id of ids) expect(client.counts.get(id)).toBe(1)
  expect(client.nullReplies).toEqual([])
}

/**
 * RSS and V8 heap in use after a full GC, from the test-only preload heap-probe.mjs (SIGUSR2 ->
 * gc() -> a file). RSS between collections swings by tens of MiB with the young generation; after
 * one it is a stable figure to compare.
 */
const measure = async (client: Client): Promise<{ rss: number; heapUsed: number }> => {
  const file = client.probeFile!
  rmSync(file, { force: true })
  process.kill(client.pid, "SIGUSR2")
  await until("the heap probe", () => existsSync(file))
  await sleep(20)
  const { rss, heapUsed } = JSON.parse(readFileSync(file, "utf8"))
  return { rss, heapUsed }
}

/**
 * The median of three probes: one full GC can return more pages to the system than the next (an
 * RSS of 145 MiB once where 200-220 is usual), and a growth figure must not hang on one sample.
 * Before and after are measured alike.
 */
const measureSteady = async (client: Client): Promise<{ rss: number; heapUsed: number }> => {
  const samples: Array<{ rss: number; heapUsed: number }> = []
  for (let i = 0; i < 3; i++) samples.push(await measure(client))
  const median = (values: Array<number>) => values.sort((a, b) => a - b)[1]!
  return { rss: median(samples.map((m) => m.rss)), heapUsed: median(samples.map((m) => m.heapUsed)) }
}

describe("load through the CLI", () => {
  let client: Client
  let memory: Client
  let fake: FakeOpenAI
  let tree: Array<number> = []

  beforeAll(async () => {
    fake = await startFakeOpenAI({ tool: "fx__echo", arguments: { text: "from the model" } })
    const config = writeConfig({ backends: [fixtureBackend("fx")] })
    client = new Client({ args: ["--config", config], env: cleanEnv() })
    const probeFile = join(tempDir("agentify-heap-"), "heap.json")
    // The same CLI, with a preload that can force a GC and report the heap (never part of the gateway).
    memory = new Client({
      command: process.execPath,
      args: ["--expose-gc", "--import", HEAP_PROBE, BIN, "--config", config],
      env: cleanEnv({ HEAP_PROBE_FILE: probeFile, OPENAI_API_KEY: "sk-memory-test-000000", OPENAI_BASE_URL: fake.baseUrl }),
      probeFile
    })
    await Promise.all([client.initialize(), memory.initialize()])
    // initialize does not wait for the backends; a first request does.
    await Promise.all([client.request("tools/list"), memory.request("tools/list")])
    tree = [...descendants(client.pid), ...descendants(memory.pid)]
  })

  afterAll(async () => {
    for (const c of [client, memory]) {
      const { code } = await c.close()
      expect(code).toBe(0)
      assertOnlyFrames(c.stdout())
    }
    await untilGone(tree)
    await fake.close()
  })

  it("1,000 concurrent passthrough calls: each answered once, with its own result", async () => {
    const ids = Array.from({ length: 1_000 }, (_, i) => `c1k-${i}`)
    // All written before the first reply is read: 1,000 requests in flight at once.
    const replies = await Promise.all(ids.map((id, i) => client.callTool("fx__echo", { text: `payload-${i}` }, id, 60_000)))
    replies.forEach((reply, i) => {
      expect(reply.id).toBe(ids[i])
      expect(echoed(reply)).toBe(JSON.stringify({ text: `payload-${i}` }))
    })
    expectEachAnsweredOnce(client, ids)
  })

  // Bounded by its work (26,000 requests, each failing on its own after 60 s without a reply): the
  // 30 min timeout only stops a runner that hangs. A busy machine (load 10 on 2 cores) takes many
  // minutes over it, and that is slow, not wrong.
  it("memory stays flat over 20,000 calls (RSS and live heap after warm-up vs after)", async () => {
    // 1 KiB each way per call: a gateway that kept anything of each request or reply would show it.
    const pad = "m".repeat(1_024)
    const text = (i: number) => `mem-${i}-${pad}`
    const WARM_UP = 6_000
    const CALLS = 20_000
    // One call in ten is an orchestration (the real openai client against the local fake); one
    // in three during warm-up, so that path reaches its steady state (connection pool, JIT) too.
    const orchestrated = (i: number) => (i < WARM_UP ? i % 3 === 2 : i % 10 === 9)
    const batch = (from: number, count: number) =>
      pump(
        memory,
        count,
        50,
        (i) =>
          orchestrated(from + i)
            ? { id: `mem-${from + i}`, method: "agentify/orchestrateTask", params: { query: text(from + i) } }
            : { id: `mem-${from + i}`, method: "tools/call", params: { name: "fx__echo", arguments: { text: text(from + i) } } },
        (i, reply) => {
          const expected = orchestrated(from + i) ? { text: "from the model" } : { text: text(from + i) }
          if (echoed(reply) !== JSON.stringify(expected)) {
            throw new Error(`wrong reply for mem-${from + i}: ${JSON.stringify(reply).slice(0, 300)}`)
          }
        }
      )
    await batch(0, WARM_UP)
    const before = await measureSteady(memory)
    const rssRaw: Array<number> = []
    for (let done = 0; done < CALLS; done += 5_000) {
      await batch(WARM_UP + done, 5_000)
      rssRaw.push(rssKiB(memory.pid) * 1024)
    }
    const after = await measureSteady(memory)
    const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1)
    const rssGrowth = (after.rss - before.rss) / before.rss
    const heapGrowth = (after.heapUsed - before.heapUsed) / before.heapUsed
    console.log(
      `memory over ${CALLS} calls (1 KiB each way, one in ten orchestrated), after a full GC: RSS ${mib(before.rss)} -> ${mib(after.rss)} MiB ` +
        `(${(rssGrowth * 100).toFixed(1)} %), live heap ${mib(before.heapUsed)} -> ${mib(after.heapUsed)} MiB ` +
        `(${(heapGrowth * 100).toFixed(1)} %); RSS between GCs every 5,000 calls: ${rssRaw.map(mib).join(" ")} MiB`
    )
    expect(rssGrowth).toBeLessThan(0.3)
    expect(heapGrowth).toBeLessThan(0.2)
    expectEachAnsweredOnce(
      memory,
      Array.from({ length: WARM_UP + CALLS }, (_, i) => `mem-${i}`)
    )
  }, 1_800_000)
})

describe("orchestrations under load, with a scripted LLM", () => {
  let client: Client
  let tree: Array<number> = []

  beforeAll(async () => {
    // scripted-gateway.mjs: the CLI's server with LlmClient.layerScripted, which calls fx__echo
    // with {text: <the query>} for every query.
    client = new Client({
      args: [SCRIPTED_GATEWAY, "--config", writeConfig({ backends: [fixtureBackend("fx")] })],
      command: process.execPath,
      env: cleanEnv()
    })
    await client.initialize()
    // initialize does not wait for the backends; a first request does.
    await client.request("tools/list")
    tree = descendants(client.pid)
  })

  afterAll(async () => {
    await closeCleanly(client, tree)
  })

  it("200 concurrent orchestrations beside 200 passthrough calls: each answered once, with its own result", async () => {
    const orchestrations = Array.from({ length: 200 }, (_, i) =>
      client.request("agentify/orchestrateTask", { query: `query number ${i}` }, `orc-${i}`, 60_000)
    )
    const calls = Array.from({ length: 200 }, (_, i) => client.callTool("fx__echo", { text: `direct ${i}` }, `pass-${i}`, 60_000))
    const [orchestrated, passed] = await Promise.all([Promise.all(orchestrations), Promise.all(calls)])
    orchestrated.forEach((reply, i) => {
      expect(reply.id).toBe(`orc-${i}`)
      expect(echoed(reply)).toBe(JSON.stringify({ text: `query number ${i}` }))
    })
    passed.forEach((reply, i) => expect(echoed(reply)).toBe(JSON.stringify({ text: `direct ${i}` })))
    expectEachAnsweredOnce(client, [
      ...Array.from({ length: 200 }, (_, i) => `orc-${i}`),
      ...Array.from({ length: 200 }, (_, i) => `pass-${i}`)
    ])
  })

  it("200 concurrent agentify_orchestrate tool calls: each answered once, with its own result", async () => {
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        client.callTool("agentify_orchestrate", { query: `tool query ${i}` }, `tool-${i}`, 60_000)
      )
    )
    replies.forEach((reply, i) => {
      expect(reply.result?.isError).not.toBe(true)
      expect(echoed(reply)).toBe(JSON.stringify({ text: `tool query ${i}` }))
    })
    expectEachAnsweredOnce(
      client,
      Array.from({ length: 200 }, (_, i) => `tool-${i}`)
    )
  })
})

describe("orchestrations under load, through the real openai client", () => {
  let fake: FakeOpenAI
  let client: Client

  beforeAll(async () => {
    fake = await startFakeOpenAI({ tool: "fx__echo", arguments: { text: "from the model" } })
    client = new Client({
      args: ["--config", writeConfig({ backends: [fixtureBackend("fx")] })],
      env: cleanEnv({ OPENAI_API_KEY: "sk-load-test-000000", OPENAI_BASE_URL: fake.baseUrl })
    })
    await client.initialize()
  })

  afterAll(async () => {
    await closeCleanly(client)
    await fake.close()
  })

  it("200 concurrent orchestrations over HTTP: each answered once; two LLM requests each (the call, then the answer)", async () => {
    const before = fake.requests.length
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        client.request("agentify/orchestrateTask", { query: `http query ${i}` }, `http-${i}`, 60_000)
      )
    )
    for (const reply of replies) expect(echoed(reply)).toBe(JSON.stringify({ text: "from the model" }))
    expectEachAnsweredOnce(
      client,
      Array.from({ length: 200 }, (_, i) => `http-${i}`)
    )
    expect(fake.requests.length - before).toBe(400)
    // Each query went out twice in its own conversation: first alone, then with its one tool result.
    const sent = fake.requests.slice(before).map((r) => r.body.messages)
    const queries = new Set(sent.map((messages) => messages.find((m: any) => m.role === "user").content))
    expect(queries.size).toBe(200)
    expect(sent.filter((messages) => messages.some((m: any) => m.role === "tool"))).toHaveLength(200)
  })
})
