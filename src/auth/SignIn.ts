/**
 * `mcp-agentify auth <backendId>`: a person signs the gateway in to a remote backend, once. The
 * authorization code flow of OAuth 2.1 with PKCE (S256) and `state`, the code received on a
 * loopback redirect (RFC 8252), the issuer checked (RFC 9207, by openid-client), the backend's URL
 * as `resource`; the tokens go to the token store, where the running gateway finds them.
 *
 * Which client the gateway is to the authorization server: the configured `clientId`, else its
 * Client ID Metadata Document (`clientMetadataUrl`) when the server accepts one, else a client
 * registered now (RFC 7591), since the loopback port changes with every sign-in. The registration
 * is the one request written by hand (see `register`); openid-client does the rest.
 */
import type { Told } from "../store/WrittenFiles.js"
import * as http from "node:http"
import { spawn } from "node:child_process"
import * as oauth from "openid-client"
import type { OAuthSettings } from "../config/Config.js"
import * as Secrets from "../observability/Secrets.js"
import { configuration, oauthMessage, protectedResource, toStored } from "./Client.js"
import * as Store from "./Store.js"
import { stringField } from "../json/Json.js"

/** The port a listening server was given. */
const portOf = (server: http.Server): number => {
  const address = server.address()
  return typeof address === "object" && address !== null ? address.port : 0
}

export interface SignInOptions {
  /** Where to keep the tokens (the token store's directory). */
  readonly dir: string
  /** Who hears of the tokens written (a team's mirror: see store/WrittenFiles); none: nobody. */
  readonly told?: Told | undefined
  /** Says what the person must do (the URL to open). */
  readonly print: (line: string) => void
  /** Opens the URL in a browser, when there is one. */
  readonly openBrowser: boolean
  /** How long to wait for the person (default 5 minutes). */
  readonly timeoutMs?: number
}

const DEFAULT_TIMEOUT_MS = 5 * 60_000

/**
 * The backend's 401 challenge to a client without a token: to `initialize`, else (a server that lets
 * anyone start a session) to the `tools/list` that follows it, which names the scope a client needs
 * to use it. The probe's session is ended after.
 */
const challengeOf = async (url: string): Promise<string | null> => {
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
      redirect: "manual"
    })
  const challenged = async (response: Response) => {
    await response.body?.cancel().catch(() => {})
    return response.status === 401 ? response.headers.get("www-authenticate") : null
  }
  try {
    const initialize = await post({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "mcp-agentify", version: "0" } }
    })
    const first = await challenged(initialize)
    if (first !== null || !initialize.ok) return first
    const session = initialize.headers.get("mcp-session-id")
    const headers: Record<string, string> = {
      "mcp-protocol-version": "2025-11-25",
      ...(session === null ? {} : { "mcp-session-id": session })
    }
    await challenged(await post({ jsonrpc: "2.0", method: "notifications/initialized" }, headers))
    const listed = await challenged(await post({ jsonrpc: "2.0", id: 2, method: "tools/list" }, headers))
    if (session !== null) {
      await fetch(url, { method: "DELETE", headers, signal: AbortSignal.timeout(2_000) })
        .then((r) => r.body?.cancel())
        .catch(() => {})
    }
    return listed
  } catch {
    return null
  }
}

/** Opens `url` with the desktop's opener; quietly nothing where there is none. */
const open = (url: string) => {
  const [command, args] =
    process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
        ? ["cmd", ["/c", "start", "", url]]
        : ["xdg-open", [url]]
  try {
    const child = spawn(command, args as Array<string>, { stdio: "ignore", detached: true })
    child.on("error", () => {})
    child.unref()
  } catch {
    // No opener: the printed URL is the way.
  }
}

