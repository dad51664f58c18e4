/**
 * Each user acts upstream as themselves (`auth: {type: "oauth", perUser: true}`), with no browser:
 * oidc-provider on 127.0.0.1 issues every token directly (the operator's and each user's for the
 * upstream, each user's for the gateway), the token store holds them as sign-ins would have left
 * them, and the upstream (the SDK's server behind its bearer-auth middleware) reports whose token
 * each call came with. Runs wherever the tests run; the sign-in pages themselves are tested in
 * oauth-per-user.test.ts, with Chromium.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { once } from "node:events"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Store from "../../../src/auth/Store.js"
import { freePort } from "../../bench/httpClient.js"
import { type AuthServer, startAuthServer } from "../../support/authServer.js"
import { type HttpGateway, startHttpGateway } from "../../support/httpClient.js"
import { firstText } from "../../support/mcpFixture.js"
import { until } from "../../support/process.js"
import { ROOT, tempDir } from "../../support/stdioClient.js"

const OAUTH_SERVER = join(ROOT, "test", "fixtures", "oauth-server.mjs")
const SCOPE = "mcp:tools"

let auth: AuthServer
let upstream: ChildProcess
let upstreamLog = ""
let gateway: HttpGateway
let gatewayResource: string
const now = () => Math.floor(Date.now() / 1000)

beforeAll(async () => {
  const [upstreamPort, gatewayPort] = [await freePort(), await freePort()]
  const upstreamUrl = `http://127.0.0.1:${upstreamPort}/mcp`
  gatewayResource = `http://127.0.0.1:${gatewayPort}/mcp`
  auth = await startAuthServer({ resources: [upstreamUrl, gatewayResource], scopes: [SCOPE] })
  upstream = spawn(process.execPath, [OAUTH_SERVER, "--port", String(upstreamPort), "--issuer", auth.issuer, "--log"], {
    stdio: ["ignore", "pipe", "pipe"]
  })
  upstream.stderr!.on("data", (chunk: Buffer) => (upstreamLog += chunk.toString("utf8")))
  await once(upstream.stdout!, "data")

  // The store as the operator's sign-in and alice's and bob's would have left it, sealed with the
  // gateway's key: each token the authorization server's own, for the upstream, naming its user.
  const dir = tempDir()
  const tokenDir = join(dir, "tokens")
  const env = { AGENTIFY_TOKEN_DIR: tokenDir, AGENTIFY_TOKEN_KEY: randomBytes(32).toString("hex") }
  for (const subject of [undefined, "alice", "bob"]) {
    const access_token = await auth.sign({
      iss: auth.issuer,
      aud: upstreamUrl,
      sub: subject ?? "operator",
      scope: SCOPE,
      jti: randomBytes(8).toString("hex"),
      iat: now(),
      exp: now() + 3_600
    })
    Store.write(
      tokenDir,
      Store.entryOf("secure", subject),
      {
        resource: upstreamUrl,
        issuer: auth.issuer,
        client: { client_id: "a-registered-client" },
        tokens: { access_token, token_type: "Bearer", scope: SCOPE, obtained_at: Date.now(), expires_at: Date.now() + 3_600_000 },
        ...(subject === undefined ? {} : { subject })
      },
      env
    )
  }
  gateway = await startHttpGateway({
    address: `127.0.0.1:${gatewayPort}`,
    args: ["--http-auth", "oauth"],
    config: {
      // whoami only reads (the server does not say so): a script may call it without asking.
      backends: [
        {
          id: "secure",
          url: upstreamUrl,
          auth: { type: "oauth", perUser: true },
          flow: { tools: { whoami: { readOnly: true } } }
        }
      ],
      httpAuth: { issuer: auth.issuer, audience: gatewayResource, scopes: [SCOPE] }
    },
    env
  })
}, 60_000)

afterAll(async () => {
  await gateway?.close()
  upstream?.kill()
  await auth?.close()
})

/** `sub`'s MCP client of the gateway, with their token for it (and no way to be asked to sign in). */
const userOf = async (sub: string) => {
  const token = await auth.sign({ iss: auth.issuer, aud: gatewayResource, sub, scope: SCOPE, iat: now(), exp: now() + 600 })
  const client = new Client({ name: `${sub}-client`, version: "1.0.0" })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } }
    })
  )
  const whoami = async () =>
    (JSON.parse(firstText(await client.callTool({ name: "secure__whoami", arguments: {} }))) as { sub: string }).sub
  return { client, whoami }
}

describe("each user's own upstream tokens, no browser", () => {
  it("sends alice's calls with alice's token and bob's with bob's, never the gateway's own; carol, with none, is asked to sign in", async () => {
    const alice = await userOf("alice")
    const bob = await userOf("bob")
    try {
      // The operator's tokens list the tools.
      await until(
        "secure's tools",
        async () => (await alice.client.listTools()).tools.some((t) => t.name === "secure__whoami"),
        20_000
      )
      expect(await alice.whoami()).toBe("alice")
      expect(await bob.whoami()).toBe("bob")
      expect(await alice.whoami()).toBe("alice")
      // A script's calls are its user's too.
      const script = await bob.client.callTool({
        name: "agentify_run_code",
        arguments: { code: "return (await tools.secure.whoami({})).sub" }
      })
      expect(firstText(script)).toContain("bob")
      // carol never signed in: she is sent to sign in (-32042), and nothing goes upstream in anyone's name.
      const carol = await userOf("carol")
      try {
        await expect(carol.whoami()).rejects.toMatchObject({ code: -32042 })
      } finally {
        await carol.client.close()
      }
      const calls = upstreamLog.split("\n").filter((line) => line.startsWith("upstream: tools/call whoami"))
      expect(calls).toEqual([
        "upstream: tools/call whoami with alice's token",
        "upstream: tools/call whoami with bob's token",
        "upstream: tools/call whoami with alice's token",
        "upstream: tools/call whoami with bob's token"
      ])
    } finally {
      await alice.client.close()
      await bob.client.close()
    }
  }, 60_000)
})
