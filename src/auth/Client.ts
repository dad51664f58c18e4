/**
 * The gateway as an OAuth client of a remote backend, as the MCP authorization specification
 * describes it: the backend's protected-resource metadata (RFC 9728, from its 401's
 * `WWW-Authenticate` or the well-known URL) names its authorization server; the server's metadata
 * (RFC 8414, else OpenID discovery) says how to ask. Tokens are always asked for the backend's URL
 * as `resource` (RFC 8707), refreshed a minute before they expire and after a 401, and kept in the
 * token store (see Store).
 *
 * `openid-client` does the protocol (discovery, registration, PKCE, the `state` and issuer checks,
 * the grants); written here is what MCP adds: the resource metadata, which client identity to use
 * (a configured one, a Client ID Metadata Document, dynamic registration), and when to ask.
 */
import * as oauth from "openid-client"
import type { OAuthSettings } from "../config/Config.js"
import * as Secrets from "../observability/Secrets.js"
import * as Store from "./Store.js"
import { alone, type MayRenew } from "./Renewals.js"
import { nobody, type Told } from "../store/WrittenFiles.js"
import { createHash } from "node:crypto"
import { field, isObject, messageOf, stringField } from "../json/Json.js"

/** The backend cannot be called until someone signs in (`mcp-agentify auth <id>`). */
export class NeedsAuth extends Error {
  /** What the channel tells apart from an authorization server that could not be asked. */
  readonly needsAuth = true

  constructor(
    readonly backendId: string,
    readonly reason: string,
    /** A user of a `perUser` backend: they sign in when a call of theirs reaches it (see SignIns). */
    readonly subject?: string | undefined
  ) {
    super(
      subject === undefined
        ? `needs auth: ${reason}; run \`mcp-agentify auth ${backendId}\``
        : `needs auth: ${subject} has not signed in to ${backendId} (${reason})`
    )
  }
}

/**
 * Refresh this long before the access token expires, so no call carries one about to lapse: a
 * minute, or a tenth of a short-lived token's life (a 5-minute token is not renewed every call).
 */
const REFRESH_MARGIN_MS = 60_000
const marginOf = (tokens: Store.StoredTokens): number =>
  tokens.expires_at === undefined || tokens.obtained_at === undefined
    ? REFRESH_MARGIN_MS
    : Math.min(REFRESH_MARGIN_MS, (tokens.expires_at - tokens.obtained_at) / 10)
const TIMEOUT_MS = 10_000
/** How long a gateway waits for the tokens another of its team renews before it renews them itself. */
const RENEWED_ELSEWHERE_MS = 10_000

/** Tokens good for a call now (not about to lapse). */
const fresh = (tokens: Store.StoredTokens | undefined): tokens is Store.StoredTokens =>
  tokens !== undefined && (tokens.expires_at === undefined || tokens.expires_at - marginOf(tokens) > Date.now())

export const isLoopbackUrl = (url: URL) => ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)

/** openid-client refuses plain http: allowed for a server on this machine only (tests, local servers). */
const execute = (url: URL) => (url.protocol === "http:" && isLoopbackUrl(url) ? [oauth.allowInsecureRequests] : [])

/** `resource_metadata="..."` of a `WWW-Authenticate: Bearer` challenge. */
export const resourceMetadataOf = (challenge: string | null | undefined): string | undefined =>
  /resource_metadata="([^"]+)"/i.exec(challenge ?? "")?.[1]

/** A URL without its fragment and trailing slash, to compare resources (RFC 8707 canonical form). */
const canonical = (url: string) => {
  const u = new URL(url)
  u.hash = ""
  return u.href.replace(/\/$/, "")
}