const page = (title: string, text: string) =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title><p>${text.replace(/[<>&]/g, (c) => `&#${c.charCodeAt(0)};`)}</p>`

/**
 * Dynamic client registration (RFC 7591). By hand, not openid-client's: servers in the wild (the
 * MCP conformance suite's among them) issue a `client_secret` without the `client_secret_expires_at`
 * the RFC asks for, which openid-client rejects; a client_id is all that is needed.
 */
const register = async (endpoint: string, metadata: Record<string, unknown>): Promise<Store.Stored["client"]> => {
  const response = await fetch(endpoint, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(metadata),
    signal: AbortSignal.timeout(10_000),
    redirect: "error"
  })
  const body: unknown = await response.json().catch(() => ({}))
  const clientId = stringField(body, "client_id")
  const refusal = stringField(body, "error")
  if (!response.ok || clientId === undefined) {
    throw new Error(
      `the registration at ${endpoint} was refused: HTTP ${response.status}${refusal !== undefined ? ` ${refusal}` : ""}`
    )
  }
  const secret = stringField(body, "client_secret")
  const method = stringField(body, "token_endpoint_auth_method")
  return {
    client_id: clientId,
    ...(secret !== undefined ? { client_secret: secret } : {}),
    ...(method !== undefined ? { token_endpoint_auth_method: method } : {})
  }
}

/** A loopback listener for the authorization server's redirect (RFC 8252): its URI, and the first callback. */
export interface Loopback {
  readonly redirectUri: string
  readonly returned: Promise<URL>
  readonly close: () => void
}

/** Listens on 127.0.0.1, a port of its own, for one redirect to `/callback`, answering `done` in the browser. */
export const loopback = async (what: string): Promise<Loopback> => {
  let deliver: (url: URL) => void = () => {}
  const returned = new Promise<URL>((resolve) => (deliver = resolve))
  const server = http.createServer((request, response) => {
    // The redirect URI as registered (its port included): the token request must repeat it exactly.
    const url = new URL(request.url ?? "/", `http://127.0.0.1:${portOf(server)}`)
    if (url.pathname !== "/callback") {
      response.writeHead(404).end()
      return
    }
    const failed = url.searchParams.get("error")
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" })
    response.end(
      failed === null
        ? page("Signed in", `mcp-agentify is signed in to ${what}. You can close this tab.`)
        : page("Not signed in", `The authorization server said: ${failed}. You can close this tab.`)
    )
    deliver(url)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    redirectUri: `http://127.0.0.1:${portOf(server)}/callback`,
    returned,
    close: () => {
      server.closeAllConnections()
      server.close()
    }
  }
}

/** A sign-in made ready: the page to open, and what turns the redirect that comes back into stored tokens. */
export interface Prepared {
  readonly url: URL
  readonly issuer: string
  /** The flow's `state`: the redirect that comes back carries it. */
  readonly state: string
  readonly finish: (returned: URL) => Promise<Store.Stored>
}

/**
 * Prepares the authorization code flow for `backend` with `redirectUri`: its authorization server
 * found, the gateway registered there if it must be, PKCE and `state` made. `scopes`: the scopes
 * to ask for (a step-up's), else the configured ones, else what its 401 asks, else all it supports.
 */
