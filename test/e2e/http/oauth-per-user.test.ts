/**
 * A team on one gateway, each user acting upstream as themselves (`auth: {type: "oauth", perUser:
 * true}`), against real parts on 127.0.0.1: oidc-provider is both the gateway's authorization
 * server (the users' tokens for the gateway) and the upstream's (each user signs in there in
 * headless Chromium, through URL-mode elicitation of the SDK's client); the upstream MCP server
 * (the SDK's, behind its bearer-auth middleware) says whose token each call came with. The
 * operator signed the gateway in once (`mcp-agentify auth`), which lists the tools.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ElicitRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { once } from "node:events"
import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startAuthServer, type AuthServer } from "../../support/authServer.js"
import { BIN, cleanEnv, ROOT, tempDir } from "../../support/stdioClient.js"
import { postStateless, startHttpGateway, type HttpGateway } from "../../support/httpClient.js"
import * as Store from "../../../src/auth/Store.js"
import { firstText } from "../../support/mcpFixture.js"
import { freePort } from "../../bench/httpClient.js"
import { until } from "../../support/process.js"
import { approve, CHROMIUM } from "../../support/signInPage.js"
import { REDIS_SERVER, startRedis } from "../../support/redis.js"

const SKIP = CHROMIUM === undefined && process.env.CI !== "true"
if (SKIP) process.stderr.write("oauth-per-user.test.ts: no Chromium, so the sign-in tests are skipped\n")

const OAUTH_SERVER = join(ROOT, "test", "fixtures", "oauth-server.mjs")

let auth: AuthServer
let upstream: ChildProcess
let upstreamLog = ""
let gateway: HttpGateway
let dir: string
let config: string
let tokenDir: string
let env: NodeJS.ProcessEnv
let gatewayResource: string
/** The second gateway of a team (the redirects' address in the last test), known to the authorization server. */
let teamResource: string
let teamPort: number
let upstreamUrl: string
const now = () => Math.floor(Date.now() / 1000)

/** Runs `mcp-agentify ARGS` on the test's store (not spawnSync: the authorization server runs in this process). */
const cli = async (
  args: ReadonlyArray<string>,
  onOut?: (out: string) => void,
  as: { readonly config?: string; readonly env?: NodeJS.ProcessEnv } = {}
) => {
  const child = spawn(process.execPath, [BIN, ...args, "--config", as.config ?? config], {
    cwd: dir,
    env: as.env ?? env,
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  child.stdout!.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8")
    onOut?.(out)
  })
  child.stderr!.resume()
  const [code] = await once(child, "exit")
  return { code: code as number, out }
}

