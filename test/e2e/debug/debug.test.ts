/**
 * The debug UI's API and WebSockets, on the CLI serving Streamable HTTP with a scripted model:
 * what is recorded (calls, latency, trace pairs, orchestrations with their ranking), what is kept
 * out (secrets, other hosts), and restarting a backend.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { get as httpGet } from "node:http"
import WebSocket from "ws"
import { FIXTURE_TOOL_COUNT, fixtureBackend } from "../../support/mcpFixture.js"
import { call, type HttpGateway, openSession, send, startHttpGateway } from "../../support/httpClient.js"
import { startGateway } from "../../support/stdioClient.js"
import { until } from "../../support/process.js"

export const SECRET = "debug-secret-value-8d1f2a"

/** Starts a gateway with `--debug-port 0` and returns it with the debug UI's base URL. */
export const startDebugGateway = async (
  extraEnv: Record<string, string> = {}
): Promise<{ gateway: HttpGateway; debug: string }> => {
  const gateway = await startHttpGateway({
    scripted: true,
    args: ["--debug-port", "0"],
    env: { SCRIPTED_TOOL: "fx__echo", ...extraEnv },
    config: {
      maxToolsPerRequest: 5,
      // An endpoint nothing answers at (port 9): the lexical ranking alone, and its key never shown.
      embeddings: { model: "test-embed", baseUrl: "http://127.0.0.1:9/v1", apiKey: SECRET },
      backends: [
        fixtureBackend("fx", ["--leak-env", "FX_TOKEN"], { env: { FX_TOKEN: SECRET }, restartOnCrash: true }),
        fixtureBackend("other")
      ]
    }
  })
  const port = await until(
    "the debug UI to listen",
    () => /debug UI at http:\/\/127\.0\.0\.1:(\d+)\//.exec(gateway.stderr())?.[1]
  )
  return { gateway, debug: `http://127.0.0.1:${port}` }
}

const get = async (url: string, headers: Record<string, string> = {}) => {
  const reply = await send(url, { headers })
  return { status: reply.status, body: reply.messages[0] as any }
}

let gateway: HttpGateway
let debug: string
let mcp: string
let session: string

beforeAll(async () => {
  ;({ gateway, debug } = await startDebugGateway())
  mcp = `${gateway.base}/mcp`
  session = (await openSession(mcp)).sessionId
}, 30_000)
afterAll(async () => {
  await gateway?.close()
})

