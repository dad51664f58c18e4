import { randomBytes } from "node:crypto"
import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { BackendTokens, NeedsAuth } from "../../../src/auth/Client.js"
import * as Store from "../../../src/auth/Store.js"
import * as Secrets from "../../../src/observability/Secrets.js"
import { tempDir } from "../../support/stdioClient.js"

const stored = (resource: string, expiresInMs = 3_600_000): Store.Stored => ({
  resource,
  issuer: "http://127.0.0.1:1",
  client: { client_id: "gateway" },
  tokens: { access_token: "at-0123456789abcdef-secret", expires_at: Date.now() + expiresInMs, obtained_at: Date.now() }
})

describe("the token store", () => {
  it("writes a file per backend, 0600 in a 0700 directory, and reads it back", () => {
    const dir = join(tempDir(), "tokens")
    Store.write(dir, "linear", stored("https://mcp.example.com/mcp"))
    expect(statSync(Store.fileOf(dir, "linear")).mode & 0o777).toBe(0o600)
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    expect(Store.read(dir, "linear")?.tokens?.access_token).toBe("at-0123456789abcdef-secret")
    expect(Store.read(dir, "other")).toBeUndefined()
    // Read or written, a token is a secret from then on.
    expect(Secrets.scrub("sent at-0123456789abcdef-secret")).not.toContain("at-0123456789abcdef-secret")
  })

  it("seals each file with AES-256-GCM under the state directory's key (0600), bound to its backend", () => {
    const dir = join(tempDir(), "tokens")
    const env = { AGENTIFY_STATE_DIR: tempDir() }
    Store.write(dir, "linear", stored("https://mcp.example.com/mcp"), env)
    const onDisk = readFileSync(Store.fileOf(dir, "linear"), "utf8")
    expect(JSON.parse(onDisk)).toMatchObject({ sealed: "A256GCM" })
    expect(onDisk).not.toContain("at-0123456789abcdef")
    expect(onDisk).not.toContain("mcp.example.com")
    expect(statSync(join(env.AGENTIFY_STATE_DIR, "token.key")).mode & 0o777).toBe(0o600)
    expect(Store.read(dir, "linear", env)?.tokens?.access_token).toBe("at-0123456789abcdef-secret")
    // Another key, or the same file under another backend's name: it does not open.
    expect(Store.read(dir, "linear", { AGENTIFY_STATE_DIR: tempDir() })).toBeUndefined()
    copyFileSync(Store.fileOf(dir, "linear"), Store.fileOf(dir, "github"))
    expect(Store.read(dir, "github", env)).toBeUndefined()
    // A key given in the environment (hex or base64, 32 bytes) is used instead; a malformed one is refused.
    const key = { AGENTIFY_TOKEN_KEY: randomBytes(32).toString("base64") }
    Store.write(dir, "keyed", stored("https://mcp.example.com/mcp"), key)
    expect(Store.read(dir, "keyed", key)?.issuer).toBe("http://127.0.0.1:1")
    expect(Store.read(dir, "keyed", env)).toBeUndefined()
    expect(() => Store.write(dir, "bad", stored("https://x"), { AGENTIFY_TOKEN_KEY: "short" })).toThrow(/must be 32 bytes/)
  })

  it("keeps each user's tokens of a perUser backend apart, named by a hash, bound to that user, listed by name", () => {
    const dir = join(tempDir(), "tokens")
    const env = { AGENTIFY_STATE_DIR: tempDir() }
    const alice = Store.entryOf("crm", "alice@example.com")
    const bob = Store.entryOf("crm", "bob")
    expect(alice).toMatch(/^crm\/users\/[0-9a-f]{40}$/)
    expect(Store.entryOf("crm")).toBe("crm")
    Store.write(dir, alice, { ...stored("https://crm.example.com/mcp"), subject: "alice@example.com" }, env)
    Store.write(dir, "crm", stored("https://crm.example.com/mcp"), env)
    expect(statSync(join(dir, "crm", "users")).mode & 0o777).toBe(0o700)
    expect(readFileSync(Store.fileOf(dir, alice), "utf8")).not.toContain("alice")
    expect(Store.read(dir, alice, env)?.subject).toBe("alice@example.com")
    // Alice's file under bob's name does not open; nor does a user's file that is not sealed.
    copyFileSync(Store.fileOf(dir, alice), Store.fileOf(dir, bob))
    expect(Store.read(dir, bob, env)).toBeUndefined()
    writeFileSync(Store.fileOf(dir, bob), JSON.stringify({ ...stored("https://crm.example.com/mcp"), subject: "bob" }))
    expect(Store.read(dir, bob, env)).toBeUndefined()
    // The users signed in: by name, the gateway's own sign-in and unreadable files left out.
    expect(Store.usersOf(dir, "crm", env).map((u) => u.subject)).toEqual(["alice@example.com"])
    expect(Store.usersOf(dir, "none", env)).toEqual([])
    expect(Store.describe({ ...stored("x"), tokens: undefined, subject: "alice" }, "crm")).toBe(
      "not signed in (asked at their next call)"
    )
  })

  it("reads a file written before sealing, and seals it when it is next written", () => {
    const dir = join(tempDir(), "tokens")
    const env = { AGENTIFY_STATE_DIR: tempDir() }
    mkdirSync(dir, { recursive: true })
    writeFileSync(Store.fileOf(dir, "old"), JSON.stringify(stored("https://mcp.example.com/mcp")))
    const found = Store.read(dir, "old", env)!
    expect(found.tokens?.access_token).toBe("at-0123456789abcdef-secret")
    Store.write(dir, "old", found, env)
    expect(readFileSync(Store.fileOf(dir, "old"), "utf8")).not.toContain("at-0123456789abcdef")
  })

  it("is where AGENTIFY_TOKEN_DIR says, else under XDG_CONFIG_HOME, else ~/.config", () => {
    expect(Store.directory({ AGENTIFY_TOKEN_DIR: "/srv/tokens" })).toBe("/srv/tokens")
    expect(Store.directory({ XDG_CONFIG_HOME: "/home/u/.cfg" })).toBe("/home/u/.cfg/mcp-agentify/tokens")
    expect(Store.directory({})).toMatch(/\.config\/mcp-agentify\/tokens$/)
  })
})

