/**
 * The gateway's HTTP endpoint as an OAuth 2.1 resource server (`--http-auth oauth`), as the MCP
 * authorization specification describes it: access tokens are JWTs checked against the issuer's
 * keys (its JWKS, found through its metadata, cached, and fetched again for a key it has not seen:
 * rotation), with `iss`, `aud` (the gateway's resource URL), `exp`/`nbf` and the required scopes;
 * the protected-resource metadata (RFC 9728) tells clients where to get one.
 *
 * On `jose`: signature algorithms, JWKS caching with a cooldown and the registered claims are its
 * job; written here is only what MCP adds (the metadata document, the challenges, scopes).
 */
import { Effect, Schema } from "effect"
import { createRemoteJWKSet, errors as JoseErrors, jwtVerify, type JWTPayload } from "jose"
import type { HttpAuth } from "../config/Config.js"
import { field, messageOf, stringField } from "../json/Json.js"

/** Who a token speaks for, once checked. */
export interface Principal {
  /** `sub`, else `client_id` (a client-credentials token). */
  readonly subject: string
  readonly clientId: string | undefined
  readonly scopes: ReadonlyArray<string>
  /** The token's `groups` claim (strings; a single string is one group). */
  readonly groups: ReadonlyArray<string>
}

/**
 * Why a request is refused: 401 `invalid_token` (missing, malformed, expired, not for this resource,
 * not signed by the issuer) or 403 `insufficient_scope` (valid, without a scope it needs).
 */
export class TokenRefused extends Schema.TaggedError<TokenRefused>()("TokenRefused", {
  status: Schema.Literals([401, 403]),
  error: Schema.optional(Schema.Literals(["invalid_token", "insufficient_scope"])),
  description: Schema.String,
  /** The scopes the request needs (403). */
  scope: Schema.optional(Schema.String)
}) {}

/** The issuer's metadata: RFC 8414 (with the path inserted), else OpenID discovery. */

/** C0 and C1 control characters (NUL among them), and DEL. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/
const metadataUrls = (issuer: string): Array<string> => {
  const url = new URL(issuer)
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "")
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}/.well-known/openid-configuration${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`
  ]
}

const DISCOVERY_TIMEOUT_MS = 5_000

/** The issuer's `jwks_uri`; an error says what was tried. */
const discoverJwks = (issuer: string): Promise<URL> =>
  (async () => {
    const tried: Array<string> = []
    for (const url of metadataUrls(issuer)) {
      try {
        const response = await fetch(url, { signal: AbortSignal.timeout(DISCOVERY_TIMEOUT_MS), redirect: "error" })
        if (!response.ok) {
          tried.push(`${url}: HTTP ${response.status}`)
          continue
        }
        const metadata: unknown = await response.json()
        // RFC 8414 section 3.3: the metadata must name the issuer it was asked for.
        const named = field(metadata, "issuer")
        if (named !== issuer) {
          tried.push(`${url}: names issuer ${JSON.stringify(named)}`)
          continue
        }
        const jwksUri = stringField(metadata, "jwks_uri")
        if (jwksUri === undefined) {
          tried.push(`${url}: no jwks_uri`)
          continue
        }
        return new URL(jwksUri)
      } catch (error) {
        tried.push(`${url}: ${messageOf(error)}`)
      }
    }
    throw new Error(`cannot find the keys of ${issuer}: ${tried.join("; ")}`)
  })()

/** The `groups` claim: an array of strings, or one string. */
const groupsOf = (payload: JWTPayload): Array<string> => {
  const groups = payload.groups
  if (typeof groups === "string") return [groups]
  return Array.isArray(groups) ? groups.filter((g): g is string => typeof g === "string") : []
}

/** `scope` (space-separated, RFC 9068) or `scp` (an array, as some servers write it). */
const scopesOf = (payload: JWTPayload): Array<string> => {
  if (typeof payload.scope === "string") return payload.scope.split(" ").filter((s) => s !== "")
  if (Array.isArray(payload.scp)) return payload.scp.filter((s): s is string => typeof s === "string")
  return []
}

/** The URL of the resource's metadata document for `resource` (RFC 9728 section 3.1, path-suffixed). */
export const metadataUrlOf = (resource: string): string => {
  const url = new URL(resource)
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "")
  return `${url.origin}/.well-known/oauth-protected-resource${path}`
}

/** The paths the metadata is served at: the root form and the path-suffixed form of every endpoint. */
export const METADATA_PATH = "/.well-known/oauth-protected-resource"

