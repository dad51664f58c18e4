/**
 * The semantic ranking against a local embeddings endpoint: it finds a tool by what it means, its
 * tool vectors are kept (in memory and in the state directory) so only new tools are embedded, and
 * an endpoint that fails or hangs leaves the lexical ranking alone, never failing a request.
 */
import { Effect, Result } from "effect"
import { mkdtempSync, readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCatalog, rankEntries, rankTask } from "../../../../src/catalog/ToolCatalog.js"
import * as Config from "../../../../src/config/Config.js"
import { resolve } from "../../../../src/config/Resolve.js"
import * as Embeddings from "../../../../src/catalog/semantic/Embeddings.js"
import { type EmbeddingsServer, startEmbeddingsServer } from "../../../support/embeddingsServer.js"
import { until } from "../../../support/process.js"

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

/** A server of the test's own, closed when it ends. */
const withServer = async <A>(use: (server: EmbeddingsServer) => Promise<A>): Promise<A> => {
  const server = await startEmbeddingsServer()
  try {
    return await use(server)
  } finally {
    await server.close()
  }
}

const names = (entries: ReadonlyArray<{ readonly name: string }>) => entries.map((e) => e.name)

describe("embeddings: an endpoint that hangs costs one deadline, and is not asked by every request", () => {
  it("six requests at once during a hanging fill each end at their deadline; the endpoint is asked by the one fill, then rests", () =>
    withServer(async (server) => {
      server.setMode("hang")
      const embedder = Embeddings.make({
        model: "test-embed",
        baseUrl: server.baseUrl,
        apiKey: undefined,
        stateDir: undefined,
        timeoutMs: 400
      })
      // The tool list changed: its vectors are being computed when the requests come.
      const warming = Effect.runPromise(embedder.warm(catalog.entries))
      const six = await Promise.all(
        Array.from({ length: 6 }, () => Effect.runPromise(embedder.rank(catalog.entries, "rain tomorrow", 3)))
      )
      expect(six).toEqual(Array.from({ length: 6 }, () => []))
      await warming
      // One request to the endpoint: the fill's first batch; no request waited for another's turn
      // (each would have sent a batch of its own after the one before timed out).
      expect(server.requests()).toBe(1)
      // And now it rests: six more requests go lexical without asking (at most one trial, should a
      // busy machine let the first backoff pass meanwhile).
      await Promise.all(Array.from({ length: 6 }, () => Effect.runPromise(embedder.rank(catalog.entries, "rain", 3))))
      expect(server.requests()).toBeLessThanOrEqual(2)
    }))
})

describe("embeddings: a hostile answer leaves the lexical ranking alone and is not kept", () => {
  const request = "will I need an umbrella in the city tomorrow"
  const lexical = names(rankTask(catalog.entries, request, 5, null, [], []))
  for (const mode of ["zeros", "infinite", "index", "twice", "huge"] as const) {
    it(`${mode}: no semantic list, the offer is the lexical one, nothing kept`, () =>
      withServer(async (server) => {
        server.setMode(mode)
        const embedder = Embeddings.make({
          model: "test-embed",
          baseUrl: server.baseUrl,
          apiKey: undefined,
          stateDir: undefined,
          timeoutMs: 20_000
        })
        const semantic = await Effect.runPromise(embedder.rank(catalog.entries, request, 5))
        expect(semantic).toEqual([])
        expect(names(rankTask(catalog.entries, request, 5, null, [], semantic))).toEqual(lexical)
        expect(embedder.kept()).toBe(0)
        if (mode === "huge") {
          // The reader stopped at its limit: far from the 300 MB offered.
          expect(server.bytesWritten()).toBeLessThan(Embeddings.answerLimit(catalog.entries.length) + 32 * 1024 * 1024)
        }
        // Refused, not cached: once the endpoint answers well (and the circuit lets it be asked
        // again), every tool is embedded, and the right one found.
        server.setMode("ok")
        const again = await until(
          "the endpoint asked again",
          async () => {
            const found = await Effect.runPromise(embedder.rank(catalog.entries, request, 1))
            return found.length > 0 && found
          },
          20_000,
          200
        )
        expect(embedder.kept()).toBe(catalog.entries.length)
        expect(names(again)).toEqual(["svc__forecast"])
      }))
  }

  it("vectors of another length than the model's first are refused", () =>
    withServer(async (server) => {
      const embedder = Embeddings.make({
        model: "test-embed",
        baseUrl: server.baseUrl,
        apiKey: undefined,
        stateDir: undefined,
        timeoutMs: 20_000
      })
      await Effect.runPromise(embedder.warm(catalog.entries))
      expect(embedder.embedded()).toBe(catalog.entries.length)
      server.setMode("dims")
      const more = buildCatalog([
        { backendId: "svc", tools: [tool("forecast", "Forecast for a city."), tool("rates", "Currency exchange rates.")] },
        { backendId: "cal", tools: [tool("book", "Book a meeting.")] }
      ])
      expect(await Effect.runPromise(embedder.rank(more.entries, "schedule an appointment", 2))).toEqual([])
      expect(embedder.kept()).toBe(catalog.entries.length)
    }))
})

