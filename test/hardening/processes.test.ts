/**
 * The gateway and its processes under abuse, through the built CLI: descriptor exhaustion, signals
 * in every phase, a SIGKILLed gateway, grandchildren that leave the process group, backends that
 * stop reading or close their stdout, replies over the frame limit, and `initialize` interrupted.
 * Each test reproduces a defect that once took the gateway down or left processes behind.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { once } from "node:events"
import { readdirSync, readFileSync } from "node:fs"
import { randomUUID } from "node:crypto"
import { BIN, FIXTURE_SERVER } from "../support/stdioClient.js"
import { cleanEnv, Client, closeCleanly, descendants, isAlive, rssKiB, sleep, until, untilGone, writeConfig } from "./support.js"

const fixture = (id: string, args: ReadonlyArray<string> = [], extra: Record<string, unknown> = {}) => ({
  id,
  command: process.execPath,
  args: [FIXTURE_SERVER, ...args],
  ...extra
})

/** Live processes whose environment holds `name=value` (how a test finds a tree that moved). */
const processesWithEnv = (name: string, value: string): Array<number> => {
  const needle = `${name}=${value}`
  const found: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/environ`, "latin1").split("\0").includes(needle) && isAlive(Number(entry)))
        found.push(Number(entry))
    } catch {
      // not ours, or gone
    }
  }
  return found
}

const pidsOf = async (client: Client, tool: string) => {
  const reply = await client.callTool(tool)
  return reply.result.structuredContent as { pid: number; childPid: number | null; setsidPid: number | null }
}

describe("descriptor exhaustion", () => {
  it("a spawn that fails with EMFILE fails that backend only; the gateway answers everything else", async () => {
    const backends = Array.from({ length: 40 }, (_, i) => fixture(`b${i}`))
    // maxListedTools: the backends' tools listed whole, so that the list says which ones started.
    const config = writeConfig({ backends, startupTimeoutMs: 20_000, maxListedTools: 10_000 })
    const client = new Client({
      command: "/bin/sh",
      args: ["-c", `ulimit -n 100 && exec "${process.execPath}" "${BIN}" --config "${config}"`]
    })
    const init = await client.initialize()
    expect(init.result?.serverInfo?.name).toBe("mcp-agentify")
    expect((await client.request("ping")).result).toEqual({})
    const tools = (await client.request("tools/list")).result.tools.map((t: { name: string }) => t.name)
    // Some backends started, the others failed with the reason; none took the gateway down.
    expect(tools).toContain("b0__echo")
    expect(tools.filter((n: string) => n.endsWith("__echo")).length).toBeLessThan(40)
    const failed = await client.callTool("b39__echo", { text: "x" })
    expect(failed.error?.code).toBe(-32004)
    expect(failed.error?.message).toMatch(/EMFILE/)
    expect(client.stderr()).toMatch(/EMFILE/)
    await closeCleanly(client)
  }, 60_000)
})

describe("no orphans", () => {
  const stubborn = (mark: string) =>
    writeConfig({
      backends: [fixture("fx", ["--spawn-child", "--ignore-sigterm", "--setsid-child"], { env: { AGENTIFY_TEST_MARK: mark } })]
    })

  it("a SIGKILLed gateway leaves no backend, grandchild or setsid grandchild running", async () => {
    const mark = randomUUID()
    const client = new Client({ args: ["--config", stubborn(mark)] })
    await client.initialize()
    const { pid, childPid, setsidPid } = await pidsOf(client, "fx__pid")
    expect([pid, childPid, setsidPid].every((p) => typeof p === "number" && isAlive(p))).toBe(true)
    client.child.kill("SIGKILL")
    await client.exited
    // The watchdog sends SIGTERM (ignored by all three), then SIGKILL after its 2 s grace.
    await untilGone([pid, childPid!, setsidPid!], 8_000)
    expect(processesWithEnv("AGENTIFY_TEST_MARK", mark)).toEqual([])
  }, 30_000)

  it("a normal exit also stops a grandchild that left the process group", async () => {
    const mark = randomUUID()
    const client = new Client({ args: ["--config", stubborn(mark)] })
    await client.initialize()
    const { setsidPid } = await pidsOf(client, "fx__pid")
    const { code } = await client.close()
    expect(code).toBe(0)
    await untilGone([setsidPid!], 5_000)
    expect(processesWithEnv("AGENTIFY_TEST_MARK", mark)).toEqual([])
  }, 30_000)
})

describe("signals", () => {
  it("SIGHUP stops the backends and exits 0, like SIGTERM", async () => {
    const client = new Client({ args: ["--config", writeConfig({ backends: [fixture("fx", ["--spawn-child"])] })] })
    await client.initialize()
    // initialize does not wait for the backends: the backend and its child, once started.
    const tree = await until("the backend and its child", () =>
      descendants(client.pid).length >= 2 ? descendants(client.pid) : undefined
    )
    client.child.kill("SIGHUP")
    expect(await client.exited).toEqual({ code: 0, signal: null })
    await untilGone(tree, 5_000)
  }, 30_000)

  it("more signals during shutdown do not skip cleanup", async () => {
    const mark = randomUUID()
    const config = writeConfig({
      backends: [fixture("fx", ["--ignore-sigterm", "--spawn-child"], { env: { AGENTIFY_TEST_MARK: mark } })]
    })
    const client = new Client({ args: ["--config", config] })
    await client.initialize()
    // initialize does not wait for the backends: the backend and its child, once started.
    const tree = await until("the backend and its child", () =>
      descendants(client.pid).length >= 2 ? descendants(client.pid) : undefined
    )
    client.child.kill("SIGTERM")
    // The backend ignores SIGTERM: shutdown takes its 2 s grace, and these arrive meanwhile.
    for (const signal of ["SIGTERM", "SIGINT", "SIGHUP", "SIGTERM"] as const) {
      await sleep(150)
      client.child.kill(signal)
    }
    expect(await client.exited).toEqual({ code: 0, signal: null })
    await untilGone(tree, 5_000)
    expect(processesWithEnv("AGENTIFY_TEST_MARK", mark)).toEqual([])
    expect(client.stderr()).toMatch(/already stopping/)
  }, 30_000)

  it("a SIGTERM at any moment of start-up leaves no backend behind", async () => {
    const mark = randomUUID()
    const config = writeConfig({ backends: [fixture("fx", ["--spawn-child"], { env: { AGENTIFY_TEST_MARK: mark } })] })
    const exits: Array<{ delay: number; afterStart: boolean; code: number | null; signal: string | null }> = []
    for (let i = 0; i < 20; i++) {
      // Half at a blind delay from exec, half at a delay after the gateway said it started.
      const afterStart = i % 2 === 1
      const delay = (i >> 1) * 30
      const child = spawn(process.execPath, [BIN, "--config", config], { env: cleanEnv(), stdio: ["pipe", "ignore", "pipe"] })
      let stderr = ""
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
      // A client that initializes at once, as a real one does.
      child.stdin.on("error", () => {})
      child.stdin.write(
        `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } })}\n`
      )
      const exited = once(child, "exit")
      if (afterStart) await until("the gateway to start", () => stderr.includes("mcp-agentify started"))
      await sleep(delay)
      child.kill("SIGTERM")
      const [code, signal] = await exited
      exits.push({ delay, afterStart, code, signal })
    }
    await until("no marked process", () => processesWithEnv("AGENTIFY_TEST_MARK", mark).length === 0, 8_000)
    // Before Node has run the gateway's first line (0.1-0.3 s after exec here) the default action
    // applies, and no backend exists yet; from then on every signal is a clean stop.
    for (const exit of exits.filter((e) => e.afterStart)) expect(exit).toMatchObject({ code: 0, signal: null })
  }, 90_000)
})

describe("backends that misbehave", () => {
  it("one that closes its stdout but keeps running is treated as dead and restarted", async () => {
    const client = new Client({ args: ["--config", writeConfig({ backends: [fixture("fx")], requestTimeoutMs: 60_000 })] })
    await client.initialize()
    const before = (await pidsOf(client, "fx__pid")).pid
    expect((await client.callTool("fx__close_stdout")).result).toBeDefined()
    // Not the 60 s timeout: the call fails as soon as the backend is known deaf, and it comes back.
    const failed = await client.callTool("fx__hang", {}, undefined, 10_000)
    expect(failed.error?.code).toBe(-32004)
    let after = before
    for (let i = 0; i < 60 && after === before; i++) {
      const reply = await client.callTool("fx__pid")
      if (reply.result !== undefined) after = reply.result.structuredContent.pid
      else await sleep(250)
    }
    expect(after).not.toBe(before)
    expect(isAlive(before)).toBe(false)
    await closeCleanly(client)
  }, 40_000)

  it("one that stops reading its stdin is found by its lack of progress; calls then fail at once, memory bounded", async () => {
    const client = new Client({
      args: ["--config", writeConfig({ backends: [fixture("fx", [], { requestTimeoutMs: 30_000 })] })]
    })
    await client.initialize()
    await client.callTool("fx__stop_reading")
    const baseline = rssKiB(client.pid)
    const text = "z".repeat(1024 * 1024)
    // Bytes wait and none drain: after 5 s without progress the backend is judged not reading.
    const first = client.callTool("fx__echo", { text }, "first", 40_000)
    await sleep(5_500)
    const started = Date.now()
    const replies = await Promise.all(
      Array.from({ length: 60 }, (_, i) => client.callTool("fx__echo", { text }, `big${i}`, 30_000))
    )
    const peak = rssKiB(client.pid)
    for (const reply of replies) {
      expect(reply.error?.code).toBe(-32004)
      const stalled = /not reading its input: it has taken none of the \d+ bytes waiting for it for (\d+) s/.exec(
        String(reply.error?.message)
      )
      // Judged after 5 s without progress at the least; how much later depends on the machine's load.
      expect(Number(stalled?.[1])).toBeGreaterThanOrEqual(5)
    }
    // At once: not after the call timeout (30 s), however busy the machine.
    expect(Date.now() - started).toBeLessThan(25_000)
    // 61 MiB were sent; the gateway holds the first call's bytes, not the rest.
    expect(peak - baseline).toBeLessThan(200 * 1024)
    console.log(
      `stalled backend: RSS ${Math.round(baseline / 1024)} MiB before, ${Math.round(peak / 1024)} MiB after 61 MiB of calls`
    )
    await closeCleanly(client)
    await first
  }, 60_000)

  it("one large request being drained does not make the backend look stuck: concurrent calls succeed", async () => {
    // The fixture reads lines of any length, and this client too: the bounds kept for the MCP SDK's peers are raised.
    const bounds = { maxBackendRequestBytes: 64 * 1024 * 1024, maxReplyBytes: 64 * 1024 * 1024 }
    const client = new Client({ args: ["--config", writeConfig({ backends: [fixture("fx")], ...bounds })] })
    await client.initialize()
    const text = "w".repeat(10 * 1024 * 1024)
    // The large request and ten small ones in one write: they reach the gateway together.
    const frames = [
      { jsonrpc: "2.0", id: "large", method: "tools/call", params: { name: "fx__echo", arguments: { text } } },
      ...Array.from({ length: 10 }, (_, i) => ({
        jsonrpc: "2.0",
        id: `small${i}`,
        method: "tools/call",
        params: { name: "fx__echo", arguments: { i } }
      }))
    ]
    client.write(frames.map((f) => `${JSON.stringify(f)}\n`).join(""))
    const replies = await Promise.all(frames.map((f) => client.reply(f.id, 30_000)))
    for (const reply of replies) expect(reply.error).toBeUndefined()
    expect(replies[0]!.result.content[0].text.length).toBeGreaterThanOrEqual(text.length)
    await closeCleanly(client)
  }, 60_000)

  it("a reply over the backend frame limit fails its call at once with -32004 saying why", async () => {
    const config = writeConfig({ backends: [fixture("fx", [], { maxFrameBytes: 1024 * 1024 })], requestTimeoutMs: 60_000 })
    const client = new Client({ args: ["--config", config] })
    await client.initialize()
    const started = Date.now()
    const big = await client.callTool("fx__big", { bytes: 2_000_000 }, undefined, 20_000)
    expect(big.error?.code).toBe(-32004)
    expect(big.error?.message).toMatch(/over the limit of 1048576 bytes/)
    expect(Date.now() - started).toBeLessThan(20_000)
    // The connection is intact: the next reply is read as usual.
    const small = await client.callTool("fx__big", { bytes: 500_000 })
    expect(small.result.content[0].text).toHaveLength(500_000)
    await closeCleanly(client)
  }, 40_000)

  it("a 6 MiB reply under the default limit arrives whole", async () => {
    const client = new Client({ args: ["--config", writeConfig({ backends: [fixture("fx")] })] })
    await client.initialize()
    const reply = await client.callTool("fx__big", { bytes: 6 * 1024 * 1024 })
    expect(reply.result.content[0].text).toHaveLength(6 * 1024 * 1024)
    await closeCleanly(client)
  }, 40_000)
})

describe("initialize interrupted", () => {
  const slow = () => writeConfig({ backends: [fixture("fx", ["--startup-delay-ms", "1500"])] })

  it("initialize does not wait for the backends: a cancel sent while they start changes nothing", async () => {
    const client = new Client({ args: ["--config", slow()] })
    client.send({
      jsonrpc: "2.0",
      id: "i1",
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } }
    })
    await until("the backend to be spawned", () => descendants(client.pid).length > 0)
    const started = descendants(client.pid)
    client.notify("notifications/cancelled", { requestId: "i1", reason: "changed my mind" })
    // Answered already (it never waits for a backend): the cancel names a request that is done.
    expect((await client.reply("i1")).result?.serverInfo?.name).toBe("mcp-agentify")
    const tools = (await client.request("tools/list")).result.tools.map((t: { name: string }) => t.name)
    expect(tools).toContain("fx__echo")
    // The same process, started once.
    expect(descendants(client.pid)).toEqual(started)
    await closeCleanly(client)
  }, 30_000)

  it.each([
    ["right behind it", false],
    ["while backends start", true]
  ])(
    "shutdown during initialize (%s) stays shut down",
    async (_, waitForSpawn) => {
      const client = new Client({ args: ["--config", slow()] })
      client.send({
        jsonrpc: "2.0",
        id: "i1",
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } }
      })
      if (waitForSpawn) await until("the backend to be spawned", () => descendants(client.pid).length > 0)
      expect((await client.request("shutdown")).result).toBeNull()
      await client.reply("i1", 5_000)
      const after = await client.request("tools/list")
      expect(after.error?.message).toMatch(/shutting down/)
      expect(descendants(client.pid)).toEqual([])
      const { code } = await client.close()
      expect(code).toBe(0)
    },
    30_000
  )
})