/** `WWW-Authenticate` for a refusal, pointing at the metadata (RFC 9728 section 5.1). */
export const challenge = (refused: TokenRefused, resource: string): string => {
  const parts = [`resource_metadata="${metadataUrlOf(resource)}"`]
  if (refused.error !== undefined) parts.push(`error="${refused.error}"`)
  if (refused.scope !== undefined) parts.push(`scope="${refused.scope}"`)
  parts.push(`error_description="${refused.description.replace(/["\\]/g, "'")}"`)
  return `Bearer ${parts.join(", ")}`
}

export interface ResourceServer {
  /** The protected-resource metadata document. */
  readonly metadata: Record<string, unknown>
  /** The Authorization header checked; `extraScopes`: what this endpoint needs beside the configured ones. */
  readonly verify: (
    authorization: string | undefined,
    extraScopes?: ReadonlyArray<string>
  ) => Effect.Effect<Principal, TokenRefused>
}

/**
 * A token naming a key the cached set lacks fetches the set again (a rotation), at most once per
 * this long: tokens with made-up `kid`s cannot make the gateway hammer the issuer.
 */
const JWKS_COOLDOWN_MS = 5_000

/** How long a token's times may be off (clocks of the issuer and the gateway differ a little). */
const CLOCK_TOLERANCE_S = 30

export const make = (settings: HttpAuth, scopesSupported: ReadonlyArray<string> = []): ResourceServer => {
  const required = settings.scopes ?? []
  // Found on first use (the issuer may start after the gateway); a failure is tried again next time.
  let keys: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined
  const keySet = () => {
    if (keys === undefined) {
      keys = discoverJwks(settings.issuer).then((uri) =>
        createRemoteJWKSet(uri, { timeoutDuration: DISCOVERY_TIMEOUT_MS, cooldownDuration: JWKS_COOLDOWN_MS })
      )
      keys.catch(() => (keys = undefined))
    }
    return keys
  }
  const invalid = (description: string) => new TokenRefused({ status: 401, error: "invalid_token", description })

  const verify = (authorization: string | undefined, extraScopes: ReadonlyArray<string> = []) =>
    Effect.gen(function* () {
      const match = /^Bearer[ \t]+([A-Za-z0-9._~+/-]+=*)[ \t]*$/i.exec(authorization ?? "")
      if (match === null) {
        // No error code for a request without credentials (RFC 6750 section 3.1).
        return yield* new TokenRefused({ status: 401, description: "a bearer access token is required" })
      }
      const token = match[1]!
      const payload = yield* Effect.tryPromise({
        try: async () =>
          (
            await jwtVerify(token, await keySet(), {
              issuer: settings.issuer,
              audience: settings.audience,
              clockTolerance: CLOCK_TOLERANCE_S
            })
          ).payload,
        catch: (error) => {
          if (error instanceof JoseErrors.JWTExpired) return invalid("the access token has expired")
          if (error instanceof JoseErrors.JWTClaimValidationFailed) {
            return invalid(
              error.claim === "aud"
                ? `the access token is not for this resource (${settings.audience})`
                : error.claim === "iss"
                  ? `the access token was not issued by ${settings.issuer}`
                  : `the access token's ${error.claim} claim is not acceptable: ${error.reason}`
            )
          }
          if (error instanceof JoseErrors.JWKSNoMatchingKey || error instanceof JoseErrors.JWSSignatureVerificationFailed) {
            return invalid(`the access token is not signed by a key of ${settings.issuer}`)
          }
          if (error instanceof JoseErrors.JOSEError) return invalid(`the access token cannot be read: ${error.message}`)
          // The issuer could not be asked: not the client's fault, but no token can be checked.
          return invalid(`the access token cannot be checked now: ${messageOf(error)}`)
        }
      })
      const has = scopesOf(payload)
      const missing = [...required, ...extraScopes].filter((s) => !has.includes(s))
      if (missing.length > 0) {
        return yield* new TokenRefused({
          status: 403,
          error: "insufficient_scope",
          description: `the access token lacks the scope ${missing.join(" ")}`,
          scope: [...new Set([...required, ...extraScopes])].join(" ")
        })
      }
      const clientId = typeof payload.client_id === "string" ? payload.client_id : undefined
      const subject = payload.sub ?? clientId ?? "unknown"
      // A subject names a user everywhere (policies, quotas, lanes, stored tokens): no control
      // character may make it read as someone else's, or as two names.
      if (CONTROL.test(subject)) return yield* invalid("the access token's subject holds a control character")
      return { subject, clientId, scopes: has, groups: groupsOf(payload) }
    })

  return {
    metadata: {
      resource: settings.audience,
      authorization_servers: [settings.issuer],
      scopes_supported: [...new Set([...required, ...scopesSupported])],
      bearer_methods_supported: ["header"],
      resource_name: "mcp-agentify"
    },
    verify
  }
}
