/**
 * Backends' remembered lists kept alike by a team's gateways through their store (`state`), with
 * the real thing: a `redis-server`, two gateway processes over HTTP each with a state directory of
 * its own, and the fixture server as their backend. The first gateway meets the backend (it starts
 * it and remembers what it lists); the second, whose directory never saw it, knows its tools from the
 * store: nothing is started before a use, and a call starts it.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { spawnSync } from "node:child_process"
import { readdirSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startHttpGateway, type HttpGateway } from "../../support/httpClient.js"
import { firstText, fixtureBackend } from "../../support/mcpFixture.js"
import { descendants, until } from "../../support/process.js"
import { REDIS_SERVER, type Redis, startRedis } from "../../support/redis.js"
import { tempDir } from "../../support/stdioClient.js"

const SKIP = REDIS_SERVER === undefined && process.env.CI !== "true"
if (SKIP)
  process.stderr.write("replicas-known.test.ts: no redis-server (apt-get install redis-server), so these tests are skipped\n")

let redis: Redis
const gateways: Array<HttpGateway> = []

beforeAll(async () => {
  if (SKIP) return
  redis = await startRedis()
}, 30_000)

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()))
  await redis?.close()
})

const connect = async (g: HttpGateway) => {
  const client = new Client({ name: "known", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${g.base}/mcp`)))
  return client
}

describe.skipIf(SKIP)("remembered lists shared by a team's gateways", () => {
  it("a gateway whose directory never saw a backend knows its tools from the store: it starts it on the first call only", async () => {
    const config = { backends: [fixtureBackend("fx"), fixtureBackend("other", ["--tools", "2"])], state: { url: redis.url } }
    const firstDir = tempDir("agentify-state-")
    const first = await startHttpGateway({ config, env: { AGENTIFY_STATE_DIR: firstDir } })
    gateways.push(first)
    const client = await connect(first)
    await until(
      "fx's tools at the first",
      async () => (await client.listTools()).tools.some((t) => t.name === "fx__echo"),
      20_000
    )
    await until("the remembered lists in the store", () => {
      const keys = spawnSync("redis-cli", ["-p", String(redis.port), "hkeys", "mcp-agentify:files:known"], { encoding: "utf8" })
      return keys.stdout.split("\n").filter((k) => k.startsWith("launch-")).length === 2
    })
    await client.close()

    const secondDir = tempDir("agentify-state-")
    const second = await startHttpGateway({ config, env: { AGENTIFY_STATE_DIR: secondDir } })
    gateways.push(second)
    // Taken from the store before its backends started: both known, neither started.
    expect(readdirSync(join(secondDir, "known")).filter((f) => f.endsWith(".json"))).toHaveLength(2)
    const late = await connect(second)
    const listed = (await late.listTools()).tools.map((t) => t.name)
    expect(listed).toContain("fx__echo")
    expect(listed).toContain("other__tool_1")
    expect(descendants(second.child.pid!)).toEqual([])
    const echo = await late.callTool({ name: "fx__echo", arguments: { text: "from the store" } })
    expect(firstText(echo)).toContain("from the store")
    // Only the backend called runs.
    expect(descendants(second.child.pid!)).toHaveLength(1)
    await late.close()
  })
})
