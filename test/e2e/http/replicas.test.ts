/**
 * Several gateways as one (`state: {url: "redis://..."}`), with the real thing: a `redis-server`
 * on a free port, three gateway processes behind a round-robin proxy with no stickiness at all,
 * and the SDK's own client. Any gateway serves any session (a request for another's session is
 * handed to its holder); a gateway killed loses its sessions (404 once its lease ran out, and its
 * clients start afresh) while the others' go on; the store restarted empty loses nothing that
 * the gateways hold, and a gateway's own sessions never wait for the store.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import {
  CreateTaskResultSchema,
  GetTaskResultSchema,
  ToolListChangedNotificationSchema
} from "@modelcontextprotocol/sdk/types.js"
import { spawnSync } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../../bench/httpClient.js"
import { postStateless, startHttpGateway, type HttpGateway } from "../../support/httpClient.js"
import { firstText, fixtureBackend } from "../../support/mcpFixture.js"
import { until } from "../../support/process.js"
import { REDIS_SERVER, type Redis, startRedis } from "../../support/redis.js"
import { type RoundRobin, startRoundRobin } from "../../support/roundRobin.js"
import { tempDir } from "../../support/stdioClient.js"

const SKIP = REDIS_SERVER === undefined && process.env.CI !== "true"
if (SKIP) process.stderr.write("replicas.test.ts: no redis-server (apt-get install redis-server), so these tests are skipped\n")

/** Short, so that a killed gateway's sessions go within the test. */
const LEASE_MS = 1_500
const CLIENTS = 50

/** Three gateways sharing a store, behind a proxy, with the configuration file they mount. */
interface Team {
  readonly redis: Redis
  readonly proxy: RoundRobin
  readonly gateways: Array<HttpGateway>
  readonly configFile: string
}

let redis: Redis
let proxy: RoundRobin
let gateways: Array<HttpGateway>
let configFile: string

const startTeam = async (): Promise<Team> => {
  const redis = await startRedis()
  const ports = [await freePort(), await freePort(), await freePort()]
  const proxy = await startRoundRobin(ports.map((port) => `http://127.0.0.1:${port}`))
  const config = {
    backends: [fixtureBackend("fx")],
    state: { url: redis.url, leaseMs: LEASE_MS },
    // Counted team-wide: whichever gateway a call reaches.
    limits: { tools: { fx__add: { callsPerMinute: 4 }, fx__slow: { concurrent: 2 } } },
    // The proxy's name, as clients address it.
    allowedHosts: [new URL(proxy.url).host]
  }
  // One configuration file for the three, as a team mounts it: an edit reaches each gateway.
  const configFile = join(tempDir(), "gateway.json")
  writeFileSync(configFile, JSON.stringify(config))
  const gateways = await Promise.all(
    ports.map((port) => startHttpGateway({ address: `127.0.0.1:${port}`, args: ["--config", configFile] }))
  )
  // Every gateway's backend ready before a test asks it anything (on a busy machine a gateway may
  // listen before its backend has started; whichever test runs first must not meet that).
  for (const g of gateways) await until(`${g.base}'s backend`, async () => (await fetch(`${g.base}/readyz`)).ok || undefined)
  return { redis, proxy, gateways, configFile }
}

const closeTeam = async (team: Partial<Team>) => {
  await Promise.all((team.gateways ?? []).map((g) => g.close()))
  await team.proxy?.close()
  await team.redis?.close()
}

beforeAll(async () => {
  if (SKIP) return
  ;({ redis, proxy, gateways, configFile } = await startTeam())
}, 60_000)

afterAll(() => closeTeam({ redis, proxy, gateways }))