const getJson = async (url: string): Promise<Record<string, unknown>> => {
  const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS), redirect: "error" })
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`)
  const body: unknown = await response.json()
  if (!isObject(body)) throw new Error(`${url}: not a JSON object`)
  return body
}

/**
 * Whether `resource` (a protected resource's identifier) covers `url`: the same URL, or a path above
 * it on the same origin (a server may protect its whole origin: RFC 9728 section 3.3, as the MCP
 * SDKs read it).
 */
export const covers = (resource: string, url: string): boolean => {
  try {
    const r = canonical(resource)
    const u = canonical(url)
    return u === r || (u.startsWith(`${r}/`) && new URL(r).origin === new URL(u).origin)
  } catch {
    return false
  }
}

export interface ProtectedResource {
  readonly resource: string
  readonly issuer: string
  readonly scopesSupported: ReadonlyArray<string>
}

/**
 * Which authorization server protects `resourceUrl`: from the metadata URL its 401 named, else the
 * well-known URL with the resource's path, else without it. The document must name this resource.
 */
export const protectedResource = async (resourceUrl: string, challenge?: string | null): Promise<ProtectedResource> => {
  const url = new URL(resourceUrl)
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "")
  const candidates = [
    resourceMetadataOf(challenge),
    `${url.origin}/.well-known/oauth-protected-resource${path}`,
    `${url.origin}/.well-known/oauth-protected-resource`
  ].filter((c): c is string => c !== undefined)
  const tried: Array<string> = []
  for (const candidate of candidates) {
    try {
      const metadata = await getJson(candidate)
      const servers = metadata.authorization_servers
      if (typeof metadata.resource !== "string" || !covers(metadata.resource, resourceUrl)) {
        tried.push(`${candidate} describes ${String(metadata.resource)}, not ${resourceUrl}`)
        continue
      }
      if (!Array.isArray(servers) || typeof servers[0] !== "string") {
        tried.push(`${candidate} names no authorization server`)
        continue
      }
      const scopes = Array.isArray(metadata.scopes_supported)
        ? metadata.scopes_supported.filter((s): s is string => typeof s === "string")
        : []
      return { resource: metadata.resource, issuer: servers[0], scopesSupported: scopes }
    } catch (error) {
      tried.push(messageOf(error))
    }
  }
  throw new Error(`no protected-resource metadata for ${Secrets.displayUrl(resourceUrl)} (${tried.join("; ")})`)
}

/** How openid-client finds a server's metadata: RFC 8414's well-known URL, or OpenID's. */
export const discoveryOptions = (url: URL, algorithm: "oauth2" | "oidc") => ({
  algorithm,
  execute: execute(url),
  timeout: TIMEOUT_MS / 1000
})

/**
 * `client_secret_basic` as most servers read it: the id and secret percent-encoded only where they
 * must be (`encodeURIComponent`). openid-client's encodes every character but letters and digits
 * (`-` as `%2D`), as RFC 6749 allows, and servers that do not decode (the MCP conformance suite's
 * among them) then refuse an id with a hyphen.
 */
const secretBasic =
  (secret: string): oauth.ClientAuth =>
  (_server, client, _body, headers) => {
    headers.set("authorization", `Basic ${btoa(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(secret)}`)}`)
  }

/**
 * The authorization server's configuration for a client: RFC 8414 metadata, else OpenID's. A
 * client with a secret authenticates as it was registered to, else as the server says it accepts
 * (`client_secret_basic` when it does or says nothing, RFC 8414; else `client_secret_post`).
 */
export const configuration = async (issuer: string, client: Store.Stored["client"]): Promise<oauth.Configuration> => {
  const url = new URL(issuer)
  let found: oauth.Configuration
  try {
    found = await oauth.discovery(url, client.client_id, undefined, oauth.None(), discoveryOptions(url, "oauth2"))
  } catch (first) {
    try {
      found = await oauth.discovery(url, client.client_id, undefined, oauth.None(), discoveryOptions(url, "oidc"))
    } catch {
      // The RFC 8414 answer says what went wrong (the OpenID one is usually a 404).
      throw new Error(`the metadata of ${issuer} cannot be used: ${oauthMessage(first)}`, { cause: first })
    }
  }
  const secret = client.client_secret
  if (secret === undefined) return found
  const metadata = found.serverMetadata()
  const supported = metadata.token_endpoint_auth_methods_supported
  const method =
    client.token_endpoint_auth_method ??
    (supported === undefined || supported.includes("client_secret_basic") || !supported.includes("client_secret_post")
      ? "client_secret_basic"
      : "client_secret_post")
  const config = new oauth.Configuration(
    metadata,
    client.client_id,
    secret,
    method === "client_secret_post" ? oauth.ClientSecretPost(secret) : secretBasic(secret)
  )
  if (url.protocol === "http:" && isLoopbackUrl(url)) oauth.allowInsecureRequests(config)
  return config
}

