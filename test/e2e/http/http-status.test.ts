/**
 * Streamable HTTP as raw HTTP: every status code the transport promises, the session rules
 * (issue, expiry, limit, end), the token, and the DNS-rebinding checks on Host and Origin.
 */
import { spawn } from "node:child_process"
import { once } from "node:events"
import { request as httpRequest } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, cleanEnv, sleep, tempDir } from "../../support/stdioClient.js"
import { call, type HttpGateway, openSession, send, startHttpGateway } from "../../support/httpClient.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { until } from "../../support/process.js"

const TOKEN = "s3cret-token-for-http-tests"

/** A GET with headers fetch would not let us set (Host). */
const rawGet = (port: number, path: string, headers: Record<string, string>) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, method: "GET", headers }, (res) => {
      let body = ""
      res.on("data", (chunk) => (body += chunk))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on("error", reject)
    req.end()
  })

describe("Streamable HTTP status codes and sessions", () => {
  let gateway: HttpGateway
  let url: string
  beforeAll(async () => {
    gateway = await startHttpGateway({
      config: {
        maxFrameBytes: 4096,
        backends: [
          fixtureBackend("fx"),
          { id: "broken", type: "stdio", command: "/nonexistent/mcp-server", restartOnCrash: false }
        ]
      }
    })
    url = `${gateway.base}/mcp`
  })
  afterAll(async () => {
    expect((await gateway.close()).code).toBe(0)
    expect(gateway.stdout()).toBe("")
  })

  it("/healthz is 200 while serving; /readyz is 503 with each backend's state while one is down", async () => {
    const health = await send(`${gateway.base}/healthz`)
    expect(health.status).toBe(200)
    expect(health.messages[0].status).toBe("ok")
    // The port listens while the backends start: /readyz is read once neither is starting any more.
    const statesOf = (reply: Awaited<ReturnType<typeof send>>) =>
      Object.fromEntries(reply.messages[0].backends.map((b: any) => [b.id, b.state]))
    const ready = await until(
      "both backends past starting",
      async () => {
        const reply = await send(`${gateway.base}/readyz`)
        return Object.values(statesOf(reply)).includes("starting") ? undefined : reply
      },
      25_000
    )
    expect(ready.status).toBe(503)
    expect(statesOf(ready)).toEqual({ fx: "ready", broken: "failed" })
  })

  it("initialize issues Mcp-Session-Id; requests without it get 400, with an unknown one 404", async () => {
    const { sessionId, reply } = await openSession(url)
    expect(sessionId).toMatch(/^[\x21-\x7e]+$/)
    expect(reply.status).toBe(200)
    expect(reply.messages[0].result.serverInfo.name).toBe("mcp-agentify")
    const missing = await send(url, { body: { jsonrpc: "2.0", id: 1, method: "tools/list" } })
    expect(missing.status).toBe(400)
    expect(missing.messages[0].error.message).toMatch(/Mcp-Session-Id/)
    const unknown = await call(url, "no-such-session", 1, "tools/list")
    expect(unknown.status).toBe(404)
    const ok = await call(url, sessionId, 1, "tools/list")
    expect(ok.status).toBe(200)
    expect(ok.messages[0].result.tools[0].name).toBe("agentify_orchestrate")
  })

  it("checks MCP-Protocol-Version, Content-Type and Accept", async () => {
    const { sessionId } = await openSession(url)
    const badVersion = await call(url, sessionId, 1, "ping", undefined, { "mcp-protocol-version": "1999-01-01" })
    expect(badVersion.status).toBe(400)
    const olderVersion = await call(url, sessionId, 2, "ping", undefined, { "mcp-protocol-version": "2025-03-26" })
    expect(olderVersion.status).toBe(200)
    const text = await send(url, {
      raw: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "ping" }),
      headers: { "content-type": "text/plain", "mcp-session-id": sessionId }
    })
    expect(text.status).toBe(415)
    const html = await send(url, {
      body: { jsonrpc: "2.0", id: 4, method: "ping" },
      headers: { accept: "text/html", "mcp-session-id": sessionId }
    })
    expect(html.status).toBe(406)
  })

  it("a reply comes as JSON unless the client ranks the event stream first (by q, then by order)", async () => {
    const { sessionId } = await openSession(url)
    const asking = (id: number, accept: string) =>
      call(url, sessionId, id, "ping", undefined, { accept }).then((r) => ({
        type: r.contentType.split(";")[0],
        reply: r.messages
      }))
    expect(await asking(1, "application/json, text/event-stream")).toEqual({
      type: "application/json",
      reply: [{ jsonrpc: "2.0", id: 1, result: {} }]
    })
    expect(await asking(2, "text/event-stream, application/json")).toEqual({
      type: "text/event-stream",
      reply: [{ jsonrpc: "2.0", id: 2, result: {} }]
    })
    expect((await asking(3, "text/event-stream;q=0.5, application/json")).type).toBe("application/json")
    expect((await asking(4, "application/json;q=0.9, text/event-stream")).type).toBe("text/event-stream")
  })

  it("answers 202 with no body to notifications and responses, and JSON-RPC errors to bad JSON", async () => {
    const { sessionId } = await openSession(url)
    const headers = { "mcp-session-id": sessionId }
    const notification = await send(url, { body: { jsonrpc: "2.0", method: "notifications/initialized" }, headers })
    expect(notification.status).toBe(202)
    expect(notification.text).toBe("")
    const response = await send(url, { body: { jsonrpc: "2.0", id: 99, result: {} }, headers })
    expect(response.status).toBe(202)
    const parse = await send(url, { raw: "{not json", headers })
    expect(parse.status).toBe(400)
    expect(parse.messages[0]).toMatchObject({ id: null, error: { code: -32700 } })
    const batch = await send(url, {
      body: [
        { jsonrpc: "2.0", id: "a", method: "ping" },
        { jsonrpc: "2.0", method: "notifications/initialized" },
        { jsonrpc: "2.0", id: "b", method: "nope" }
      ],
      headers
    })
    expect(batch.status).toBe(200)
    const replies = batch.messages[0] as Array<any>
    expect(replies.map((r) => r.id).sort()).toEqual(["a", "b"])
    expect(replies.find((r) => r.id === "b").error.code).toBe(-32601)
  })

  it("refuses a body over maxFrameBytes with 413, other methods with 405, other paths with 404", async () => {
    const { sessionId } = await openSession(url)
    const big = await send(url, {
      body: {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "fx__echo", arguments: { text: "x".repeat(10_000) } }
      },
      headers: { "mcp-session-id": sessionId }
    })
    expect(big.status).toBe(413)
    const put = await send(url, { method: "PUT", headers: { "mcp-session-id": sessionId } })
    expect(put.status).toBe(405)
    expect(put.headers.get("allow")).toMatch(/POST/)
    expect((await send(`${gateway.base}/other`)).status).toBe(404)
    expect((await send(`${gateway.base}/servers/nope/mcp`, { body: { jsonrpc: "2.0", id: 1, method: "ping" } })).status).toBe(404)
  })

  it("GET opens the session's stream (one at a time); DELETE ends the session", async () => {
    const { sessionId } = await openSession(url)
    const noAccept = await send(url, { headers: { "mcp-session-id": sessionId, accept: "application/json" } })
    expect(noAccept.status).toBe(406)
    const controller = new AbortController()
    const stream = await fetch(url, {
      headers: { accept: "text/event-stream", "mcp-session-id": sessionId },
      signal: controller.signal
    })
    expect(stream.status).toBe(200)
    expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/)
    const second = await send(url, { headers: { accept: "text/event-stream", "mcp-session-id": sessionId } })
    expect(second.status).toBe(409)
    controller.abort()
    const deleted = await send(url, { method: "DELETE", headers: { "mcp-session-id": sessionId } })
    expect(deleted.status).toBe(204)
    expect((await call(url, sessionId, 1, "ping")).status).toBe(404)
  })

  it("over HTTP initializationOptions cannot reconfigure the shared backends (-32602), but logLevel is the session's", async () => {
    const refused = await send(url, {
      body: {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "x", version: "1" },
          initializationOptions: { backends: [{ id: "evil", command: "sh" }], OPENAI_API_KEY: "sk-nope" }
        }
      }
    })
    expect(refused.status).toBe(200)
    expect(refused.headers.get("mcp-session-id")).toBeNull()
    expect(refused.messages[0].error.code).toBe(-32602)
    expect(refused.messages[0].error.message).toMatch(/cannot reconfigure a shared gateway: backends, OPENAI_API_KEY/)
    // The quiet session gets no info-level log message during its own call.
    const { sessionId } = await openSession(url, { initializationOptions: { logLevel: "error" } })
    const logged = await call(url, sessionId, 1, "tools/call", { name: "fx__log", arguments: { message: "quiet" } })
    expect(logged.messages.filter((m) => m.method === "notifications/message")).toEqual([])
    expect(logged.messages.at(-1).result.content[0].text).toBe("logged")
  })

  it("/servers/<id>/mcp of a backend that is down answers initialize with -32004 and issues no session", async () => {
    const reply = await send(`${gateway.base}/servers/broken/mcp`, {
      body: {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } }
      }
    })
    expect(reply.messages[0].error.code).toBe(-32004)
    expect(reply.headers.get("mcp-session-id")).toBeNull()
  })

  it("DNS rebinding: a Host that does not name the server and a foreign Origin get 403; a local Origin is fine", async () => {
    const rebound = await rawGet(gateway.port, "/healthz", { host: `evil.example:${gateway.port}` })
    expect(rebound.status).toBe(403)
    const local = await rawGet(gateway.port, "/healthz", { host: `localhost:${gateway.port}` })
    expect(local.status).toBe(200)
    const foreign = await send(`${gateway.base}/healthz`, { headers: { origin: "http://evil.example" } })
    expect(foreign.status).toBe(403)
    const devPage = await send(`${gateway.base}/healthz`, { headers: { origin: "http://localhost:5173" } })
    expect(devPage.status).toBe(200)
  })
})

