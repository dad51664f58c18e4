/**
 * A hanging embeddings endpoint seen from a gateway (issue 58, item 3): the tool list is being
 * embedded when six orchestrations arrive at once; each waits for the one fill no longer than its
 * own deadline and goes on with the lexical ranking, and the endpoint is asked by that fill alone,
 * not once more per request.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type EmbeddingsServer, startEmbeddingsServer } from "../../support/embeddingsServer.js"
import { type FakeOpenAI, startFakeOpenAI } from "../../support/fakeOpenAI.js"
import { type HttpGateway, startHttpGateway } from "../../support/httpClient.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { until } from "../../support/process.js"

let embeddings: EmbeddingsServer
let model: FakeOpenAI
let gateway: HttpGateway | undefined

beforeAll(async () => {
  embeddings = await startEmbeddingsServer()
  embeddings.setMode("hang")
  model = await startFakeOpenAI({ text: "Nothing to do." })
})

afterAll(async () => {
  await gateway?.close()
  await embeddings?.close()
  await model?.close()
})

const orchestrate = async (query: string) => {
  const client = new Client({ name: "hang", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway!.base}/mcp`)))
  try {
    return await client.callTool({ name: "agentify_orchestrate", arguments: { query } }, undefined, { timeout: 120_000 })
  } finally {
    await client.close()
  }
}

describe("a hanging embeddings endpoint", () => {
  it("six orchestrations at once each end without waiting for another's turn; the endpoint is asked by one fill", async () => {
    gateway = await startHttpGateway({
      config: {
        backends: [fixtureBackend("fx", ["--tools", "40"])],
        maxToolsPerRequest: 5,
        embeddings: { model: "test-embed", baseUrl: embeddings.baseUrl }
      },
      env: { OPENAI_API_KEY: "sk-embeddings-hang-0000", OPENAI_BASE_URL: model.baseUrl }
    })
    // The tools are listed: their fill has asked the endpoint, which hangs.
    await until("the fill to ask the endpoint", () => embeddings.requests() >= 1, 30_000)
    const six = await Promise.all(Array.from({ length: 6 }, (_, i) => orchestrate(`echo the message ${i}`)))
    // Each was answered by the model (the lexical ranking offered it tools), none failed for the endpoint.
    expect(six).toHaveLength(6)
    for (const result of six) expect(JSON.stringify(result)).not.toContain("embeddings")
    expect(model.requests.length).toBeGreaterThanOrEqual(6)
    // The fill's one batch; at most one trial more should a busy machine let the first backoff pass.
    // Chained fills asked once per request (and a request's completion waited for every fill before it).
    expect(embeddings.requests()).toBeLessThanOrEqual(2)
  }, 120_000)
})