describe("embeddings: what is kept is bounded", () => {
  it("300 description changes keep the listed tools' vectors and a bounded few others, in memory and in the file", () =>
    withServer(async (server) => {
      const dir = mkdtempSync(join(tmpdir(), "embeddings-bound-"))
      const embedder = Embeddings.make({
        model: "test-embed",
        baseUrl: server.baseUrl,
        apiKey: undefined,
        stateDir: dir,
        timeoutMs: 20_000
      })
      const listed = (change: number) =>
        buildCatalog([
          { backendId: "fs", tools: Array.from({ length: 20 }, (_, i) => tool(`tool_${i}`, `Does thing ${i}.`)) },
          { backendId: "svc", tools: [tool("shifty", `Forecast, version ${change}.`)] }
        ])
      for (let change = 0; change < 300; change++) await Effect.runPromise(embedder.warm(listed(change).entries))
      // Every version was embedded once...
      expect(embedder.embedded()).toBe(20 + 300)
      // ... and what is kept is the 21 listed now and the newest of the others, up to the bound.
      const bound = 21 + Embeddings.MAX_UNLISTED_VECTORS
      const [file] = readdirSync(join(dir, "embeddings")).filter((f) => f.endsWith(".json"))
      const stored = JSON.parse(readFileSync(join(dir, "embeddings", file!), "utf8")) as { vectors: Record<string, unknown> }
      expect(Object.keys(stored.vectors)).toHaveLength(bound)
      expect(embedder.kept()).toBe(bound)
      // The tool listed now is ranked with its vector (it was not pruned).
      const found = await Effect.runPromise(embedder.rank(listed(299).entries, "rain forecast", 1))
      expect(names(found)).toEqual(["svc__shifty"])
    }))

  it("two gateways' files merged through the store keep this one's and a bounded few of the store's", () => {
    const vectorsOf = (from: number, count: number) =>
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${from + i}`, [1, 0.5]]))
    const local = JSON.stringify({ model: "m", vectors: vectorsOf(0, 30) })
    const shared = JSON.stringify({ model: "m", vectors: vectorsOf(1_000, 900) })
    const merged = JSON.parse(Embeddings.merge(local, shared)) as { vectors: Record<string, unknown> }
    expect(Object.keys(merged.vectors)).toHaveLength(30 + Embeddings.MAX_UNLISTED_VECTORS)
    expect(merged.vectors).toHaveProperty("k0")
    expect(merged.vectors).toHaveProperty("k1899")
    expect(merged.vectors).not.toHaveProperty("k1000")
  })
})

describe("embeddings: where the texts and the key go", () => {
  const configOf = (env: Record<string, string>, embeddings: Record<string, unknown>) =>
    resolve(
      { env, cwd: tmpdir() },
      Result.getOrThrow(Config.decodeOptions({ backends: [{ id: "fx", command: "node" }], embeddings }, "the test's options"))
    )

  it("a redirect to another origin is not followed: the second server hears nothing, the ranking is lexical", () =>
    withServer((first) =>
      withServer(async (second) => {
        first.setMode("redirect")
        first.setRedirect(`${second.baseUrl}/embeddings`)
        const embedder = Embeddings.make({
          model: "test-embed",
          baseUrl: first.baseUrl,
          apiKey: "sk-x",
          stateDir: undefined,
          timeoutMs: 20_000
        })
        expect(await Effect.runPromise(embedder.rank(catalog.entries, "rain", 3))).toEqual([])
        expect(first.requests()).toBe(1)
        expect(second.requests()).toBe(0)
        expect(second.inputs).toEqual([])
      })
    ))

  it("a redirect within the origin (307) is followed", () =>
    withServer(async (server) => {
      server.setMode("redirect")
      server.setRedirect("/v1/moved")
      const embedder = Embeddings.make({
        model: "test-embed",
        baseUrl: server.baseUrl,
        apiKey: undefined,
        stateDir: undefined,
        timeoutMs: 20_000
      })
      // The moved path answers 500 in this server: followed, then failed (two requests, not one).
      expect(await Effect.runPromise(embedder.rank(catalog.entries, "rain", 3))).toEqual([])
      expect(server.requests()).toBe(2)
    }))

  it("a redirect loop within the origin is followed 3 times, then refused: 4 requests, the ranking lexical", () =>
    withServer(async (server) => {
      server.setMode("redirect")
      server.setRedirect("/v1/embeddings")
      const embedder = Embeddings.make({
        model: "test-embed",
        baseUrl: server.baseUrl,
        apiKey: undefined,
        stateDir: undefined,
        timeoutMs: 20_000
      })
      expect(await Effect.runPromise(embedder.rank(catalog.entries, "rain", 3))).toEqual([])
      // The request, then 3 redirects followed; the 4th answer's redirect is not.
      expect(server.requests()).toBe(4)
    }))

  it("the model's key goes only to the model endpoint's origin; embeddings.apiKey wherever the embeddings are", () =>
    withServer((model) =>
      withServer(async (elsewhere) => {
        const env = { OPENAI_API_KEY: "sk-model-key-0001", OPENAI_BASE_URL: model.baseUrl }
        const rank = (config: ReturnType<typeof configOf>) =>
          Effect.runPromise(Embeddings.forConfig()(config)!.rank(catalog.entries, "rain", 3))
        // Another origin: no key.
        const foreign = configOf(env, { model: "test-embed", baseUrl: elsewhere.baseUrl })
        await rank(foreign)
        expect(elsewhere.authorizations.length).toBeGreaterThan(0)
        expect(elsewhere.authorizations.every((a) => a === undefined)).toBe(true)
        expect(Embeddings.describe(foreign)).toContain("no key")
        // The model's origin (a path of its own there): its key.
        await rank(configOf(env, { model: "test-embed", baseUrl: model.baseUrl }))
        expect(model.authorizations.at(-1)).toBe("Bearer sk-model-key-0001")
        // Its own key: that one, wherever.
        const own = configOf(env, { model: "test-embed", baseUrl: elsewhere.baseUrl, apiKey: "sk-embed-own-0002" })
        const before = elsewhere.authorizations.length
        await rank(own)
        expect(elsewhere.authorizations.slice(before).every((a) => a === "Bearer sk-embed-own-0002")).toBe(true)
        expect(elsewhere.authorizations.length).toBeGreaterThan(before)
        // Said, never shown.
        expect(Embeddings.describe(own)).toContain("key: embeddings.apiKey")
        expect(Embeddings.describe(own)).not.toContain("sk-embed-own-0002")
        expect(JSON.stringify(Embeddings.summaryOf(own))).not.toContain("sk-embed-own-0002")
      })
    ))
})