export const toStored = (response: oauth.TokenEndpointResponse, previous?: Store.StoredTokens): Store.StoredTokens => ({
  access_token: response.access_token,
  token_type: response.token_type,
  // A refresh may not rotate the refresh token: keep the one we had.
  refresh_token: response.refresh_token ?? previous?.refresh_token,
  expires_at: typeof response.expires_in === "number" ? Date.now() + response.expires_in * 1000 : undefined,
  obtained_at: Date.now(),
  scope: response.scope ?? previous?.scope
})

/**
 * A backend's access token, when a request needs one: the stored one while it is good, else
 * refreshed (or, for `grant: "client_credentials"`, asked for afresh); `NeedsAuth` when only a
 * person signing in can give one. One refresh at a time, shared by the requests waiting for it.
 */
/** What a backend's tokens tell and ask of the gateway's team, if it has one (see store/WrittenFiles, Renewals). */
export interface TokenFiles {
  readonly told: Told
  readonly mayRenew: MayRenew
}

/** No team: nobody to tell, every renewal this process's. */
export const ALONE: TokenFiles = { told: nobody, mayRenew: alone }

export class BackendTokens {
  private pending: Promise<string> | undefined

  /**
   * `settings` undefined: a remote backend without `auth`. It gets a token only if one was stored
   * for it (someone ran `mcp-agentify auth`), and a 401 naming its resource metadata makes it
   * "needs auth" rather than failed.
   */
  /** Where its tokens are in the store (see Store `entryOf`). */
  private readonly entry: string

  /** `subject`: a user's own tokens for a `perUser` backend, never anyone else's. */
  constructor(
    readonly backendId: string,
    readonly resourceUrl: string,
    readonly settings: OAuthSettings | undefined,
    readonly dir: string = Store.directory(),
    readonly subject?: string | undefined,
    /** Who hears of its writes, and whether it renews now (a team's gateways take turns). */
    private readonly files: TokenFiles = ALONE
  ) {
    this.entry = Store.entryOf(backendId, subject)
  }

  /** `Bearer <token>` for the next request; undefined when it takes none. */
  header(): Promise<string | undefined> {
    let stored = this.usable()
    if (fresh(stored?.tokens)) return Promise.resolve(`Bearer ${stored.tokens.access_token}`)
    // Due for renewal: another process on this store (a second gateway, `auth`) may have renewed
    // already, and servers rotate refresh tokens and revoke a grant whose old one is used again.
    stored = this.usable(true)
    if (fresh(stored?.tokens)) return Promise.resolve(`Bearer ${stored.tokens.access_token}`)
    if (this.settings === undefined && stored?.tokens === undefined) return Promise.resolve(undefined)
    return this.renew(stored, undefined)
  }

  /** The backend answered 401 with `challenge`: a new header, undefined (not an OAuth refusal), or `NeedsAuth`. */
  rejected(challenge: string | null): Promise<string | undefined> {
    const stored = this.usable(true)
    if (this.settings === undefined && stored?.tokens === undefined) {
      return resourceMetadataOf(challenge) === undefined
        ? Promise.resolve(undefined)
        : Promise.reject(new NeedsAuth(this.backendId, "the server requires OAuth"))
    }
    return this.renew(stored, challenge)
  }

  /**
   * The store's file as last read or written, and when it was written: read again only when it
   * changed (a sign-in of this process or another wrote it), not on every request.
   */
  private cached: { readonly stored: Store.Stored | undefined; readonly written: number | undefined } | undefined

  /**
   * What is stored, when it is for this backend's URL: tokens for another resource are never sent.
   * `fresh`: read the file again (after a 401: `mcp-agentify auth` may have written it since).
   */
  private usable(fresh = false): Store.Stored | undefined {
    const written = Store.writtenAt(this.dir, this.entry)
    if (fresh || this.cached === undefined || this.cached.written !== written) {
      this.cached = { stored: Store.read(this.dir, this.entry), written }
    }
    const stored = this.cached.stored
    return stored !== undefined && covers(stored.resource, this.resourceUrl) ? stored : undefined
  }

  private save(stored: Store.Stored): void {
    Store.write(this.dir, this.entry, stored, process.env, this.files.told)
    this.cached = { stored, written: Store.writtenAt(this.dir, this.entry) }
  }

