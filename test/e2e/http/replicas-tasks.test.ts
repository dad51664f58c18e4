/**
 * Session-era tasks (SEP-1686, `tools/call {task}`) of a team's gateways sharing state, with the
 * real thing: a `redis-server`, two gateway processes requiring OAuth access tokens (signed by
 * oidc-provider's key), and raw Streamable HTTP. A task belongs to the session it was made in;
 * when that session's gateway dies the session goes with it, and the task's user, in a new
 * session at another gateway, reads what the store kept of a task that finished (its result)
 * and sees one that never finished `failed`, saying why; nobody else reads either.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startAuthServer, type AuthServer } from "../../support/authServer.js"
import { freePort } from "../../bench/httpClient.js"
import { call, initializeParams, send, startHttpGateway, type HttpGateway } from "../../support/httpClient.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { until } from "../../support/process.js"
import { REDIS_SERVER, type Redis, startRedis } from "../../support/redis.js"

const SKIP = REDIS_SERVER === undefined && process.env.CI !== "true"
if (SKIP)
  process.stderr.write("replicas-tasks.test.ts: no redis-server (apt-get install redis-server), so these tests are skipped\n")

const LEASE_MS = 1_500
const AUDIENCE = "http://mcp.team.example/mcp"

let redis: Redis
let auth: AuthServer
let gateways: Array<HttpGateway> = []

beforeAll(async () => {
  if (SKIP) return
  redis = await startRedis()
  auth = await startAuthServer({ resources: [AUDIENCE], scopes: ["mcp:tools"] })
  const config = {
    backends: [fixtureBackend("fx")],
    httpAuth: { issuer: auth.issuer, audience: AUDIENCE, scopes: ["mcp:tools"] },
    state: { url: redis.url, leaseMs: LEASE_MS }
  }
  const ports = [await freePort(), await freePort()]
  gateways = await Promise.all(
    ports.map((port) => startHttpGateway({ address: `127.0.0.1:${port}`, args: ["--http-auth", "oauth"], config }))
  )
}, 60_000)

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()))
  await auth?.close()
  await redis?.close()
})

const now = () => Math.floor(Date.now() / 1000)

/** A session of `sub`'s at gateway `g`: its requests, with their token. */
const sessionOf = async (sub: string, g: HttpGateway) => {
  const token = await auth.sign({ iss: auth.issuer, aud: AUDIENCE, sub, scope: "mcp:tools", iat: now(), exp: now() + 600 })
  const headers = { authorization: `Bearer ${token}` }
  const url = `${g.base}/mcp`
  const opened = await send(url, {
    body: { jsonrpc: "2.0", id: 0, method: "initialize", params: initializeParams(sub) },
    headers
  })
  const sessionId = opened.headers.get("mcp-session-id")
  if (sessionId === null) throw new Error(`no session: ${opened.status} ${opened.text}`)
  await send(url, {
    body: { jsonrpc: "2.0", method: "notifications/initialized" },
    headers: { ...headers, "mcp-session-id": sessionId }
  })
  let id = 1
  return async (method: string, params: unknown) => (await call(url, sessionId, id++, method, params, headers)).messages[0]
}

describe.skipIf(SKIP)("session-era tasks of a team's gateways", () => {
  it("outlive their gateway for their user only: a finished one read with its result in a new session elsewhere, an unfinished one failed", async () => {
    const atFirst = await sessionOf("dana", gateways[0]!)
    const runAsTask = (code: string) =>
      atFirst("tools/call", { name: "agentify_run_code", arguments: { code }, task: { ttl: 600_000 } })
    const finished = (await runAsTask("return 'finished before the end'")).result.task.taskId as string
    await until(
      "the task finished",
      async () => (await atFirst("tasks/get", { taskId: finished })).result?.status === "completed"
    )
    const running = (await runAsTask("await tools.fx.slow({ ms: 60000 }); return 'never'")).result.task.taskId as string
    expect((await atFirst("tasks/get", { taskId: running })).result.status).toBe("working")

    gateways[0]!.child.kill("SIGKILL")
    // Its lease runs out: the team knows it is gone.
    const atSecond = await sessionOf("dana", gateways[1]!)
    const failed = await until(
      "the unfinished task failed",
      async () => {
        const got = await atSecond("tasks/get", { taskId: running })
        return got.result?.status === "failed" ? got.result : undefined
      },
      LEASE_MS * 5
    )
    expect(failed.statusMessage).toContain("stopped before the task finished")
    const result = await atSecond("tasks/result", { taskId: running })
    expect(result.error.message).toContain("stopped before the task finished")

    const kept = await atSecond("tasks/get", { taskId: finished })
    expect(kept.result).toMatchObject({ taskId: finished, status: "completed" })
    expect(kept.result).not.toHaveProperty("result")
    const read = await atSecond("tasks/result", { taskId: finished })
    expect(JSON.stringify(read.result)).toContain("finished before the end")

    // Another user's session reads nothing of dana's.
    const other = await sessionOf("erik", gateways[1]!)
    const refused = await other("tasks/get", { taskId: finished })
    expect(refused.error.code).toBe(-32602)
    expect(JSON.stringify(refused)).not.toContain("finished before the end")
  }, 60_000)
})
