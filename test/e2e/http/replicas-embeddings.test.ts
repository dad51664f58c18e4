/**
 * Tool vectors kept by a team's gateways in their store (`state` with `embeddings`): a real
 * `redis-server`, two gateway processes each with a state directory of its own, a local embeddings
 * endpoint and a local model. What one gateway embedded, the other does not embed again: its
 * orchestration sends the endpoint only the request.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type EmbeddingsServer, startEmbeddingsServer } from "../../support/embeddingsServer.js"
import { type FakeOpenAI, startFakeOpenAI } from "../../support/fakeOpenAI.js"
import { type HttpGateway, startHttpGateway } from "../../support/httpClient.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { until } from "../../support/process.js"
import { REDIS_SERVER, type Redis, startRedis } from "../../support/redis.js"

const SKIP = REDIS_SERVER === undefined && process.env.CI !== "true"
const TOOLS = 40

let redis: Redis
let embeddings: EmbeddingsServer
let model: FakeOpenAI
const gateways: Array<HttpGateway> = []

beforeAll(async () => {
  if (SKIP) return
  redis = await startRedis()
  embeddings = await startEmbeddingsServer()
  model = await startFakeOpenAI({ text: "Nothing to do." })
}, 30_000)

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()))
  await redis?.close()
  await embeddings?.close()
  await model?.close()
})

const start = async () => {
  const gateway = await startHttpGateway({
    config: {
      backends: [fixtureBackend("fx", ["--tools", String(TOOLS)])],
      maxToolsPerRequest: 5,
      state: { url: redis.url },
      embeddings: { model: "test-embed", baseUrl: embeddings.baseUrl }
    },
    env: { OPENAI_API_KEY: "sk-embeddings-team-0000", OPENAI_BASE_URL: model.baseUrl }
  })
  gateways.push(gateway)
  return gateway
}

const orchestrate = async (gateway: HttpGateway, query: string) => {
  const client = new Client({ name: "team", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp`)))
  try {
    return await client.callTool({ name: "agentify_orchestrate", arguments: { query } })
  } finally {
    await client.close()
  }
}

describe.skipIf(SKIP)("tool vectors shared by two gateways", () => {
  it("a tool one gateway embedded is not embedded again by another: its request alone goes to the endpoint", async () => {
    const first = await start()
    // The first gateway embeds its tools as they are listed, and its orchestration the request.
    await orchestrate(first, "keep a copy of this on disk")
    const toolsEmbedded = embeddings.inputs.filter((t) => t !== "keep a copy of this on disk").length
    expect(toolsEmbedded).toBeGreaterThanOrEqual(TOOLS)
    await until("the vectors in the store", async () => {
      const { spawnSync } = await import("node:child_process")
      const keys = spawnSync("redis-cli", ["-p", String(redis.port), "hkeys", "mcp-agentify:files:embeddings"], {
        encoding: "utf8"
      })
      return keys.stdout.trim() !== ""
    })
    const second = await start()
    const before = embeddings.inputs.length
    await orchestrate(second, "store this file safely")
    expect(embeddings.inputs.slice(before)).toEqual(["store this file safely"])
  }, 60_000)
})