  private renew(stored: Store.Stored | undefined, challenge: string | null | undefined): Promise<string> {
    if (this.pending === undefined) {
      this.pending = this.obtain(stored, challenge).finally(() => (this.pending = undefined))
    }
    return this.pending
  }

  /** The tokens another process renewed from `before`, once they are on disk (undefined: none came in time). */
  private async renewedElsewhere(before: Store.StoredTokens): Promise<Store.StoredTokens | undefined> {
    const deadline = Date.now() + RENEWED_ELSEWHERE_MS
    while (Date.now() < deadline) {
      const now = this.usable(true)?.tokens
      if (now !== undefined && now.access_token !== before.access_token && fresh(now)) return now
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    return undefined
  }

  private async obtain(stored: Store.Stored | undefined, challenge: string | null | undefined, again = false): Promise<string> {
    const scope = this.settings?.scopes?.join(" ")
    if (stored?.tokens?.refresh_token !== undefined) {
      // Another gateway of the team renews these now: its tokens reach this disk in a moment.
      const turn = `${this.entry}:${createHash("sha256").update(stored.tokens.refresh_token).digest("hex").slice(0, 16)}`
      if (!(await this.files.mayRenew(turn))) {
        const theirs = await this.renewedElsewhere(stored.tokens)
        if (theirs !== undefined) return `Bearer ${theirs.access_token}`
      }
      try {
        const config = await configuration(stored.issuer, stored.client)
        const refreshed = await oauth.refreshTokenGrant(config, stored.tokens.refresh_token, { resource: stored.resource })
        const tokens = toStored(refreshed, stored.tokens)
        this.save({ ...stored, tokens })
        return `Bearer ${tokens.access_token}`
      } catch (error) {
        // Not an answer of the server (unreachable, a timeout): the tokens may still be good.
        if (!(error instanceof oauth.ResponseBodyError)) {
          throw new Error(`the authorization server could not be asked for a new token: ${oauthMessage(error)}`, { cause: error })
        }
        // Another process using this store (a second gateway, `mcp-agentify auth`) may have
        // refreshed first: servers rotate refresh tokens, so ours is spent but the file has new ones.
        const onDisk = this.usable(true)
        const theirs = onDisk?.tokens
        if (theirs !== undefined && theirs.refresh_token !== stored.tokens.refresh_token) {
          if (theirs.expires_at === undefined || theirs.expires_at - marginOf(theirs) > Date.now())
            return `Bearer ${theirs.access_token}`
          if (theirs.refresh_token !== undefined && !again) return this.obtain(onDisk, challenge, true)
        }
        // Refused (revoked, expired): the tokens are useless now; a person must sign in again.
        const { tokens: _refused, ...rest } = stored
        this.save(rest)
        if (this.settings?.grant !== "client_credentials") {
          throw new NeedsAuth(
            this.backendId,
            `the authorization server refused the refresh (${oauthMessage(error)})`,
            this.subject
          )
        }
      }
    }
    if (this.settings?.grant === "client_credentials") {
      if (this.settings.clientId === undefined || this.settings.clientSecret === undefined) {
        throw new NeedsAuth(this.backendId, 'grant "client_credentials" needs clientId and clientSecret in auth')
      }
      const found = await protectedResource(this.resourceUrl, challenge)
      const client = { client_id: this.settings.clientId, client_secret: this.settings.clientSecret }
      const config = await configuration(found.issuer, client)
      const response = await oauth.clientCredentialsGrant(config, {
        resource: found.resource,
        ...(scope === undefined ? {} : { scope })
      })
      const tokens = toStored(response)
      this.save({ resource: found.resource, issuer: found.issuer, client, tokens })
      return `Bearer ${tokens.access_token}`
    }
    throw new NeedsAuth(
      this.backendId,
      stored?.tokens === undefined ? "no token yet" : "the access token was refused",
      this.subject
    )
  }
}

/** An OAuth error's words (`invalid_grant: grant request is invalid`), never a token. */
export const oauthMessage = (error: unknown): string => {
  const code = stringField(error, "error")
  const description = stringField(error, "error_description")
  const text =
    code !== undefined
      ? `${code}${description !== undefined ? `: ${description}` : ""}`
      : String(field(error, "message") ?? error)
  return Secrets.scrub(text.slice(0, 300))
}
