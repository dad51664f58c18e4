/**
 * Remote backends against a real server on loopback (the SDK's Streamable HTTP and HTTP+SSE server
 * transports, and a WebSocket one): each transport, the bearer token, a session the server forgets,
 * progress, sampling and cancellation, the 2026-07-28 era over HTTP, a server going down and back.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { once } from "node:events"
import { writeFileSync } from "node:fs"
import { type AddressInfo, createServer } from "node:net"
import { join } from "node:path"
import * as Backend from "../../../src/backend/Backend.js"
import type { BackendConfig, BackendType } from "../../../src/config/Config.js"
import { startGateway, tempDir, cleanEnv } from "../../support/stdioClient.js"
import { startHttpGateway, type HttpGateway } from "../../support/httpClient.js"
import { structured } from "../../support/mcpFixture.js"
import { until } from "../../support/process.js"
import { type RemoteServer, startRemoteServer } from "../../support/remoteServer.js"

const TOKEN = "remote-test-token-4f9a1c"
const STATELESS_FIXTURE = new URL("../../fixtures/stateless-server.mjs", import.meta.url).pathname

const remote = (type: BackendType, url: string, headers: Record<string, string> = {}): BackendConfig => ({
  id: "far",
  type,
  url,
  headers: { Authorization: `Bearer ${TOKEN}`, ...headers },
  args: [],
  env: {},
  enabled: true,
  restartOnCrash: true
})

const SAMPLED = { role: "assistant", content: { type: "text", text: "forty-two" }, model: "scripted" }

/** Runs `body` with a backend made from `config` (sampling answered with SAMPLED). */
const withBackend = <A>(
  config: BackendConfig,
  body: (backend: Backend.Backend, seen: Array<{ method: string; params: any }>) => Effect.Effect<A, unknown>
): Promise<A> => {
  const seen: Array<{ method: string; params: any }> = []
  return Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const backend = yield* Backend.make(config, {
          clientCapabilities: { sampling: {} },
          onRequest: (method, params) => Effect.sync(() => (seen.push({ method, params }), SAMPLED)),
          onNotification: (method, params) => Effect.sync(() => void seen.push({ method, params }))
        })
        return yield* body(backend, seen)
      })
    ) as Effect.Effect<A>
  )
}

let server: RemoteServer
beforeAll(async () => {
  server = await startRemoteServer({ token: TOKEN })
})
afterAll(async () => {
  await server.stop()
})