beforeAll(async () => {
  if (SKIP) return
  const upstreamPort = await freePort()
  const gatewayPort = await freePort()
  teamPort = await freePort()
  const mcpUrl = `http://127.0.0.1:${upstreamPort}/mcp`
  upstreamUrl = mcpUrl
  gatewayResource = `http://127.0.0.1:${gatewayPort}/mcp`
  teamResource = `http://127.0.0.1:${teamPort}/mcp`
  auth = await startAuthServer({ resources: [mcpUrl, gatewayResource, teamResource], scopes: ["mcp:tools"] })
  upstream = spawn(process.execPath, [OAUTH_SERVER, "--port", String(upstreamPort), "--issuer", auth.issuer, "--log"], {
    stdio: ["ignore", "pipe", "pipe"]
  })
  upstream.stderr!.on("data", (chunk: Buffer) => (upstreamLog += chunk.toString("utf8")))
  await once(upstream.stdout!, "data")
  dir = tempDir()
  tokenDir = join(dir, "tokens")
  config = join(dir, "gateway.json")
  const gatewayConfig = {
    // whoami only reads (the server does not say so): a script may call it without asking.
    backends: [
      { id: "secure", url: mcpUrl, auth: { type: "oauth", perUser: true }, flow: { tools: { whoami: { readOnly: true } } } }
    ],
    httpAuth: { issuer: auth.issuer, audience: gatewayResource, scopes: ["mcp:tools"] }
  }
  writeFileSync(config, JSON.stringify(gatewayConfig))
  env = cleanEnv({ AGENTIFY_TOKEN_DIR: tokenDir })
  // The operator signs the gateway in once: its own sign-in lists the tools.
  let asked: Promise<void> | undefined
  const signedIn = await cli(["auth", "secure", "--no-browser"], (out) => {
    const url = /^(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/m.exec(out)?.[1]
    if (url !== undefined && asked === undefined) asked = approve(url, "operator")
  })
  await asked
  expect(signedIn.code, signedIn.out).toBe(0)
  gateway = await startHttpGateway({
    address: `127.0.0.1:${gatewayPort}`,
    args: ["--http-auth", "oauth", "--debug-port", "0"],
    config: gatewayConfig,
    env: { AGENTIFY_TOKEN_DIR: tokenDir, AGENTIFY_STATE_DIR: env.AGENTIFY_STATE_DIR! }
  })
  // Listed (by the operator's sign-in) before any test: each may run first.
  const lister = await userOf("lister", false)
  await until(
    "secure's tools",
    async () => (await lister.client.listTools()).tools.some((t) => t.name === "secure__whoami"),
    20_000
  )
  await lister.client.close()
}, 60_000)

/** Of the users signed in at `secure`, those named: each test has users of its own. */
const usersNamed = (...subjects: ReadonlyArray<string>) =>
  Store.usersOf(tokenDir, "secure", env).filter((u) => subjects.includes(u.subject))

afterAll(async () => {
  await gateway?.close()
  upstream?.kill()
  await auth?.close()
})

/** `sub`'s MCP client of the gateway (their token for it), signing in upstream as `sub` when asked. */
const userOf = async (sub: string, urlElicitation = true, at = { base: () => gateway.base, audience: () => gatewayResource }) => {
  const token = await auth.sign({ iss: auth.issuer, aud: at.audience(), sub, scope: "mcp:tools", iat: now(), exp: now() + 600 })
  const client = new Client(
    { name: `${sub}-client`, version: "1.0.0" },
    { capabilities: urlElicitation ? { elicitation: { url: {} } } : {} }
  )
  const asked: Array<string> = []
  if (urlElicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      if (request.params.mode !== "url") return { action: "decline" }
      asked.push(request.params.url)
      void approve(request.params.url, sub)
      return { action: "accept" }
    })
  }
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${at.base()}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } }
    })
  )
  const whoami = async () =>
    (
      JSON.parse(firstText(await client.callTool({ name: "secure__whoami", arguments: {} }, undefined, { timeout: 60_000 }))) as {
        sub: string
      }
    ).sub
  return { client, asked, whoami }
}