export const prepare = async (
  backend: { readonly id: string; readonly url: string; readonly settings: OAuthSettings | undefined },
  redirectUri: string,
  options: {
    readonly dir: string
    /** Who hears of the tokens written; none: nobody. */
    readonly told?: Told | undefined
    readonly scopes?: ReadonlyArray<string> | undefined
    /** A user signing in for themselves to a `perUser` backend: the tokens are theirs alone. */
    readonly subject?: string | undefined
    /** Starts the flow's `state`: which gateway of a team waits for the redirect (see transport/Http). */
    readonly statePrefix?: string | undefined
  }
): Promise<Prepared> => {
  const settings = backend.settings ?? { type: "oauth" as const }
  if (settings.grant === "client_credentials") {
    throw new Error(
      `backend '${backend.id}' uses the client_credentials grant: the gateway gets its tokens itself, no one signs in`
    )
  }
  const challenge = await challengeOf(backend.url)
  const found = await protectedResource(backend.url, challenge)
  // The server's metadata, read once with a placeholder client (discovery needs one).
  const metadata = (await configuration(found.issuer, { client_id: "mcp-agentify" })).serverMetadata()
  const offline = metadata.scopes_supported?.includes("offline_access") === true ? ["offline_access"] : []
  // The scopes: asked for, else configured, else what the server's 401 asked for, else all it supports (MCP's order).
  const asked = /scope="([^"]*)"/i
    .exec(challenge ?? "")?.[1]
    ?.split(" ")
    .filter((s) => s !== "")
  const wanted = [...new Set([...(options.scopes ?? settings.scopes ?? asked ?? found.scopesSupported)])]
  const scope = [...new Set([...wanted, ...offline])].join(" ")
  let client: Store.Stored["client"]
  let config: oauth.Configuration
  if (settings.clientId !== undefined) {
    client = { client_id: settings.clientId, client_secret: settings.clientSecret }
    config = await configuration(found.issuer, client)
  } else if (settings.clientMetadataUrl !== undefined && metadata.client_id_metadata_document_supported === true) {
    client = { client_id: settings.clientMetadataUrl }
    config = await configuration(found.issuer, client)
  } else if (typeof metadata.registration_endpoint === "string") {
    client = await register(metadata.registration_endpoint, {
      client_name: "mcp-agentify",
      // A native application (RFC 8252): its redirect is a loopback address over plain http.
      application_type: "native",
      redirect_uris: [redirectUri],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      ...(scope === "" ? {} : { scope })
    })
    config = await configuration(found.issuer, client)
  } else {
    throw new Error(
      `${found.issuer} offers no dynamic client registration: set auth.clientId (and clientSecret) for backend '${backend.id}'`
    )
  }
  const verifier = oauth.randomPKCECodeVerifier()
  const state = `${options.statePrefix ?? ""}${oauth.randomState()}`
  const url = oauth.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    response_type: "code",
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    state,
    resource: found.resource,
    ...(scope === "" ? {} : { scope }),
    ...(offline.length > 0 ? { prompt: "consent" } : {})
  })
  const finish = async (returned: URL): Promise<Store.Stored> => {
    let response: oauth.TokenEndpointResponse
    try {
      response = await oauth.authorizationCodeGrant(
        config,
        returned,
        { pkceCodeVerifier: verifier, expectedState: state },
        { resource: found.resource }
      )
    } catch (error) {
      throw new Error(`the sign-in was not completed: ${oauthMessage(error)}`, { cause: error })
    }
    const tokens = toStored(response)
    const stored: Store.Stored = {
      resource: found.resource,
      issuer: found.issuer,
      client,
      // What was asked, when the server does not say what it granted: a step-up asks for more than this.
      tokens: tokens.scope === undefined && wanted.length > 0 ? { ...tokens, scope: wanted.join(" ") } : tokens,
      ...(options.subject === undefined ? {} : { subject: options.subject })
    }
    Store.write(options.dir, Store.entryOf(backend.id, options.subject), stored, process.env, options.told)
    return stored
  }
  return { url, issuer: found.issuer, state, finish }
}

/** Waits for `promise` at most `timeoutMs`, rejecting with `what` after. */
export const within = <A>(promise: Promise<A>, timeoutMs: number, what: string): Promise<A> => {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} within ${Math.round(timeoutMs / 1000)} s`)), timeoutMs)
    })
  ]).finally(() => clearTimeout(timer))
}

/** Signs in to `backend` and stores its tokens; rejects with what went wrong. */
export const signIn = async (
  backend: { readonly id: string; readonly url: string; readonly settings: OAuthSettings | undefined },
  options: SignInOptions
): Promise<Store.Stored> => {
  const listener = await loopback(backend.id)
  try {
    const prepared = await prepare(backend, listener.redirectUri, { dir: options.dir, told: options.told })
    options.print(`Sign in to ${backend.id} (${Secrets.displayUrl(backend.url)}) at ${prepared.issuer}:`)
    options.print(prepared.url.href)
    if (options.openBrowser) open(prepared.url.href)
    const returned = await within(listener.returned, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, "no sign-in")
    return await prepared.finish(returned)
  } finally {
    listener.close()
  }
}