const connect = async (name: string, base = proxy.url) => {
  const client = new Client({ name, version: "1.0.0" })
  const heard = { listChanged: 0 }
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    heard.listChanged++
  })
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`))
  await client.connect(transport)
  return { client, transport, name, heard }
}

/** Ends a client's session at the gateway (DELETE), then closes it. */
const endSession = async (c: Awaited<ReturnType<typeof connect>>) => {
  await c.transport.terminateSession()
  await c.client.close()
}

const echo = async (client: Client, text: string) => firstText(await client.callTool({ name: "fx__echo", arguments: { text } }))

/** Which of `team`'s gateways holds a session, as its store says (the port in its address). */
const holderOf = (sessionId: string, team: Pick<Team, "redis" | "gateways">): number => {
  const value = spawnSync("redis-cli", ["-p", String(team.redis.port), "get", `mcp-agentify:session:${sessionId}`], {
    encoding: "utf8"
  }).stdout.trim()
  return team.gateways.findIndex((g) => value.endsWith(`:${g.port}`))
}

const health = async (g: HttpGateway) => (await (await fetch(`${g.base}/healthz`)).json()) as { sessions: number }
const readiness = async (g: HttpGateway) =>
  (await (await fetch(`${g.base}/readyz`)).json()) as { status: string; state: { ok: boolean; detail: string } }

/** A 2026-07-28 request at one gateway, as a client of the tasks extension sends it; its reply. */
const stateless = async (base: string, method: string, params: Record<string, unknown>) =>
  (
    await postStateless(`${base}/mcp`, method, params, {
      elicitation: {},
      extensions: { "io.modelcontextprotocol/tasks": {} }
    })
  ).body as { result?: any; error?: { message: string } }

describe.skipIf(SKIP)("three gateways sharing state in Redis, behind a proxy with no stickiness", () => {
  let clients: Array<Awaited<ReturnType<typeof connect>>> = []
  // The clients every test may use, whichever runs first.
  beforeAll(async () => {
    clients = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => connect(`client-${i}`)))
  }, 60_000)

  it(`serves ${CLIENTS} clients' sessions whichever gateway each request reaches`, async () => {
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(clients.map((c) => echo(c.client, `${c.name} round ${round}`)))
      answers.forEach((answer, i) => expect(answer).toContain(`client-${i} round ${round}`))
    }
    const listed = await Promise.all(clients.map((c) => c.client.listTools()))
    for (const tools of listed) expect(tools.tools.map((t) => t.name)).toContain("fx__echo")
    // Every gateway holds some of the sessions, and every one was sent requests of others' sessions.
    const held = await Promise.all(gateways.map(health))
    expect(held.reduce((sum, h) => sum + h.sessions, 0)).toBe(CLIENTS)
    for (const h of held) expect(h.sessions).toBeGreaterThan(0)
    for (const sent of proxy.sent) expect(sent).toBeGreaterThan(CLIENTS)
    for (const g of gateways) {
      const ready = await readiness(g)
      expect(ready.status).toBe("ready")
      expect(ready.state.detail).toContain(`127.0.0.1:${redis.port}`)
    }
  }, 120_000)

  it("answers a 2026-07-28 request's round of questions at whichever gateway the answers reach", async () => {
    const question = {
      name: "fx__ask_client",
      arguments: { method: "elicitation/create", params: { message: "Your name?", requestedSchema: { type: "object" } } }
    }
    for (const [asked, answered] of [
      [0, 1],
      [1, 2],
      [2, 0]
    ] as const) {
      const first = await stateless(gateways[asked]!.base, "tools/call", question)
      expect(first.result?.resultType).toBe("input_required")
      const [key] = Object.keys(first.result.inputRequests)
      const done = await stateless(gateways[answered]!.base, "tools/call", {
        ...question,
        requestState: first.result.requestState,
        inputResponses: { [key!]: { action: "accept", content: { name: `answered at ${answered}` } } }
      })
      expect(done.error).toBeUndefined()
      expect(JSON.stringify(done.result.structuredContent)).toContain(`answered at ${answered}`)
    }
  }, 60_000)

  it("reads a 2026-07-28 task at any gateway: the one that runs it answers", async () => {
    const created = await stateless(gateways[0]!.base, "tools/call", {
      name: "agentify_run_code",
      arguments: { code: "return (await tools.fx.echo({ text: 'run as a task' })).content[0].text" }
    })
    expect(created.result?.resultType).toBe("task")
    const taskId = created.result.taskId as string
    for (const g of [gateways[1]!, gateways[2]!]) {
      const read = await until(
        "the task done",
        async () => {
          const got = await stateless(g.base, "tasks/get", { taskId })
          return got.result?.status === "completed" ? got : undefined
        },
        20_000
      )
      expect(JSON.stringify(read.result.result)).toContain("run as a task")
    }
  }, 60_000)

  it("counts limits team-wide: a tool's calls per minute and at once, whichever gateway each call reaches", async () => {
    const at = await Promise.all(gateways.map((g) => connect(`quota-${g.port}`, g.base)))
    const add = (i: number) => at[i % 3]!.client.callTool({ name: "fx__add", arguments: { a: i, b: 1 } })
    for (let i = 0; i < 4; i++) expect(firstText(await add(i))).toContain(String(i + 1))
    const refused = await add(4).then(
      () => undefined,
      (error: Error & { code?: number }) => error
    )
    // A whole request refused by a quota is HTTP 429 (with Retry-After), its body the JSON-RPC -32029.
    expect(refused?.code).toBe(429)
    expect(refused?.message).toContain('limits.tools[\\"fx__add\\"] (4 calls per minute)')
    // Two slow calls at gateway 0 take both places (as the store counts them): a third, at gateway 1, waits its turn.
    const slow = (i: number, ms: number) => at[i]!.client.callTool({ name: "fx__slow", arguments: { ms } })
    const running = [slow(0, 3_000), slow(0, 3_000)]
    const inFlight = () =>
      spawnSync("redis-cli", ["-p", String(redis.port), "hvals", "mcp-agentify:quota:tool:fx__slow:inflight"], {
        encoding: "utf8"
      })
        .stdout.split("\n")
        .reduce((sum, n) => sum + (Number(n) || 0), 0)
    await until("both in flight", () => inFlight() === 2)
    const third = await slow(1, 1).then(
      () => undefined,
      (error: Error & { code?: number }) => error
    )
    expect(third?.code).toBe(429)
    expect(third?.message).toContain('limits.tools[\\"fx__slow\\"] (2 calls at once)')
    await Promise.all(running)
    // Their places given back: the third goes through.
    expect(firstText(await slow(1, 1))).toContain("slept")
    await until("the places given back", () => inFlight() === 0)
    // Its sessions ended, not only closed: the first test counts the sessions held.
    await Promise.all(at.map(endSession))
  }, 60_000)

  it("tells every client of a configuration reload, whichever gateway its session is at and its stream reached", async () => {
    const before = clients.map((c) => c.heard.listChanged)
    const edited = JSON.parse(readFileSync(configFile, "utf8"))
    edited.backends[0].denyTools = ["add_tool"]
    writeFileSync(configFile, JSON.stringify(edited))
    for (const [i, c] of clients.entries()) {
      await until(`${c.name} told its list changed`, () => c.heard.listChanged > before[i]!, 20_000)
    }
    const listed = await Promise.all(clients.map((c) => c.client.listTools()))
    for (const tools of listed) expect(tools.tools.map((t) => t.name)).not.toContain("fx__add_tool")
    for (const g of gateways) expect(g.stderr()).toContain("re-exposed fx")
  }, 60_000)

  it("keeps serving the sessions a gateway holds while the store is down, says it is degraded, and loses nothing when it is back empty", async () => {
    const elsewhere = await stateless(gateways[1]!.base, "tools/call", {
      name: "agentify_run_code",
      arguments: { code: "return 'held at gateway 1'" }
    })
    await redis.kill()
    const g = gateways[0]!
    // Where that task is, the store cannot say now: try again, not "failed".
    const asked = await stateless(g.base, "tasks/get", { taskId: elsewhere.result.taskId })
    expect(asked.error?.message).toContain("did not answer; try again")
    await until("/readyz degraded", async () => (await readiness(g)).status === "degraded", 10_000)
    // A session reached at its holder needs no store.
    const direct = await connect("direct", g.base)
    expect(await echo(direct.client, "no store needed")).toContain("no store needed")
    await redis.restart()
    await until("/readyz ready again", async () => (await readiness(g)).status === "ready", 20_000)
    // Empty, the store learns every session again from its holder's heartbeat: none is lost.
    for (const c of clients) {
      await until(
        `${c.name}'s session`,
        async () => (await echo(c.client, "after the restart").catch(() => "")).includes("after"),
        10_000
      )
    }
    await endSession(direct)
  }, 120_000)

  it("a gateway killed loses its sessions (404 once its lease ran out; its clients start afresh) and its unfinished tasks, the others' go on", async () => {
    // A team of its own to kill a gateway of: the other tests keep all three.
    const own = await startTeam()
    try {
      const victim = 2
      const ownClients = await Promise.all(Array.from({ length: 12 }, (_, i) => connect(`own-${i}`, own.proxy.url)))
      const theirs = ownClients.filter((c) => holderOf(c.transport.sessionId!, own) === victim)
      const others = ownClients.filter((c) => holderOf(c.transport.sessionId!, own) !== victim)
      expect(theirs.length).toBeGreaterThan(0)
      // A task it finished before it died: its result outlives it (kept in the store for its ttl).
      const finished = await stateless(own.gateways[victim]!.base, "tools/call", {
        name: "agentify_run_code",
        arguments: { code: "return 'finished before the end'" }
      })
      await until(
        "the task finished",
        async () =>
          (await stateless(own.gateways[victim]!.base, "tasks/get", { taskId: finished.result.taskId })).result?.status ===
          "completed"
      )
      // A task it was running when it died: failed, said so, at any other gateway.
      const running = await stateless(own.gateways[victim]!.base, "tools/call", {
        name: "agentify_run_code",
        arguments: { code: "await tools.fx.slow({ ms: 60000 }); return 'never'" }
      })
      expect(running.result?.resultType).toBe("task")
      // A session of it ran two session-era tasks, one finished, one not.
      const sessionTask = async (code: string) =>
        (
          await theirs[0]!.client.request(
            { method: "tools/call", params: { name: "agentify_run_code", arguments: { code }, task: { ttl: 600_000 } } },
            CreateTaskResultSchema
          )
        ).task.taskId
      const sessionDone = await sessionTask("return 'done in its session'")
      await until(
        "the session's task done",
        async () =>
          (await theirs[0]!.client.request({ method: "tasks/get", params: { taskId: sessionDone } }, GetTaskResultSchema))
            .status === "completed"
      )
      const sessionRunning = await sessionTask("await tools.fx.slow({ ms: 60000 }); return 'never'")
      own.gateways[victim]!.child.kill("SIGKILL")
      const failed = await until(
        "the dead gateway's task failed",
        async () => {
          const got = await stateless(own.gateways[0]!.base, "tasks/get", { taskId: running.result.taskId })
          return got.result?.status === "failed" ? got.result : undefined
        },
        LEASE_MS * 5
      )
      expect(failed.statusMessage).toContain("stopped before the task finished")
      const kept = await stateless(own.gateways[1]!.base, "tasks/get", { taskId: finished.result.taskId })
      expect(kept.result?.status).toBe("completed")
      expect(JSON.stringify(kept.result?.result)).toContain("finished before the end")
      // The proxy's health check takes it out.
      own.proxy.remove(victim)
      const lost = theirs[0]!
      await until(
        "404 for a session of the killed gateway",
        async () => {
          const failed = await echo(lost.client, "lost?").then(
            () => undefined,
            (error: Error) => error.message
          )
          // Until the lease runs out the store still names the dead holder: 502, then 404.
          if (failed !== undefined && !failed.includes("Session not found")) expect(failed).toContain("Bad Gateway")
          return failed?.includes("Session not found") === true
        },
        LEASE_MS * 5
      )
      for (const c of others) expect(await echo(c.client, "still here")).toContain("still here")
      const fresh = await connect("fresh", own.proxy.url)
      expect(await echo(fresh.client, "started afresh")).toContain("started afresh")
      // In a new session, the dead session's unfinished task is failed, saying why; its finished one
      // was that session's alone (no signed-in user to claim it): unknown, never called failed.
      const asked = (taskId: string) =>
        fresh.client.request({ method: "tasks/get", params: { taskId } }, GetTaskResultSchema).then(
          (task) => task,
          (error: Error & { code?: number }) => error
        )
      const failedThere = (await asked(sessionRunning)) as { status: string; statusMessage?: string }
      expect(failedThere.status).toBe("failed")
      expect(failedThere.statusMessage).toContain("stopped before the task finished")
      expect(((await asked(sessionDone)) as { code?: number }).code).toBe(-32602)
      await fresh.client.close()
    } finally {
      await closeTeam(own)
    }
  }, 120_000)
})
