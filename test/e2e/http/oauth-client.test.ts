/**
 * The gateway as an OAuth client of a remote backend, against real parts on 127.0.0.1: an
 * authorization server (oidc-provider, with dynamic registration, PKCE, its own login and consent
 * pages) and a remote MCP server (the SDK's, behind its bearer-auth middleware) that accepts only
 * its tokens. Without a token the backend is "needs auth" (check, the client's call) while the
 * others work; `mcp-agentify auth` registers, prints the URL, and headless Chromium signs in and
 * consents; the running gateway picks the token up by itself; an expired access token is
 * refreshed without the client noticing; a revoked refresh token makes the backend "needs auth"
 * again and the rest keeps working.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import {
  type ClientCapabilities,
  ElicitationCompleteNotificationSchema,
  ElicitRequestSchema,
  McpError,
  ToolListChangedNotificationSchema
} from "@modelcontextprotocol/sdk/types.js"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { once } from "node:events"
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { M2M_CLIENT, startAuthServer, type AuthServer } from "../../support/authServer.js"
import { BIN, cleanEnv, ROOT, tempDir } from "../../support/stdioClient.js"
import { startHttpGateway } from "../../support/httpClient.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import * as Store from "../../../src/auth/Store.js"
import { fixtureBackend, firstText } from "../../support/mcpFixture.js"
import { freePort } from "../../bench/httpClient.js"
import { sleep, until } from "../../support/process.js"
import { approve, CHROMIUM } from "../../support/signInPage.js"
import { REDIS_SERVER, startRedis } from "../../support/redis.js"
import { randomBytes } from "node:crypto"

const SKIP = CHROMIUM === undefined && process.env.CI !== "true"
if (SKIP) process.stderr.write("oauth-client.test.ts: no Chromium, so the sign-in tests are skipped\n")

const OAUTH_SERVER = join(ROOT, "test", "fixtures", "oauth-server.mjs")
/** Short-lived access tokens, so that the test sees one expire and be refreshed. */
const ACCESS_TOKEN_TTL_S = 4

let auth: AuthServer
let server: ChildProcess
let mcpUrl: string
let dir: string
let config: string
let env: NodeJS.ProcessEnv

beforeAll(async () => {
  const port = await freePort()
  mcpUrl = `http://127.0.0.1:${port}/mcp`
  auth = await startAuthServer({ resources: [mcpUrl], scopes: ["mcp:tools", "notes:write"], accessTokenTtlS: ACCESS_TOKEN_TTL_S })
  server = spawn(process.execPath, [OAUTH_SERVER, "--port", String(port), "--issuer", auth.issuer], {
    stdio: ["ignore", "pipe", "inherit"]
  })
  await once(server.stdout!, "data")
  dir = tempDir()
  config = join(dir, "gateway.json")
  writeFileSync(config, JSON.stringify({ backends: [fixtureBackend("fx"), { id: "secure", url: mcpUrl, auth: "oauth" }] }))
  // Each test sets AGENTIFY_TOKEN_DIR to a store of its own.
  env = cleanEnv()
})
afterAll(async () => {
  server?.kill()
  await auth?.close()
})

/**
 * `mcp-agentify auth secure` with the sign-in done in Chromium (oidc-provider's development login,
 * then its consent page), into `tokenDir`. Resolves with what the command printed.
 */