describe("debug API", () => {
  it("backends: state, address, calls, errors and latency of the calls made", async () => {
    // Tests run in any order: another may have restarted fx, and calls are counted since the UI began.
    const fxOf = async () => (await get(`${debug}/api/backends`)).body.find((b: any) => b.id === "fx")
    await until("fx to be ready", async () => (await fxOf()).state === "ready")
    const before = await fxOf()
    // Calls of a known length: the percentiles must say so (the fixture answers after `ms`).
    for (let i = 0; i < 5; i++) await call(mcp, session, `e${i}`, "tools/call", { name: "fx__slow", arguments: { ms: 60 } })
    await call(mcp, session, "f", "tools/call", { name: "fx__fail", arguments: {} })
    const { status, body } = await get(`${debug}/api/backends`)
    expect(status).toBe(200)
    const fx = body.find((b: any) => b.id === "fx")
    expect(fx).toMatchObject({
      state: "ready",
      enabled: true,
      protocolVersion: "2025-11-25",
      tools: FIXTURE_TOOL_COUNT
    })
    expect(fx.restarts).toBe(before.restarts)
    expect(fx.address).toMatch(/^pid \d+$/)
    // The six calls (the handshake and its tools/list are not counted); `fail` answers an error
    // reply (the fixture's --leak-env makes it a JSON-RPC error).
    expect(fx.calls - before.calls).toBe(6)
    expect(fx.errors - before.errors).toBe(1)
    // Over the last samples, most are the 60 ms calls (this backend's earlier calls are fast ones).
    expect(fx.p99Ms).toBeGreaterThanOrEqual(60)
    expect(fx.p99Ms).toBeGreaterThanOrEqual(fx.p50Ms)
    // The failed call is the last error, in the backend's row as in the page's column.
    expect(fx.lastError).toMatch(/^tools\/call: /)
    expect(fx.lastError).not.toContain(SECRET)
    const status_ = await get(`${debug}/api/status`)
    expect(status_.body).toMatchObject({ backends: { total: 2, enabled: 2, ready: 2 } })
  })

  it("errors count every failed call: an isError result, a crash mid-call, a call while the backend is down", async () => {
    const otherOf = async () => (await get(`${debug}/api/backends`)).body.find((b: any) => b.id === "other")
    await until("other to be ready", async () => (await otherOf()).state === "ready")
    const before = await otherOf()
    const isError = await call(mcp, session, "x1", "tools/call", { name: "other__fail", arguments: {} })
    expect(isError.messages.at(-1).result.isError).toBe(true)
    // An isError result counts as an error, and is the last error, with its text.
    const text = isError.messages.at(-1).result.content[0].text
    expect((await otherOf()).lastError).toBe(`tools/call: ${text}`)
    const crashed = await call(mcp, session, "x2", "tools/call", { name: "other__crash", arguments: {} })
    expect(crashed.messages.at(-1).error.code).toBe(-32004)
    const down = await call(mcp, session, "x3", "tools/call", { name: "other__echo", arguments: {} })
    expect(down.messages.at(-1).error.code).toBe(-32004)
    const after = (await get(`${debug}/api/backends`)).body.find((b: any) => b.id === "other")
    expect(after.calls - before.calls).toBe(3)
    expect(after.errors - before.errors).toBe(3)
    await until(
      "other to be back",
      async () => (await get(`${debug}/api/backends`)).body.find((b: any) => b.id === "other").state === "ready"
    )
  })

  it("mcptrace: the server/discover probe a session-era backend refuses is marked probe, not an error; newest first on asking", async () => {
    const probes = (await get(`${debug}/api/mcptrace?method=server/discover&limit=10000`)).body as Array<any>
    const refused = probes.filter((e) => e.kind === "response")
    expect(refused.length).toBeGreaterThan(0)
    expect(refused.every((e) => e.status === "probe")).toBe(true)
    const oldest = (await get(`${debug}/api/mcptrace?limit=5`)).body as Array<any>
    const newest = (await get(`${debug}/api/mcptrace?limit=5&order=newest`)).body as Array<any>
    expect(newest.map((e) => e.seq)).toEqual(oldest.map((e) => e.seq).reverse())
  })

  it("mcptrace: both channels, requests paired with replies, filters by backend and method; secrets scrubbed", async () => {
    await call(mcp, session, "t1", "tools/call", { name: "fx__env", arguments: { names: ["FX_TOKEN"] } })
    const all = (await get(`${debug}/api/mcptrace?limit=10000`)).body as Array<any>
    const clientReply = all.find((e) => e.channel === "client" && e.direction === "out" && e.id === "t1")
    expect(clientReply).toMatchObject({ kind: "response", method: "tools/call", status: "ok" })
    expect(clientReply.durationMs).toBeGreaterThanOrEqual(0)
    const backendCall = all.filter((e) => e.channel === "backend" && e.peer === "fx" && e.method === "tools/call")
    expect(backendCall.some((e) => e.direction === "out" && e.kind === "request")).toBe(true)
    expect(backendCall.some((e) => e.direction === "in" && e.kind === "response" && e.status === "ok")).toBe(true)
    // The backend echoed its secret; the trace never holds it.
    expect(JSON.stringify(all)).not.toContain(SECRET)
    expect(JSON.stringify(all)).toContain("<redacted>")

    const filtered = (await get(`${debug}/api/mcptrace?backend=other&method=tools/list`)).body as Array<any>
    expect(filtered.length).toBeGreaterThan(0)
    expect(filtered.every((e) => e.peer === "other" && e.method === "tools/list")).toBe(true)
    expect((await get(`${debug}/api/mcptrace?limit=2`)).body).toHaveLength(2)
  })

  it("config and logs: no secret anywhere; logs filtered by level", async () => {
    const config = await get(`${debug}/api/config`)
    expect(config.body.backends[0]).toMatchObject({ id: "fx", envKeys: ["FX_TOKEN"], transport: "stdio" })
    expect(config.body.embeddings).toEqual({ model: "test-embed", origin: "http://127.0.0.1:9", key: "embeddings.apiKey" })
    expect(JSON.stringify(config.body)).not.toContain(SECRET)
    // Tests run in any order: this one may come before the backends are ready (initialize does not wait).
    const all = await until("a backend ready to be logged", async () => {
      const logs = (await get(`${debug}/api/logs?level=trace&limit=5000`)).body as Array<any>
      return logs.some((e) => e.level === "info" && /backend ready/.test(e.message)) ? logs : undefined
    })
    // The gateway runs at debug: the filter has something to remove, and something to keep.
    expect(all.some((e) => e.level === "debug")).toBe(true)
    const infos = (await get(`${debug}/api/logs?level=info&limit=5000`)).body as Array<any>
    expect(infos.length).toBeGreaterThan(0)
    expect(infos.length).toBeLessThan(all.length)
    expect(infos.every((e) => ["info", "warn", "error", "fatal"].includes(e.level))).toBe(true)
    expect(JSON.stringify(all)).not.toContain(SECRET)
  })

  it("code mode: each agentify_run_code run with its script, its calls with times and outcomes, its logs and the limit that stopped it", async () => {
    const code = 'console.log("hello from the script"); await tools.fx.echo({ n: 1 }); return "done"'
    await call(mcp, session, "code-1", "tools/call", { name: "agentify_run_code", arguments: { code } })
    await call(mcp, session, "code-2", "tools/call", {
      name: "agentify_run_code",
      arguments: { code: "while (true) {}", timeoutMs: 300 }
    })
    const runs = await until("both runs recorded", async () => {
      const list = ((await get(`${debug}/api/orchestrations`)).body as Array<any>).filter((o) => o.routing === "code")
      return list.length >= 2 ? list : undefined
    })
    const [ok, stopped] = runs.slice(-2)
    expect(ok).toMatchObject({ query: "agentify_run_code", code, logs: ["hello from the script"] })
    expect(ok.steps).toEqual([{ step: 1, tool: "fx__echo", arguments: '{"n":1}', outcome: "ok", ms: expect.any(Number) }])
    expect(ok.error).toBeUndefined()
    expect(stopped).toMatchObject({ code: "while (true) {}", limit: "timeoutMs", error: { code: -32003 } })
  })

  it("orchestrations: the query, the ranked offer with scores, the model's choice, the plan, each step and the result", async () => {
    await call(mcp, session, "o1", "agentify/orchestrateTask", { query: "echo the word banana back to me" })
    const orchestrations = await until("the orchestration to be recorded", async () => {
      const list = (await get(`${debug}/api/orchestrations`)).body as Array<any>
      return list.length > 0 ? list : undefined
    })
    const o = orchestrations.at(-1)
    expect(o.query).toBe("echo the word banana back to me")
    expect(o.routing).toBe("tool")
    // At most maxToolsPerRequest (5), and only tools that match something of the request, each
    // with its score (a tool that matches nothing is not offered: docs/orchestration.md).
    expect(o.offered.length).toBeGreaterThan(0)
    expect(o.offered.length).toBeLessThanOrEqual(5)
    expect(o.offered[0]).toEqual({ name: "fx__echo", score: expect.any(Number) })
    for (const offered of o.offered) expect(offered.score).toBeGreaterThan(0)
    expect(o.choice).toEqual({ name: "fx__echo", arguments: JSON.stringify({ text: "echo the word banana back to me" }) })
    expect(o.plan).toMatchObject({ backendId: "fx", method: "tools/call" })
    expect(o.result).toContain("banana")
    expect(o.llmMs).toBeGreaterThanOrEqual(0)
    expect(o.model).toBe("scripted")
    // Each call of each step, as it went (the scripted model answers the first step only).
    expect(o.steps).toEqual([
      {
        step: 1,
        tool: "fx__echo",
        arguments: JSON.stringify({ text: "echo the word banana back to me" }),
        outcome: "ok",
        ms: expect.any(Number)
      }
    ])
  })

  it("WebSockets stream new log and trace entries as JSON", async () => {
    const trace = new WebSocket(`${debug.replace("http", "ws")}/ws/mcptrace?backend=fx`)
    const logs = new WebSocket(`${debug.replace("http", "ws")}/ws/logs?level=info`)
    const traced: Array<any> = []
    const logged: Array<any> = []
    trace.on("message", (data) => traced.push(JSON.parse(String(data))))
    logs.on("message", (data) => logged.push(JSON.parse(String(data))))
    await Promise.all([new Promise((r) => trace.once("open", r)), new Promise((r) => logs.once("open", r))])
    await call(mcp, session, "w1", "tools/call", { name: "fx__echo", arguments: { live: true } })
    await call(mcp, session, "w2", "tools/call", { name: "other__echo", arguments: {} })
    await until("the call to be streamed", () => traced.some((e) => e.kind === "response" && e.method === "tools/call"))
    expect(traced.every((e) => e.peer === "fx")).toBe(true)
    // A restart is logged at info.
    await fetch(`${debug}/api/backends/other/restart`, { method: "POST" })
    await until("the restart to be streamed", () => logged.some((e) => /restarting on request/.test(e.message)))
    expect(logged.every((e) => ["info", "warn", "error", "fatal"].includes(e.level))).toBe(true)
    trace.close()
    logs.close()
  })

  it("restart: a backend is stopped and started again (new pid, restarts counted); unknown ids are 404", async () => {
    const before = (await get(`${debug}/api/backends`)).body.find((b: any) => b.id === "fx")
    const restart = await fetch(`${debug}/api/backends/fx/restart`, { method: "POST" })
    expect(restart.status).toBe(202)
    const after = await until("fx to be ready again", async () => {
      const fx = (await get(`${debug}/api/backends`)).body.find((b: any) => b.id === "fx")
      return fx.state === "ready" && fx.address !== before.address ? fx : undefined
    })
    expect(after.restarts).toBe(before.restarts + 1)
    expect((await fetch(`${debug}/api/backends/nope/restart`, { method: "POST" })).status).toBe(404)
  })

  it("the page refuses to be framed (a foreign page could lure a click on restart); no favicon 404", async () => {
    const page = await fetch(`${debug}/`)
    await page.text()
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
    expect(page.headers.get("x-frame-options")).toBe("DENY")
    const icon = await fetch(`${debug}/favicon.ico`)
    expect(icon.status).toBe(204)
  })

  it("refuses another Host or a foreign Origin (DNS rebinding, cross-site WebSocket)", async () => {
    // fetch sets Host itself: a raw request sends the rebound name.
    const rebound = await new Promise<number>((resolve, reject) => {
      const request = httpGet(`${debug}/api/status`, { headers: { host: "evil.example" } }, (response) => {
        response.resume()
        resolve(response.statusCode!)
      })
      request.on("error", reject)
    })
    expect(rebound).toBe(403)
    expect((await get(`${debug}/api/status`, { origin: "https://evil.example" })).status).toBe(403)
    expect((await get(`${debug}/api/status`, { origin: debug })).status).toBe(200)
  })
})

