/**
 * The gateway's HTTP endpoint as an OAuth 2.1 resource server (`--http-auth oauth`), against a real
 * authorization server on 127.0.0.1 (oidc-provider) and the SDK's client with its OAuth provider:
 * the protected-resource metadata, the challenge, a client-credentials client that discovers the
 * issuer from the 401 and connects; tokens for another audience, expired, signed by an unknown key
 * and without the scope each refused with the right status and header; a profile that needs a scope;
 * a session bound to its subject; the client's token never reaching a backend.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { M2M_CLIENT, startAuthServer, type AuthServer } from "../../support/authServer.js"
import { startHttpGateway, type HttpGateway, initializeParams, JSON_AND_SSE, sepHeaders } from "../../support/httpClient.js"
import { fixtureBackend, firstText } from "../../support/mcpFixture.js"
import { startRemoteServer, type RemoteServer } from "../../support/remoteServer.js"
import { freePort } from "../../bench/httpClient.js"
import { until } from "../../support/process.js"

let auth: AuthServer
let gateway: HttpGateway
let remote: RemoteServer
let resource: string
let debug: string

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${gateway.base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: JSON_AND_SSE, ...headers },
    body: JSON.stringify(body)
  })

const initialize = (path: string, token: string | undefined) =>
  post(
    path,
    { jsonrpc: "2.0", id: 1, method: "initialize", params: initializeParams("raw") },
    token === undefined ? {} : { authorization: `Bearer ${token}` }
  )

const now = () => Math.floor(Date.now() / 1000)

beforeAll(async () => {
  const port = await freePort()
  resource = `http://127.0.0.1:${port}/mcp`
  auth = await startAuthServer({ resources: [resource, "http://127.0.0.1:1/elsewhere"], scopes: ["mcp:tools", "mcp:admin"] })
  remote = await startRemoteServer()
  gateway = await startHttpGateway({
    address: `127.0.0.1:${port}`,
    args: ["--http-auth", "oauth", "--debug-port", "0"],
    config: {
      backends: [fixtureBackend("fx"), { id: "remote", url: remote.url("/mcp") }],
      httpAuth: { issuer: auth.issuer, audience: resource, scopes: ["mcp:tools"] },
      profiles: { admin: { scopes: ["mcp:admin"] } }
    }
  })
  debug = `http://127.0.0.1:${await until("the debug UI", () => /debug UI at http:\/\/127\.0\.0\.1:(\d+)\//.exec(gateway.stderr())?.[1])}`
})
afterAll(async () => {
  await gateway?.close()
  await remote?.stop()
  await auth?.close()
})

describe("--http-auth oauth", () => {
  it("serves the protected-resource metadata, in the root and the path-suffixed form, without a token", async () => {
    for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]) {
      const response = await fetch(`${gateway.base}${path}`)
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({
        resource,
        authorization_servers: [auth.issuer],
        scopes_supported: ["mcp:tools", "mcp:admin"],
        bearer_methods_supported: ["header"],
        resource_name: "mcp-agentify"
      })
    }
  })

  it("answers a request without a token 401 pointing at the metadata", async () => {
    const response = await initialize("/mcp", undefined)
    expect(response.status).toBe(401)
    expect(response.headers.get("www-authenticate")).toMatch(
      new RegExp(`^Bearer resource_metadata="${gateway.base}/\\.well-known/oauth-protected-resource/mcp"`)
    )
  })

  it("lets the SDK client with its OAuth provider discover the issuer, get a token, list and call", async () => {
    const client = new Client({ name: "oauth-client", version: "1.0.0" })
    const provider = new ClientCredentialsProvider({
      clientId: M2M_CLIENT.id,
      clientSecret: M2M_CLIENT.secret,
      scope: "mcp:tools",
      expectedIssuer: auth.issuer
    })
    await client.connect(new StreamableHTTPClientTransport(new URL(resource), { authProvider: provider }))
    try {
      expect(provider.tokens()?.access_token).toBeDefined()
      const tools = (await client.listTools()).tools.map((t) => t.name)
      expect(tools).toContain("fx__echo")
      expect(firstText(await client.callTool({ name: "fx__echo", arguments: { hello: "oauth" } }))).toContain("oauth")
      // The client's token is the gateway's to check, never a backend's to see.
      const headers = await client.callTool({ name: "remote__headers", arguments: {} })
      expect((headers.structuredContent as { authorization: string }).authorization).toBe("none")
      // Who it is: on the session, in the log and the debug UI.
      const status = (await (await fetch(`${debug}/api/status`)).json()) as { sessions: Array<{ subject?: string }> }
      expect(status.sessions.map((s) => s.subject)).toContain(M2M_CLIENT.id)
      expect(gateway.stderr()).toMatch(new RegExp(`"msg":"initialize"[^\\n]*"subject":"${M2M_CLIENT.id}"`))
    } finally {
      await client.close()
    }
  })

  it("refuses a token for another audience, an expired one, one signed by an unknown key and one without the scope", async () => {
    const claims = { iss: auth.issuer, aud: resource, sub: "alice", scope: "mcp:tools", iat: now(), exp: now() + 300 }
    const cases: Array<[string, string, number, RegExp]> = [
      [
        "another audience",
        await auth.clientCredentials({ resource: "http://127.0.0.1:1/elsewhere", scope: "mcp:tools" }),
        401,
        /error="invalid_token".*not for this resource/
      ],
      ["expired", await auth.sign({ ...claims, iat: now() - 600, exp: now() - 300 }), 401, /error="invalid_token".*expired/],
      ["unknown key", await auth.sign(claims, { stranger: true }), 401, /error="invalid_token".*not signed by a key of/],
      ["another issuer", await auth.sign({ ...claims, iss: "http://127.0.0.1:1" }), 401, /error="invalid_token".*not issued by/],
      ["no scope", await auth.sign({ ...claims, scope: "openid" }), 403, /error="insufficient_scope", scope="mcp:tools"/],
      ["garbage", "not-a-jwt", 401, /error="invalid_token"/],
      // A subject that would read as two names (a NUL joins keys): no user of the gateway's.
      [
        "a NUL in the subject",
        await auth.sign({ ...claims, sub: "alice\u0000mallory" }),
        401,
        /subject holds a control character/
      ],
      [
        "a newline in the subject",
        await auth.sign({ ...claims, sub: "alice\nmallory" }),
        401,
        /subject holds a control character/
      ]
    ]
    for (const [what, token, status, header] of cases) {
      const response = await initialize("/mcp", token)
      expect(response.status, what).toBe(status)
      const challenge = response.headers.get("www-authenticate") ?? ""
      expect(challenge, what).toMatch(/^Bearer resource_metadata="/)
      expect(challenge, what).toMatch(header)
      const body = (await response.json()) as { error: { message: string } }
      expect(body.error.message, what).toMatch(status === 401 ? /^Unauthorized: / : /^Forbidden: /)
    }
    // The same claims, properly signed and in time: accepted.
    expect((await initialize("/mcp", await auth.sign(claims))).status).toBe(200)
  })

  it("checks a 2026-07-28 (stateless) request's token as any other", async () => {
    const body = {
      jsonrpc: "2.0",
      id: 9,
      method: "tools/call",
      params: {
        name: "fx__echo",
        arguments: { stateless: true },
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {},
          "io.modelcontextprotocol/clientInfo": { name: "stateless-oauth", version: "1.0.0" }
        }
      }
    }
    const headers = { "mcp-protocol-version": "2026-07-28", ...sepHeaders(body) }
    expect((await post("/mcp", body, headers)).status).toBe(401)
    const token = await auth.sign({
      iss: auth.issuer,
      aud: resource,
      sub: "dave",
      scope: "mcp:tools",
      iat: now(),
      exp: now() + 300
    })
    const response = await post("/mcp", body, { ...headers, authorization: `Bearer ${token}` })
    expect(response.status).toBe(200)
    expect(await response.text()).toContain("stateless")
  })

  it("asks the scopes a profile needs, beside the configured ones", async () => {
    const tools = await auth.clientCredentials({ resource, scope: "mcp:tools" })
    const refused = await initialize("/profiles/admin/mcp", tools)
    expect(refused.status).toBe(403)
    expect(refused.headers.get("www-authenticate")).toMatch(/error="insufficient_scope", scope="mcp:tools mcp:admin"/)
    const both = await auth.clientCredentials({ resource, scope: "mcp:tools mcp:admin" })
    expect((await initialize("/profiles/admin/mcp", both)).status).toBe(200)
  })

  it("follows a rotation of the issuer's keys: a token signed by the new key is accepted", async () => {
    const claims = () => ({ iss: auth.issuer, aud: resource, sub: "carol", scope: "mcp:tools", iat: now(), exp: now() + 300 })
    expect((await initialize("/mcp", await auth.sign(claims()))).status).toBe(200)
    await auth.rotate()
    const rotated = await auth.sign(claims())
    // The keys were fetched moments ago: a new one is looked for again after the 5 s cooldown.
    await until("the new key to be accepted", async () => (await initialize("/mcp", rotated)).status === 200, 15_000, 500)
    expect((await initialize("/mcp", await auth.sign(claims(), { stranger: true }))).status).toBe(401)
  }, 30_000)

  it("keeps a session to its subject: another subject's valid token does not reach it", async () => {
    const claims = { iss: auth.issuer, aud: resource, scope: "mcp:tools", iat: now(), exp: now() + 300 }
    const alice = await auth.sign({ ...claims, sub: "alice" })
    const bob = await auth.sign({ ...claims, sub: "bob" })
    const opened = await initialize("/mcp", alice)
    const session = opened.headers.get("mcp-session-id")!
    expect(session).toBeTruthy()
    const ping = (token: string) =>
      post("/mcp", { jsonrpc: "2.0", id: 2, method: "ping" }, { authorization: `Bearer ${token}`, "mcp-session-id": session })
    expect((await ping(alice)).status).toBe(200)
    expect((await ping(bob)).status).toBe(404)
  })
})