const signIn = async (
  tokenDir: string,
  as: { readonly config?: string; readonly env?: NodeJS.ProcessEnv } = {}
): Promise<string> => {
  const signing = spawn(process.execPath, [BIN, "auth", "secure", "--config", as.config ?? config, "--no-browser"], {
    cwd: dir,
    env: { ...env, ...as.env, AGENTIFY_TOKEN_DIR: tokenDir },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  signing.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")))
  signing.stderr!.resume()
  const exited = once(signing, "exit")
  const url = await until("the sign-in URL", () => /^(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/m.exec(out)?.[1], 20_000)
  expect(new URL(url).searchParams.get("code_challenge_method")).toBe("S256")
  expect(new URL(url).searchParams.get("resource")).toBe(mcpUrl)
  await approve(url)
  const [code] = await exited
  expect(code, out).toBe(0)
  return out
}

/** A gateway over stdio on `tokenDir`, with an SDK client (of these capabilities) that counts list_changed. */
const connectGateway = async (tokenDir: string, capabilities: ClientCapabilities = {}) => {
  const client = new Client({ name: "oauth-client-e2e", version: "1.0.0" }, { capabilities })
  const changed: Array<number> = []
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed.push(Date.now()))
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "--config", config],
    cwd: dir,
    env: { ...env, AGENTIFY_TOKEN_DIR: tokenDir } as Record<string, string>,
    stderr: "pipe"
  })
  const log = { stderr: "" }
  transport.stderr?.on("data", (chunk: Buffer) => (log.stderr += chunk.toString("utf8")))
  await client.connect(transport)
  return { client, changed, log }
}

const whoami = async (client: Client) => JSON.parse(firstText(await client.callTool({ name: "secure__whoami", arguments: {} })))

describe.skipIf(SKIP)("the gateway signed in to a remote backend with OAuth", () => {
  // Each test has a token store and a gateway of its own, starting with no token.
  let tokens: string
  let client: Client
  let changed: Array<number>
  let log: { stderr: string }

  beforeEach(async () => {
    tokens = join(tempDir(), "tokens")
    ;({ client, changed, log } = await connectGateway(tokens))
  })
  afterEach(async () => {
    await client?.close()
  })

  it("shows a backend without a token as needs auth, with the command that fixes it, and the rest works", async () => {
    const check = spawnSync(process.execPath, [BIN, "check", "--config", config], {
      cwd: dir,
      env: { ...env, AGENTIFY_TOKEN_DIR: tokens },
      encoding: "utf8"
    })
    expect(check.status).toBe(1)
    expect(check.stdout).toMatch(/^secure\s+http\s+needs auth\s/m)
    expect(check.stdout).toContain("fix: sign in: mcp-agentify auth secure")
    expect(check.stdout).toContain("sign-ins:\n  secure: not signed in (run mcp-agentify auth secure)")
    const names = (await client.listTools()).tools.map((t) => t.name)
    expect(names).toContain("fx__echo")
    expect(names.filter((n) => n.startsWith("secure__"))).toEqual([])
    expect(firstText(await client.callTool({ name: "fx__echo", arguments: { still: "working" } }))).toContain("working")
    // The log says it too, with the command.
    await until(
      "the log line",
      () => log.stderr.includes("backend needs auth: no token yet; run `mcp-agentify auth secure`"),
      5_000
    )
    const refused = await client.callTool({ name: "secure__whoami", arguments: {} }).then(
      () => undefined,
      (error: { code: number; message: string }) => error
    )
    // A call of its tool (a client may hold the name) says what to do, not "unknown tool".
    expect(refused?.code).toBe(-32004)
    expect(refused?.message).toContain("needs auth: no token yet; run `mcp-agentify auth secure`")
  })

  it("signs in with `mcp-agentify auth`: registers, PKCE, login and consent in a browser; the gateway picks the token up", async () => {
    // The client holds a list (whatever ran before, in any order): a change of it is what it hears of.
    expect((await client.listTools()).tools.some((t) => t.name === "secure__whoami")).toBe(false)
    const toldBefore = changed.length
    const out = await signIn(tokens)
    expect(out).toContain("Signed in to secure")
    const file = join(tokens, "secure.json")
    expect(statSync(file).mode & 0o777).toBe(0o600)
    // Sealed at rest: no token in the file, and it opens only with the state directory's key (0600).
    const onDisk = readFileSync(file, "utf8")
    expect(JSON.parse(onDisk)).toMatchObject({ sealed: "A256GCM" })
    const stored = Store.read(tokens, "secure", env)!
    expect(stored.resource).toBe(mcpUrl)
    expect(stored.tokens?.refresh_token).toBeDefined()
    expect(onDisk).not.toContain(stored.tokens!.access_token)
    expect(onDisk).not.toContain(stored.tokens!.refresh_token)
    expect(statSync(join(env.AGENTIFY_STATE_DIR!, "token.key")).mode & 0o777).toBe(0o600)
    expect(Store.read(tokens, "secure", { AGENTIFY_TOKEN_KEY: "00".repeat(32) })).toBeUndefined()
    // The running gateway's backend starts by itself, and the client hears of its tools.
    await until("secure's tools", async () => (await client.listTools()).tools.some((t) => t.name === "secure__whoami"), 20_000)
    expect(changed.length).toBeGreaterThan(toldBefore)
    expect((await whoami(client)).sub).toBe("alice")
    // check says where the gateway is signed in, and for what; never a token. (Not spawnSync: the
    // authorization server runs in this process.)
    const checking = spawn(process.execPath, [BIN, "check", "--config", config], {
      cwd: dir,
      env: { ...env, AGENTIFY_TOKEN_DIR: tokens },
      stdio: ["ignore", "pipe", "ignore"]
    })
    let report = ""
    checking.stdout!.on("data", (chunk: Buffer) => (report += chunk.toString("utf8")))
    await once(checking, "exit")
    expect(report).toMatch(new RegExp(`  secure: signed in at ${auth.issuer} for mcp:tools.*, renewable\n`))
    expect(report).not.toContain(stored.tokens!.access_token)
    expect(report).not.toContain(stored.tokens!.refresh_token)
  }, 60_000)
})