describe("remote backends: each transport", () => {
  const cases: ReadonlyArray<[BackendType, "/mcp" | "/sse" | "/ws", string]> = [
    ["streamable-http", "/mcp", "streamable-http"],
    ["http", "/mcp", "streamable-http"],
    ["sse", "/sse", "sse"],
    // `http` at a legacy server: Streamable HTTP is refused, HTTP+SSE answers.
    ["http", "/sse", "sse"],
    ["websocket", "/ws", "websocket"]
  ]
  for (const [type, path, spoken] of cases) {
    it(`${type} at ${path}: tools, calls with the bearer token, and the server's sampling request relayed`, async () => {
      const outcome = await withBackend(remote(type, server.url(path), { "X-Team": "blue" }), (backend, seen) =>
        Effect.gen(function* () {
          const echoed = (yield* backend.callTool("echo", { text: "hi" })) as any
          const asked = (yield* backend.callTool("ask", { prompt: "the answer?" })) as any
          const headers = structured(yield* backend.callTool("headers", {}))
          return { backend, echoed, asked, headers, seen }
        })
      )
      expect(outcome.backend.pid).toBeUndefined()
      expect(outcome.backend.address).toBe(server.url(path))
      expect(outcome.backend.era).toBe("session")
      expect(outcome.backend.protocolVersion).toBe("2025-11-25")
      expect(outcome.backend.tools().map((t) => t.name)).toContain("expire_session")
      expect(outcome.echoed.content[0].text).toBe(`${spoken}: hi`)
      expect(outcome.asked.content[0].text).toBe("the model said: forty-two")
      expect(outcome.seen.find((s) => s.method === "sampling/createMessage")?.params.messages[0].content.text).toBe("the answer?")
      expect(outcome.headers).toMatchObject({ authorization: "given", "x-team": "blue" })
    }, 20_000)
  }

  it("a wrong token fails the start at once with HTTP 401 and a hint, without the token", async () => {
    const config = { ...remote("streamable-http", server.url("/mcp")), headers: { Authorization: "Bearer wrong-token-value" } }
    const failure = await Effect.runPromise(Effect.scoped(Effect.flip(Backend.make(config))))
    expect(failure.method).toBe("initialize")
    expect(failure.summary).toMatch(/HTTP 401 Unauthorized \(check the backend's headers or bearer token\)/)
    // Not a version problem: one attempt, not one per protocol version.
    expect(failure.summary).not.toContain("no common MCP protocol version")
    expect(Backend.isPermanentFailure(failure)).toBe(true)
  }, 20_000)

  it("a server nobody listens at: a failure that is retried, naming the cause", async () => {
    // A port that was free a moment ago.
    const probe = createServer().listen(0, "127.0.0.1")
    await once(probe, "listening")
    const port = (probe.address() as AddressInfo).port
    await new Promise((resolve) => probe.close(resolve))
    const config = remote("streamable-http", `http://127.0.0.1:${port}/mcp`)
    const failure = await Effect.runPromise(Effect.scoped(Effect.flip(Backend.make(config))))
    expect(failure.reason).toBe("crashed")
    expect(failure.summary).toBe(
      `the server could not be reached (connect ECONNREFUSED 127.0.0.1:${port}) during server/discover`
    )
    expect(Backend.isPermanentFailure(failure)).toBe(false)
  }, 20_000)
})

describe("remote backends: sessions, progress, cancellation", () => {
  it("a session the server forgets (404) is initialized again and the call retried once", async () => {
    const outcome = await withBackend(remote("streamable-http", server.url("/mcp")), (backend) =>
      Effect.gen(function* () {
        const before = structured(yield* backend.callTool("echo", { text: "one" }))
        yield* backend.callTool("expire_session", {})
        yield* Effect.sleep(100)
        const after = structured(yield* backend.callTool("echo", { text: "two" }))
        return { before, after }
      })
    )
    expect(outcome.after.text).toBe("two")
    // A new session on the server.
    expect(outcome.after.session).toBeGreaterThan(outcome.before.session)
  }, 20_000)

  it("progress reaches the gateway; a call past its timeout is cancelled on the server", async () => {
    const outcome = await withBackend(
      { ...remote("streamable-http", server.url("/mcp")), requestTimeoutMs: 1_000 },
      (backend, seen) =>
        Effect.gen(function* () {
          yield* backend.callTool("slow", { ms: 60 }, { meta: { progressToken: "p-1" } })
          const hung = yield* Effect.flip(backend.callTool("hang", {}))
          const cancellations = yield* Effect.promise(() =>
            until("the server to record the cancellation", async () => {
              const got = structured(await Effect.runPromise(backend.callTool("cancelled", {}))).cancellations
              return got.length > 0 ? got : undefined
            })
          )
          return { hung, cancellations, progress: seen.filter((s) => s.method === "notifications/progress") }
        })
    )
    expect(outcome.progress.map((p) => p.params.progress)).toEqual([1, 2, 3])
    expect(outcome.progress[0]!.params.progressToken).toBe("p-1")
    expect(outcome.hung.reason).toBe("timeout")
    expect(outcome.cancellations).toContainEqual(expect.objectContaining({ reason: "timed out after 1000 ms" }))
  }, 20_000)
})

describe("remote backends: the 2026-07-28 era over HTTP", () => {
  let gateway: HttpGateway
  beforeAll(async () => {
    gateway = await startHttpGateway({
      config: {
        backends: [
          {
            id: "modern",
            type: "stdio",
            command: process.execPath,
            args: [STATELESS_FIXTURE],
            env: {},
            enabled: true,
            restartOnCrash: true
          }
        ]
      }
    })
  })
  afterAll(async () => {
    await gateway?.close()
  })

  it("a stateless server is spoken to statelessly: server/discover, _meta on every request, no session", async () => {
    const outcome = await withBackend(
      { ...remote("streamable-http", `${gateway.base}/servers/modern/mcp`), headers: {} },
      (backend) =>
        Effect.gen(function* () {
          const echoed = (yield* backend.callTool("echo", { text: "now" })) as any
          return { backend, echoed }
        })
    )
    expect(outcome.backend.era).toBe("stateless")
    expect(outcome.backend.protocolVersion).toBe("2026-07-28")
    expect(JSON.stringify(outcome.echoed)).toContain("now")
  }, 30_000)
})

describe("remote backends through the gateway", () => {
  it("a remote server that goes down fails calls with -32004, and is reconnected when it comes back", async () => {
    const down = await startRemoteServer({ token: TOKEN })
    const dir = tempDir()
    const config = join(dir, "config.json")
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: {
          "far away": { type: "http", url: down.url("/mcp"), headers: { Authorization: "Bearer ${env:FAR_TOKEN}" } }
        }
      })
    )
    const client = startGateway({ args: ["--config", config, "--log-level", "debug"], env: cleanEnv({ FAR_TOKEN: TOKEN }) })
    try {
      await client.initialize()
      const tools = (await client.request("tools/list")).result.tools.map((t: { name: string }) => t.name)
      expect(tools).toContain("far_away__echo")
      expect((await client.callTool("far_away__echo", { text: "up" })).result.content[0].text).toBe("streamable-http: up")

      await down.stop()
      const failed = await client.callTool("far_away__echo", { text: "down" })
      expect(failed.error?.code).toBe(-32004)
      expect(failed.error?.message).toMatch(/^Backend 'far_away' failed: the server could not be reached/)

      await down.restart()
      const back = await until(
        "the remote backend to be reconnected",
        async () => {
          const reply = await client.callTool("far_away__echo", { text: "back" })
          return reply.result?.content[0].text === "streamable-http: back" ? reply : undefined
        },
        15_000,
        200
      )
      expect(back).toBeDefined()
      expect(client.stderr()).toContain("connected to")
      expect(client.stderr()).not.toContain(TOKEN)
    } finally {
      await client.close()
      await down.stop()
    }
  }, 45_000)
})
