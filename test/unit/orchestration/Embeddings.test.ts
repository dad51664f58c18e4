/**
 * The semantic ranking against a local embeddings endpoint: it finds a tool by what it means, its
 * tool vectors are kept (in memory and in the state directory) so only new tools are embedded, and
 * an endpoint that fails or hangs leaves the lexical ranking alone, never failing a request.
 */
import { Effect } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCatalog, rankEntries, rankTask } from "../../../src/catalog/ToolCatalog.js"
import * as Embeddings from "../../../src/orchestration/Embeddings.js"
import { type EmbeddingsServer, startEmbeddingsServer } from "../../support/embeddingsServer.js"

const tool = (name: string, description: string) => ({ name, description, inputSchema: { type: "object" as const } })
const catalog = buildCatalog([
  { backendId: "svc", tools: [tool("forecast", "Forecast for a city."), tool("rates", "Currency exchange rates.")] },
  { backendId: "fs", tools: Array.from({ length: 20 }, (_, i) => tool(`tool_${i}`, `Does thing ${i} in the city tomorrow.`)) }
])

describe("embeddings", () => {
  let server: EmbeddingsServer
  beforeAll(async () => {
    server = await startEmbeddingsServer()
  })
  afterAll(async () => {
    await server.close()
  })
  const embedder = (stateDir?: string, timeoutMs = 5_000) =>
    Embeddings.make({ model: "test-embed", baseUrl: server.baseUrl, apiKey: "sk-embed-test", stateDir, timeoutMs })

  it("finds a tool by what it means, and the task ranking offers it", async () => {
    server.setMode("ok")
    const request = "will I need an umbrella in the city tomorrow"
    const semantic = await Effect.runPromise(embedder().rank(catalog.entries, request, 3))
    expect(semantic[0]?.name).toBe("svc__forecast")
    expect(rankEntries(catalog.entries, request, 3).map((e) => e.name)).not.toContain("svc__forecast")
    expect(rankEntries(catalog.entries, request, 8).map((e) => e.name)).not.toContain("svc__forecast")
    expect(rankTask(catalog.entries, request, 8, null, [], semantic).map((e) => e.name)).toContain("svc__forecast")
    expect(server.authorizations.at(-1)).toBe("Bearer sk-embed-test")
  })

  it("embeds each tool once: kept in memory and in the state directory, only new tools sent", async () => {
    server.setMode("ok")
    const dir = mkdtempSync(join(tmpdir(), "embeddings-"))
    const first = embedder(dir)
    await Effect.runPromise(first.rank(catalog.entries, "rain", 2))
    expect(first.embedded()).toBe(catalog.entries.length)
    await Effect.runPromise(first.rank(catalog.entries, "euros", 2))
    expect(first.embedded()).toBe(catalog.entries.length)
    // Another process (a restart): the disk's vectors, and only the new tool embedded.
    const more = buildCatalog([
      { backendId: "svc", tools: [tool("forecast", "Forecast for a city."), tool("rates", "Currency exchange rates.")] },
      {
        backendId: "fs",
        tools: Array.from({ length: 20 }, (_, i) => tool(`tool_${i}`, `Does thing ${i} in the city tomorrow.`))
      },
      { backendId: "cal", tools: [tool("book", "Book a meeting.")] }
    ])
    const again = embedder(dir)
    const found = await Effect.runPromise(again.rank(more.entries, "schedule an appointment", 1))
    expect(again.embedded()).toBe(1)
    expect(found[0]?.name).toBe("cal__book")
  })

  it("an endpoint that fails or hangs leaves the lexical ranking alone, and the request goes on", async () => {
    server.setMode("fail")
    expect(await Effect.runPromise(embedder().rank(catalog.entries, "rain", 3))).toEqual([])
    server.setMode("hang")
    const started = Date.now()
    expect(await Effect.runPromise(embedder(undefined, 300).rank(catalog.entries, "rain", 3))).toEqual([])
    expect(Date.now() - started).toBeLessThan(5_000)
    server.setMode("ok")
  })
})