describe("Streamable HTTP with allowedHosts and allowedOrigins", () => {
  it("a Host or Origin named in the configuration is served; others still get 403", async () => {
    const gateway = await startHttpGateway({
      config: {
        allowedHosts: ["mcp.example.test"],
        allowedOrigins: ["https://app.example.test"],
        backends: [fixtureBackend("fx")]
      }
    })
    try {
      expect((await rawGet(gateway.port, "/healthz", { host: `mcp.example.test:${gateway.port}` })).status).toBe(200)
      expect((await rawGet(gateway.port, "/healthz", { host: `other.example.test:${gateway.port}` })).status).toBe(403)
      expect((await send(`${gateway.base}/healthz`, { headers: { origin: "https://app.example.test" } })).status).toBe(200)
      expect((await send(`${gateway.base}/healthz`, { headers: { origin: "https://other.example.test" } })).status).toBe(403)
    } finally {
      await gateway.close()
    }
  })
})

describe("Streamable HTTP session limit", () => {
  it("at most maxSessions live at once, then 503 with Retry-After; ending one makes room", async () => {
    const gateway = await startHttpGateway({ config: { maxSessions: 2, backends: [fixtureBackend("fx")] } })
    try {
      const url = `${gateway.base}/mcp`
      const first = await openSession(url)
      await openSession(url)
      const full = await send(url, {
        body: {
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } }
        }
      })
      expect(full.status).toBe(503)
      expect(full.headers.get("retry-after")).not.toBeNull()
      expect((await send(url, { method: "DELETE", headers: { "mcp-session-id": first.sessionId } })).status).toBe(204)
      expect((await openSession(url)).reply.status).toBe(200)
    } finally {
      await gateway.close()
    }
  })
})

