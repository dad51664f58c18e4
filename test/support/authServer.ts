/**
 * A real OAuth 2.1 / OpenID authorization server on 127.0.0.1 for the tests: `oidc-provider` (a
 * certified OpenID provider) with its development login and consent pages, the authorization code
 * flow with PKCE, refresh tokens, client credentials, dynamic registration, revocation and resource
 * indicators, issuing JWT access tokens for a resource. The tests also sign tokens of their own
 * with its key (expired, another audience) and with a stranger's key.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose"
import Provider from "oidc-provider"

export interface AuthServer {
  /** `http://127.0.0.1:PORT`, the issuer. */
  readonly issuer: string
  /** A client-credentials access token for `resource` with `scope`, as the provider issues it. */
  readonly clientCredentials: (options: { readonly resource: string; readonly scope: string }) => Promise<string>
  /** A token signed with the provider's newest key (or a stranger's), with exactly these claims. */
  readonly sign: (claims: JWTPayload, options?: { readonly stranger?: boolean }) => Promise<string>
  /** Rotates its signing key: a new key (a new `kid`) signs from now on; its JWKS lists both. */
  readonly rotate: () => Promise<void>
  /** Revokes a refresh token of a public client (RFC 7009), as an administrator or the user would. */
  readonly revoke: (token: string, clientId: string) => Promise<void>
  readonly close: () => Promise<void>
}

export const M2M_CLIENT = { id: "m2m-client", secret: "m2m-client-secret-0123456789abcdef" }

export const startAuthServer = async (options: {
  /** The resources it issues tokens for. */
  readonly resources: ReadonlyArray<string>
  readonly scopes: ReadonlyArray<string>
  readonly accessTokenTtlS?: number
}): Promise<AuthServer> => {
  const server = http.createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const stranger = await generateKeyPair("RS256", { extractable: true })
  const newKey = async (kid: string) => {
    const pair = await generateKeyPair("RS256", { extractable: true })
    return { privateKey: pair.privateKey, jwk: { ...(await exportJWK(pair.privateKey)), kid, alg: "RS256", use: "sig" } }
  }
  /** Newest first: the provider signs with the first. */
  const keys = [await newKey("test-key-1")]
  const scope = options.scopes.join(" ")
  const configuration = () => ({
    jwks: { keys: keys.map((k) => k.jwk) },
    clients: [
      {
        client_id: M2M_CLIENT.id,
        client_secret: M2M_CLIENT.secret,
        grant_types: ["client_credentials"],
        redirect_uris: [],
        response_types: [],
        scope
      }
    ],
    scopes: ["openid", "offline_access", ...options.scopes],
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      revocation: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => options.resources[0]!,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => {
          if (!options.resources.includes(resource)) throw new Error(`unknown resource ${resource}`)
          return { scope, audience: resource, accessTokenFormat: "jwt", accessTokenTTL: options.accessTokenTtlS ?? 300 }
        }
      }
    },
    ttl: { ClientCredentials: options.accessTokenTtlS ?? 300 }
  })
  server.on("request", new Provider(issuer, configuration()).callback())
  return {
    issuer,
    clientCredentials: async ({ resource, scope: wanted }) => {
      const response = await fetch(`${issuer}/token`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: `Basic ${Buffer.from(`${M2M_CLIENT.id}:${M2M_CLIENT.secret}`).toString("base64")}`
        },
        body: new URLSearchParams({ grant_type: "client_credentials", scope: wanted, resource })
      })
      const body = (await response.json()) as { access_token?: string; error?: string }
      if (body.access_token === undefined) throw new Error(`no token: ${JSON.stringify(body)}`)
      return body.access_token
    },
    sign: (claims, signOptions = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid: signOptions.stranger === true ? "stranger" : keys[0]!.jwk.kid, typ: "at+jwt" })
        .sign(signOptions.stranger === true ? stranger.privateKey : keys[0]!.privateKey),
    revoke: async (token, clientId) => {
      const response = await fetch(`${issuer}/token/revocation`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token, token_type_hint: "refresh_token", client_id: clientId })
      })
      if (!response.ok) throw new Error(`revocation: HTTP ${response.status} ${await response.text()}`)
    },
    rotate: async () => {
      keys.unshift(await newKey(`test-key-${keys.length + 1}`))
      // The same issuer at the same address, now with both keys (its state, tokens and clients, starts afresh).
      server.removeAllListeners("request")
      server.on("request", new Provider(issuer, configuration()).callback())
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