describe("the debug UI started by a client", () => {
  it("initializationOptions.DEBUG_PORT on stdio starts it at initialize, and it sees that client's calls", async () => {
    const client = startGateway()
    try {
      await client.initialize({ DEBUG_PORT: 0, backends: [fixtureBackend("fx")] })
      const port = await until(
        "the debug UI to listen",
        () => /debug UI at http:\/\/127\.0\.0\.1:(\d+)\//.exec(client.stderr())?.[1]
      )
      await client.callTool("fx__echo", { via: "stdio" })
      const trace = await until("the call in the trace", async () => {
        const entries = (await get(`http://127.0.0.1:${port}/api/mcptrace?method=tools/call`)).body as Array<any>
        return entries.some((e) => e.channel === "backend" && e.kind === "response") ? entries : undefined
      })
      expect(trace.some((e) => e.channel === "client" && e.peer === "stdio")).toBe(true)
    } finally {
      await client.close()
    }
  }, 30_000)
})

describe("debug API with a token", () => {
  it("AGENTIFY_DEBUG_TOKEN: every request needs it, as a bearer token or ?token=", async () => {
    const token = "debug-token-abcdef-123456"
    const { gateway: guarded, debug: url } = await startDebugGateway({ AGENTIFY_DEBUG_TOKEN: token })
    try {
      expect((await get(`${url}/api/status`)).status).toBe(401)
      expect((await get(`${url}/api/status`, { authorization: `Bearer ${token}` })).status).toBe(200)
      expect((await get(`${url}/api/status?token=${token}`)).status).toBe(200)
      expect((await get(`${url}/api/status?token=wrong-token-000000000`)).status).toBe(401)
      expect(guarded.stderr()).not.toContain(token)
    } finally {
      await guarded.close()
    }
  }, 30_000)
})