describe("a backend's tokens", () => {
  it("sends a stored token only to the URL it was issued for", async () => {
    const dir = tempDir()
    Store.write(dir, "docs", stored("https://mcp.example.com/mcp"))
    expect(await new BackendTokens("docs", "https://mcp.example.com/mcp/", undefined, dir).header()).toBe(
      "Bearer at-0123456789abcdef-secret"
    )
    // The configuration now points the backend elsewhere: that server never gets the token.
    expect(await new BackendTokens("docs", "https://evil.example.com/mcp", undefined, dir).header()).toBeUndefined()
    await expect(
      new BackendTokens("docs", "https://evil.example.com/mcp", { type: "oauth" }, dir).header()
    ).rejects.toBeInstanceOf(NeedsAuth)
  })

  it("uses only a user's own tokens on their lane, and says that user must sign in when they have none", async () => {
    const dir = join(tempDir(), "tokens")
    Store.write(dir, "crm", stored("https://crm.example.com/mcp"))
    const bobs = new BackendTokens("crm", "https://crm.example.com/mcp", { type: "oauth", perUser: true }, dir, "bob")
    const refused = await bobs.header().catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(NeedsAuth)
    expect((refused as NeedsAuth).message).toBe("needs auth: bob has not signed in to crm (no token yet)")
    Store.write(dir, Store.entryOf("crm", "bob"), { ...stored("https://crm.example.com/mcp"), subject: "bob" })
    expect(await bobs.header()).toBe("Bearer at-0123456789abcdef-secret")
  })

  it("says who must sign in, and how, when there is no token", async () => {
    const error = await new BackendTokens("linear", "https://mcp.example.com/mcp", { type: "oauth" }, tempDir())
      .header()
      .catch((e: unknown) => e as NeedsAuth)
    expect(error).toBeInstanceOf(NeedsAuth)
    expect((error as NeedsAuth).message).toBe("needs auth: no token yet; run `mcp-agentify auth linear`")
  })

  it("keeps the tokens when the authorization server cannot be asked: a failure, not needs auth", async () => {
    const dir = tempDir()
    const expired: Store.Stored = {
      resource: "https://mcp.example.com/mcp",
      // Nothing listens there: the refresh cannot get an answer.
      issuer: "http://127.0.0.1:1",
      client: { client_id: "gateway" },
      tokens: { access_token: "old-access-0123456789", refresh_token: "refresh-0123456789abcdef", expires_at: Date.now() - 1_000 }
    }
    Store.write(dir, "docs", expired)
    const error = await new BackendTokens("docs", "https://mcp.example.com/mcp", { type: "oauth" }, dir)
      .header()
      .catch((e: unknown) => e as Error)
    expect(error).toBeInstanceOf(Error)
    expect(error).not.toBeInstanceOf(NeedsAuth)
    expect((error as Error).message).toMatch(/^the authorization server could not be asked for a new token/)
    expect(Store.read(dir, "docs")?.tokens?.refresh_token).toBe("refresh-0123456789abcdef")
  })

  it("leaves a backend without auth alone on a 401 that names no resource metadata", async () => {
    const tokens = new BackendTokens("plain", "https://mcp.example.com/mcp", undefined, tempDir())
    expect(await tokens.header()).toBeUndefined()
    expect(await tokens.rejected('Bearer realm="x"')).toBeUndefined()
    await expect(
      tokens.rejected('Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"')
    ).rejects.toBeInstanceOf(NeedsAuth)
  })
})