describe.skipIf(SKIP)("a gateway signed in to a remote backend", () => {
  // Each test signs in afresh into a token store of its own: none depends on another's tokens
  // (refresh tokens rotate, and one test revokes its grant).
  let tokenDir: string
  let client: Client
  let log: { stderr: string }

  beforeEach(async () => {
    tokenDir = join(tempDir(), "tokens")
    await signIn(tokenDir)
    ;({ client, log } = await connectGateway(tokenDir))
    await until("secure's tools", async () => (await client.listTools()).tools.some((t) => t.name === "secure__whoami"), 20_000)
  }, 60_000)
  afterEach(async () => {
    await client?.close()
  })

  it("refreshes an expired access token without the client noticing", async () => {
    const first = await whoami(client)
    await sleep(ACCESS_TOKEN_TTL_S * 1000 + 500)
    const second = await whoami(client)
    expect(second.sub).toBe("alice")
    expect(second.jti).not.toBe(first.jti)
    // Neither token shows in the gateway's log.
    const stored = Store.read(tokenDir, "secure", env)!
    expect(log.stderr).not.toContain(stored.tokens!.access_token)
    expect(log.stderr).not.toContain(stored.tokens!.refresh_token)
    expect(log.stderr).toContain("secure")
  }, 30_000)

  it("refreshes after a 401: a token the server refuses before it expires is renewed and the call made again", async () => {
    // A second gateway on the same token store, whose stored access token the server does not take.
    const stored = Store.read(tokenDir, "secure", env)!
    Store.write(
      tokenDir,
      "secure",
      {
        ...stored,
        tokens: { ...stored.tokens!, access_token: "not-a-token-the-server-takes", expires_at: Date.now() + 3_600_000 }
      },
      env
    )
    const second = await connectGateway(tokenDir)
    try {
      // Its backend connects on the refused token (a 401, then a refresh) in the background.
      await until(
        "the second gateway's secure tools",
        async () => (await second.client.listTools()).tools.some((t) => t.name === "secure__whoami"),
        20_000
      )
      expect((await whoami(second.client)).sub).toBe("alice")
      expect(Store.read(tokenDir, "secure", env)!.tokens!.access_token).not.toBe("not-a-token-the-server-takes")
    } finally {
      await second.client.close()
    }
    // The first gateway's refresh token was rotated by the second: it takes the new ones from the store.
    await sleep(ACCESS_TOKEN_TTL_S * 1000 + 500)
    expect((await whoami(client)).sub).toBe("alice")
  }, 30_000)

  it("steps up when a call needs more scope: the client opens the page it is given (URL elicitation), alice consents, the call goes through", async () => {
    const asked: Array<string> = []
    const completed: Array<string> = []
    const stepping = await connectGateway(tokenDir, { elicitation: { url: {} } })
    stepping.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      if (request.params.mode !== "url") return { action: "decline" }
      asked.push(request.params.url)
      // The user opens the page; the client's answer is that they agreed to.
      void approve(request.params.url)
      return { action: "accept" }
    })
    stepping.client.setNotificationHandler(
      ElicitationCompleteNotificationSchema,
      (n) => void completed.push(n.params.elicitationId)
    )
    try {
      await until(
        "secure's tools",
        async () => (await stepping.client.listTools()).tools.some((t) => t.name === "secure__write_note"),
        20_000
      )
      const written = firstText(
        await stepping.client.callTool({ name: "secure__write_note", arguments: {} }, undefined, { timeout: 60_000 })
      )
      expect(written).toMatch(/^written by alice with /)
      expect(written.split(" ")).toEqual(expect.arrayContaining(["mcp:tools", "notes:write"]))
      // The page asked for what was held and what the server named; its end was told.
      expect(asked).toHaveLength(1)
      expect(new URL(asked[0]!).searchParams.get("scope")!.split(" ")).toEqual(
        expect.arrayContaining(["mcp:tools", "notes:write"])
      )
      expect(completed).toHaveLength(1)
      // Every later call carries the larger token.
      expect((await whoami(stepping.client)).scope.split(" ")).toContain("notes:write")
    } finally {
      await stepping.client.close()
    }
  }, 90_000)

  it("over HTTP, the step-up's redirect comes back to the gateway's own /oauth/callback (the user's browser may be elsewhere)", async () => {
    const gateway = await startHttpGateway({
      config: { backends: [{ id: "secure", url: mcpUrl, auth: "oauth" }] },
      args: ["--debug-port", "0"],
      env: { AGENTIFY_STATE_DIR: env.AGENTIFY_STATE_DIR!, AGENTIFY_TOKEN_DIR: tokenDir }
    })
    const asked: Array<string> = []
    const remote = new Client({ name: "oauth-http-e2e", version: "1.0.0" }, { capabilities: { elicitation: { url: {} } } })
    remote.setRequestHandler(ElicitRequestSchema, async (request) => {
      if (request.params.mode !== "url") return { action: "decline" }
      asked.push(request.params.url)
      void approve(request.params.url)
      return { action: "accept" }
    })
    try {
      await remote.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp`)))
      await until(
        "secure's tools",
        async () => (await remote.listTools()).tools.some((t) => t.name === "secure__write_note"),
        20_000
      )
      const written = firstText(
        await remote.callTool({ name: "secure__write_note", arguments: {} }, undefined, { timeout: 60_000 })
      )
      expect(written).toMatch(/notes:write/)
      expect(new URL(asked[0]!).searchParams.get("redirect_uri")).toBe(`${gateway.base}/oauth/callback`)
      // A redirect nobody waits for is refused.
      const stray = await fetch(`${gateway.base}/oauth/callback?code=x&state=not-one-of-ours`)
      expect(stray.status).toBe(404)
      // The debug UI says where the gateway is signed in now, for what; never a token.
      const port = await until("the debug UI", () => /debug UI at http:\/\/127\.0\.0\.1:(\d+)\//.exec(gateway.stderr())?.[1])
      const backends = await (await fetch(`http://127.0.0.1:${port}/api/backends`)).text()
      const signIn = (JSON.parse(backends) as Array<{ id: string; signIn: string }>).find((b) => b.id === "secure")!.signIn
      expect(signIn).toMatch(new RegExp(`^signed in at ${auth.issuer} for .*notes:write.*, renewable$`))
      const stored = Store.read(tokenDir, "secure", env)!
      expect(backends).not.toContain(stored.tokens!.access_token)
      expect(backends).not.toContain(stored.tokens!.refresh_token)
    } finally {
      await remote.close()
      await gateway.close()
    }
  }, 90_000)

  it("gives a client without URL elicitation -32042 with the page to open; once alice signed in there the call goes through", async () => {
    const refused = await client.callTool({ name: "secure__write_note", arguments: {} }).then(
      () => undefined,
      (error: unknown) => error
    )
    expect(refused).toBeInstanceOf(McpError)
    expect((refused as McpError).code).toBe(-32042)
    const elicitation = (
      (refused as McpError).data as { elicitations: Array<{ mode: string; url: string; elicitationId: string }> }
    ).elicitations[0]!
    expect(elicitation.mode).toBe("url")
    expect((refused as McpError).message).toContain(elicitation.url)
    await approve(elicitation.url)
    await until("the new token", () => Store.read(tokenDir, "secure", env)?.tokens?.scope?.includes("notes:write"), 20_000)
    expect(firstText(await client.callTool({ name: "secure__write_note", arguments: {} }))).toMatch(/notes:write/)
  }, 90_000)

  it("forgets and revokes the tokens with `auth --revoke`: the grant ends at the server, the running gateway stops using them", async () => {
    const before = Store.read(tokenDir, "secure", env)!
    // Not spawnSync: the authorization server runs in this process and must answer meanwhile.
    const revoking = spawn(process.execPath, [BIN, "auth", "--revoke", "secure", "--config", config], {
      cwd: dir,
      env: { ...env, AGENTIFY_TOKEN_DIR: tokenDir },
      stdio: ["ignore", "pipe", "inherit"]
    })
    let out = ""
    revoking.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")))
    const [code] = await once(revoking, "exit")
    expect(code, out).toBe(0)
    expect(out).toBe(`Revoked secure's tokens at ${auth.issuer} and forgot them.\n`)
    expect(existsSync(join(tokenDir, "secure.json"))).toBe(false)
    // The authorization server ended the grant: its refresh token is refused.
    const refreshed = await fetch(`${auth.issuer}/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: before.tokens!.refresh_token!,
        client_id: before.client.client_id
      })
    })
    expect(refreshed.status).toBe(400)
    // The gateway's next call finds no token, though the old access token has not expired yet.
    const failed = await client.callTool({ name: "secure__whoami", arguments: {} }).then(
      () => undefined,
      (error: { code: number; message: string }) => error
    )
    expect(failed?.code).toBe(-32004)
    expect(failed?.message).toContain("needs auth")
  }, 30_000)

  it("makes the backend needs auth when its refresh token is revoked; the rest keeps working", async () => {
    const stored = Store.read(tokenDir, "secure", env)!
    await auth.revoke(stored.tokens!.refresh_token!, stored.client.client_id)
    await sleep(ACCESS_TOKEN_TTL_S * 1000 + 500)
    const failed = await client.callTool({ name: "secure__whoami", arguments: {} }).then(
      () => undefined,
      (error: { code: number; message: string }) => error
    )
    expect(failed?.code).toBe(-32004)
    expect(failed?.message).toContain("needs auth")
    expect(failed?.message).toContain("mcp-agentify auth secure")
    await until(
      "secure's tools gone",
      async () => !(await client.listTools()).tools.some((t) => t.name.startsWith("secure__")),
      20_000
    )
    expect(firstText(await client.callTool({ name: "fx__echo", arguments: { after: "revocation" } }))).toContain("revocation")
  }, 30_000)
})

describe.skipIf(SKIP || REDIS_SERVER === undefined)(
  "two gateways of a team sharing their tokens (state, one AGENTIFY_TOKEN_KEY)",
  () => {
    it("renews a token due at both at once only once: one renews, the other takes what it got, and the grant lives on", async () => {
      const redis = await startRedis()
      const teamConfig = join(dir, "team.json")
      writeFileSync(
        teamConfig,
        JSON.stringify({ backends: [{ id: "secure", url: mcpUrl, auth: "oauth" }], state: { url: redis.url } })
      )
      const key = randomBytes(32).toString("hex")
      const own = (name: string) => ({
        AGENTIFY_TOKEN_DIR: join(dir, `team-tokens-${name}`),
        AGENTIFY_STATE_DIR: tempDir("agentify-state-"),
        AGENTIFY_TOKEN_KEY: key
      })
      const operator = own("operator")
      await signIn(operator.AGENTIFY_TOKEN_DIR, { config: teamConfig, env: operator })
      const gateways = await Promise.all(
        ["a", "b"].map((name) => startHttpGateway({ args: ["--config", teamConfig], env: own(name) }))
      )
      const clients = await Promise.all(
        gateways.map(async (g) => {
          const client = new Client({ name: "team", version: "1.0.0" })
          await client.connect(new StreamableHTTPClientTransport(new URL(`${g.base}/mcp`)))
          await until(
            "secure's tools",
            async () => (await client.listTools()).tools.some((t) => t.name === "secure__whoami"),
            20_000
          )
          return client
        })
      )
      try {
        const [first] = await Promise.all(clients.map(whoami))
        // Due at both at once: asked of both at once.
        await sleep(ACCESS_TOKEN_TTL_S * 1000 + 500)
        const renewed = await Promise.all(clients.map(whoami))
        expect(renewed.map((r) => r.sub)).toEqual(["alice", "alice"])
        // One renewal, whose token both carry (two would have spent one refresh token twice, and the
        // server would have revoked the grant).
        expect(renewed[0].jti).toBe(renewed[1].jti)
        expect(renewed[0].jti).not.toBe(first.jti)
        await sleep(ACCESS_TOKEN_TTL_S * 1000 + 500)
        expect((await Promise.all(clients.map(whoami))).map((r) => r.sub)).toEqual(["alice", "alice"])
        for (const g of gateways) expect(g.stderr()).not.toContain("needs auth")
      } finally {
        await Promise.all(clients.map((c) => c.close()))
        await Promise.all(gateways.map((g) => g.close()))
        await redis.close()
      }
    }, 90_000)
  }
)

describe("the client-credentials grant, machine to machine", () => {
  it("gets and renews its own tokens from the configured client, nobody signing in", async () => {
    const machineDir = tempDir()
    const machineConfig = join(machineDir, "gateway.json")
    writeFileSync(
      machineConfig,
      JSON.stringify({
        backends: [
          {
            id: "machine",
            url: mcpUrl,
            auth: {
              type: "oauth",
              grant: "client_credentials",
              clientId: M2M_CLIENT.id,
              clientSecret: M2M_CLIENT.secret,
              scopes: ["mcp:tools"]
            }
          }
        ]
      })
    )
    const client = new Client({ name: "oauth-machine", version: "1.0.0" })
    let stderr = ""
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "--config", machineConfig],
      cwd: machineDir,
      env: cleanEnv({ AGENTIFY_TOKEN_DIR: join(machineDir, "tokens") }) as Record<string, string>,
      stderr: "pipe"
    })
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    await client.connect(transport)
    try {
      const call = async () =>
        JSON.parse(firstText(await client.callTool({ name: "machine__whoami", arguments: {} }))) as { sub: string; jti: string }
      const first = await call()
      expect(first.sub).toBe(M2M_CLIENT.id)
      await sleep(ACCESS_TOKEN_TTL_S * 1000 + 500)
      const second = await call()
      expect(second.jti).not.toBe(first.jti)
      expect(stderr).not.toContain(M2M_CLIENT.secret)
    } finally {
      await client.close()
    }
  }, 30_000)
})