describe("Streamable HTTP idle sessions", () => {
  it("a session idle for sessionIdleMs expires (404 afterwards); an active one does not", async () => {
    const gateway = await startHttpGateway({ config: { sessionIdleMs: 1_000, backends: [fixtureBackend("fx")] } })
    try {
      const url = `${gateway.base}/mcp`
      const idle = await openSession(url)
      const busy = await openSession(url)
      for (let i = 0; i < 8; i++) {
        await sleep(250)
        expect((await call(url, busy.sessionId, i, "ping")).status).toBe(200)
      }
      expect((await call(url, idle.sessionId, 1, "ping")).status).toBe(404)
      expect(gateway.stderr()).toMatch(/session closed.*idle for 1000 ms/)
    } finally {
      await gateway.close()
    }
  })
})

describe("Streamable HTTP with a token", () => {
  it("every request needs the bearer token (401 with WWW-Authenticate otherwise); the token is never logged", async () => {
    const gateway = await startHttpGateway({ config: { backends: [fixtureBackend("fx")] }, env: { AGENTIFY_HTTP_TOKEN: TOKEN } })
    try {
      const url = `${gateway.base}/mcp`
      const none = await send(`${gateway.base}/healthz`)
      expect(none.status).toBe(401)
      expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/)
      const wrong = await send(`${gateway.base}/healthz`, { headers: { authorization: `Bearer ${TOKEN}x` } })
      expect(wrong.status).toBe(401)
      const auth = { authorization: `Bearer ${TOKEN}` }
      const init = await send(url, {
        body: {
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } }
        },
        headers: auth
      })
      expect(init.status).toBe(200)
      const sessionId = init.headers.get("mcp-session-id")!
      expect((await call(url, sessionId, 2, "ping", undefined, auth)).status).toBe(200)
      expect((await call(url, sessionId, 3, "ping")).status).toBe(401)
    } finally {
      await gateway.close()
    }
    expect(gateway.stderr()).not.toContain(TOKEN)
  })

  it("refuses to listen beyond loopback without a token (exit 2, says how to set one)", async () => {
    const child = spawn(process.execPath, [BIN, "--http", "0.0.0.0:0"], {
      cwd: tempDir(),
      env: cleanEnv(),
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stderr = ""
    child.stderr!.on("data", (chunk) => (stderr += chunk))
    const [code] = await once(child, "exit")
    expect(code).toBe(2)
    expect(stderr).toMatch(/--http-token or AGENTIFY_HTTP_TOKEN/)
  })
})