describe.skipIf(SKIP)("each user acts upstream as themselves (perUser)", () => {
  it("asks alice and bob to sign in at their first call; the upstream sees alice's token on alice's calls and bob's on bob's", async () => {
    const logFrom = upstreamLog.length
    const alice = await userOf("alice")
    const bob = await userOf("bob")
    try {
      await until(
        "secure's tools",
        async () => (await alice.client.listTools()).tools.some((t) => t.name === "secure__whoami"),
        20_000
      )
      expect(await alice.whoami()).toBe("alice")
      expect(alice.asked).toHaveLength(1)
      expect(new URL(alice.asked[0]!).searchParams.get("redirect_uri")).toBe(`${gateway.base}/oauth/callback`)
      expect(await bob.whoami()).toBe("bob")
      expect(bob.asked).toHaveLength(1)
      // Signed in: nobody is asked again, and each call goes with its own user's token.
      expect(await alice.whoami()).toBe("alice")
      expect(await bob.whoami()).toBe("bob")
      // A script's calls are alice's too.
      const script = await alice.client.callTool({
        name: "agentify_run_code",
        arguments: { code: "return (await tools.secure.whoami({})).sub" }
      })
      expect(firstText(script)).toContain("alice")
      expect([alice.asked.length, bob.asked.length]).toEqual([1, 1])
      const calls = upstreamLog
        .slice(logFrom)
        .split("\n")
        .filter((line) => line.startsWith("upstream: tools/call whoami"))
      expect(calls).toEqual([
        "upstream: tools/call whoami with alice's token",
        "upstream: tools/call whoami with bob's token",
        "upstream: tools/call whoami with alice's token",
        "upstream: tools/call whoami with bob's token",
        "upstream: tools/call whoami with alice's token"
      ])
      // Each user's tokens sealed apart, named by no file; check and the debug UI say who, never a token.
      const users = usersNamed("alice", "bob")
      expect(users.map((u) => u.subject)).toEqual(["alice", "bob"])
      const files = readdirSync(join(tokenDir, "secure", "users"))
      expect(files).toHaveLength(Store.usersOf(tokenDir, "secure", env).length)
      for (const file of files) {
        // Its sealed parts are base64, which may spell "bob" by chance: the rest names nobody.
        const raw = readFileSync(join(tokenDir, "secure", "users", file), "utf8").replace(/[A-Za-z0-9+/=_-]{24,}/g, "")
        expect(raw).not.toMatch(/alice|bob/)
        for (const user of users) expect(raw).not.toContain(user.tokens!.access_token)
      }
      const port = await until("the debug UI", () => /debug UI at http:\/\/127\.0\.0\.1:(\d+)\//.exec(gateway.stderr())?.[1])
      const backends = await (await fetch(`http://127.0.0.1:${port}/api/backends`)).text()
      const shown = (JSON.parse(backends) as Array<{ id: string; users: Array<{ subject: string; signIn: string }> }>)
        .find((b) => b.id === "secure")!
        .users.filter((u) => u.subject === "alice" || u.subject === "bob")
      expect(shown.map((u) => u.subject)).toEqual(["alice", "bob"])
      expect(shown[0]!.signIn).toMatch(new RegExp(`^signed in at ${auth.issuer} for .*mcp:tools.*, renewable$`))
      const checked = await cli(["check"])
      expect(checked.out).toMatch(/secure: signed in at .*\n(?: {4}.*\n)*? {4}alice: signed in at .*\n {4}bob: signed in at /)
      for (const user of users) {
        expect(backends + checked.out).not.toContain(user.tokens!.access_token)
        expect(backends + checked.out).not.toContain(user.tokens!.refresh_token)
      }
    } finally {
      await alice.client.close()
      await bob.client.close()
    }
  }, 120_000)

  it("forgets and revokes one user's grant with `auth --revoke --subject`: heidi is asked again, grace is not", async () => {
    const grace = await userOf("grace")
    const heidi = await userOf("heidi")
    try {
      // Both signed in (each asked once): one grant to revoke, one to keep.
      expect(await grace.whoami()).toBe("grace")
      expect(await heidi.whoami()).toBe("heidi")
      const revoked = await cli(["auth", "--revoke", "secure", "--subject", "heidi"])
      expect(revoked.code, revoked.out).toBe(0)
      expect(revoked.out).toBe(`Revoked heidi's tokens for secure at ${auth.issuer} and forgot them.\n`)
      expect(usersNamed("grace", "heidi").map((u) => u.subject)).toEqual(["grace"])
      expect(await heidi.whoami()).toBe("heidi")
      expect(heidi.asked).toHaveLength(2)
      expect(await grace.whoami()).toBe("grace")
      expect(grace.asked).toHaveLength(1)
    } finally {
      await grace.client.close()
      await heidi.client.close()
    }
  }, 120_000)

  it("reads and lists at the backend's own endpoint (/servers/secure/mcp) through the user's own lane: ivan's token, not the gateway's", async () => {
    // Signed in upstream as himself (at /mcp), then a client of the backend's endpoint.
    const signIn = await userOf("ivan")
    try {
      expect(await signIn.whoami()).toBe("ivan")
    } finally {
      await signIn.client.close()
    }
    const logFrom = upstreamLog.length
    const ivan = await userOf("ivan", true, { base: () => `${gateway.base}/servers/secure`, audience: () => gatewayResource })
    try {
      const read = await ivan.client.readResource({ uri: "whoami://me" })
      expect(JSON.parse((read.contents[0] as { text: string }).text)).toEqual({ sub: "ivan" })
      expect((await ivan.client.listTools()).tools.map((t) => t.name)).toContain("whoami")
      expect((await ivan.client.listResources()).resources.map((r) => r.uri)).toEqual(["whoami://me"])
      const upstream = upstreamLog
        .slice(logFrom)
        .split("\n")
        .filter((line) => /^upstream: (resources\/read|tools\/list|resources\/list) /.test(line))
      // Each of them reached the upstream, and none with another's token (the lane may list on its own too).
      expect(upstream).toEqual(
        expect.arrayContaining([
          "upstream: resources/read with ivan's token",
          "upstream: tools/list with ivan's token",
          "upstream: resources/list with ivan's token"
        ])
      )
      expect(upstream.filter((line) => !line.endsWith(" with ivan's token"))).toEqual([])
    } finally {
      await ivan.client.close()
    }
  }, 120_000)

  it("gives a user whose client has no URL elicitation -32042 with the page; once carol signed in there, her call goes through", async () => {
    const carol = await userOf("carol", false)
    try {
      const refused = await carol.client.callTool({ name: "secure__whoami", arguments: {} }).then(
        () => undefined,
        (error: unknown) => error
      )
      expect(refused).toBeInstanceOf(McpError)
      expect((refused as McpError).code).toBe(-32042)
      expect((refused as McpError).message).toContain("secure acts as each of its users: sign in to it as yourself (carol).")
      const page = ((refused as McpError).data as { elicitations: Array<{ url: string }> }).elicitations[0]!.url
      await approve(page, "carol")
      await until("carol's token", () => Store.usersOf(tokenDir, "secure", env).some((u) => u.subject === "carol"), 20_000)
      expect(await carol.whoami()).toBe("carol")
    } finally {
      await carol.client.close()
    }
  }, 120_000)
})

describe.skipIf(SKIP)("a 2026-07-28 client, with no session", () => {
  it("is asked to sign in by the revision's input request (an input_required round), and its retry goes on as frank", async () => {
    const token = await auth.sign({
      iss: auth.issuer,
      aud: gatewayResource,
      sub: "frank",
      scope: "mcp:tools",
      iat: now(),
      exp: now() + 600
    })
    const call = async (extra: Record<string, unknown>) =>
      (
        await postStateless(
          `${gateway.base}/mcp`,
          "tools/call",
          { name: "secure__whoami", arguments: {}, ...extra },
          { elicitation: { url: {} } },
          { authorization: `Bearer ${token}` }
        )
      ).body
    const first = await call({})
    expect(first.result?.resultType).toBe("input_required")
    const [key, question] = Object.entries(first.result.inputRequests)[0] as [string, { method: string; params: any }]
    expect(question.method).toBe("elicitation/create")
    expect(question.params.mode).toBe("url")
    expect(question.params.message).toContain("sign in to it as yourself (frank)")
    await approve(question.params.url, "frank")
    const done = await call({ requestState: first.result.requestState, inputResponses: { [key]: { action: "accept" } } })
    expect(JSON.parse(done.result.content[0].text).sub).toBe("frank")
  }, 120_000)
})

describe.skipIf(SKIP || REDIS_SERVER === undefined)("a team of gateways sharing state", () => {
  it("hands a user's sign-in redirect that reaches another gateway to the one that waits for it, and keeps every token in the store, sealed: signed in once, known at every gateway; revoked once, gone from every gateway", async () => {
    const redis = await startRedis()
    // Both know the team by the second gateway's address: every redirect comes back there.
    const teamConfig = {
      backends: [
        {
          id: "secure",
          url: upstreamUrl,
          auth: { type: "oauth", perUser: true },
          flow: { tools: { whoami: { readOnly: true } } }
        }
      ],
      httpAuth: { issuer: auth.issuer, audience: teamResource, scopes: ["mcp:tools"] },
      state: { url: redis.url }
    }
    const teamFile = join(dir, "team.json")
    writeFileSync(teamFile, JSON.stringify(teamConfig))
    // Each gateway (and the operator's own machine) with directories of its own; one key seals every token.
    const key = randomBytes(32).toString("hex")
    const own = (name: string) => ({
      AGENTIFY_TOKEN_DIR: join(dir, `tokens-${name}`),
      AGENTIFY_STATE_DIR: tempDir("agentify-state-"),
      AGENTIFY_TOKEN_KEY: key
    })
    const [atFirst, atSecond, atOperator] = [own("first"), own("second"), own("operator")]
    const [first, second] = await Promise.all([
      startHttpGateway({ args: ["--http-auth", "oauth"], config: teamConfig, env: atFirst }),
      startHttpGateway({ address: `127.0.0.1:${teamPort}`, args: ["--http-auth", "oauth"], config: teamConfig, env: atSecond })
    ])
    const operator = { config: teamFile, env: { ...env, ...atOperator } }
    const usersAt = (at: { AGENTIFY_TOKEN_DIR: string }) =>
      Store.usersOf(at.AGENTIFY_TOKEN_DIR, "secure", { ...env, AGENTIFY_TOKEN_KEY: key }).map((u) => u.subject)
    try {
      // Signed in once, by the operator on a machine of their own: both gateways list its tools.
      let asked: Promise<void> | undefined
      const signedIn = await cli(
        ["auth", "secure", "--no-browser"],
        (out) => {
          const url = /^(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/m.exec(out)?.[1]
          if (url !== undefined && asked === undefined) asked = approve(url, "operator")
        },
        operator
      )
      await asked
      expect(signedIn.code, signedIn.out).toBe(0)
      // Erin's session, and so her call and its sign-in, are at the first gateway.
      /** Erin's client of gateway `g`, once it lists the backend's tools (its own sign-in is the operator's). */
      const erinAt = async (g: HttpGateway, which: string) => {
        const user = await userOf("erin", true, { base: () => g.base, audience: () => teamResource })
        await until(
          `secure's tools at the ${which}`,
          async () => (await user.client.listTools()).tools.some((t) => t.name === "secure__whoami"),
          20_000
        )
        return user
      }
      const erin = await erinAt(first, "first")
      expect(await erin.whoami()).toBe("erin")
      expect(erin.asked).toHaveLength(1)
      expect(new URL(erin.asked[0]!).searchParams.get("redirect_uri")).toBe(`${second.base}/oauth/callback`)
      await erin.client.close()
      // Her next session is at the second gateway: her tokens are there already, she is not asked again.
      const again = await erinAt(second, "second")
      expect(await again.whoami()).toBe("erin")
      expect(again.asked).toHaveLength(0)
      await again.client.close()
      expect(usersAt(atFirst)).toEqual(["erin"])
      await until("erin's tokens at the second", () => usersAt(atSecond).includes("erin"))
      // The store holds them sealed: neither a token nor whose they are.
      const tokens = Store.usersOf(atSecond.AGENTIFY_TOKEN_DIR, "secure", { ...env, AGENTIFY_TOKEN_KEY: key })[0]!.tokens!
      const held = spawnSync("redis-cli", ["-p", String(redis.port), "hgetall", "mcp-agentify:files:tokens"], {
        encoding: "utf8"
      }).stdout
      expect(held).toContain("secure/users/")
      expect(held).not.toContain(tokens.access_token)
      expect(held).not.toContain(tokens.refresh_token)
      expect(held).not.toContain("erin")
      // Revoked once, from the operator's machine: forgotten by every gateway.
      const revoked = await cli(["auth", "--revoke", "secure", "--subject", "erin"], undefined, operator)
      expect(revoked.out).toBe(`Revoked erin's tokens for secure at ${auth.issuer} and forgot them.\n`)
      await until("erin forgotten at both", () => usersAt(atFirst).length === 0 && usersAt(atSecond).length === 0, 20_000)
    } finally {
      await Promise.all([first.close(), second.close()])
      await redis.close()
    }
  }, 180_000)
})
