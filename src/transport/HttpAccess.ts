/**
 * Who may reach the MCP endpoints, checked before anything else, as middleware in front of them:
 * the bearer token (`--http-token`), or an access token the configuration's `httpAuth` accepts
 * (`--http-auth oauth`, with the scopes a profile's endpoint needs), then the Host and Origin
 * headers (DNS rebinding). Also the one public document a client reads before it has a token: the
 * protected resource's metadata.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import { Effect, Result, type Redacted } from "effect"
import * as ResourceServer from "../auth/ResourceServer.js"
import type { ResolvedConfig } from "../config/Config.js"
import { makeGuards, tokenMatches } from "./Guards.js"
import { json, reject } from "./HttpWire.js"

/** Who the request's access token speaks for (`--http-auth oauth`); undefined otherwise. */
export type Principal = ResourceServer.Principal | undefined

export interface AccessOptions {
  readonly host: string
  readonly token?: Redacted.Redacted<string> | undefined
  readonly oauth?: boolean | undefined
  /** The port served, for the Host and Origin checks; undefined: not known. */
  readonly port: () => number | undefined
}

const safeDecode = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** `config`: the transport's settings, read once; `current`: the configuration in force now (its profiles' scopes). */
export const make = (options: AccessOptions, config: ResolvedConfig, current: Effect.Effect<ResolvedConfig>) => {
  const httpAuth = options.oauth === true ? config.httpAuth : undefined
  const resourceServer =
    httpAuth !== undefined
      ? ResourceServer.make(
          httpAuth,
          Object.values(config.profiles).flatMap((p) => p.scopes ?? [])
        )
      : undefined
  /** The scopes a profile's endpoint needs beside the configured ones (as configured now). */
  const scopesFor = (path: string) =>
    Effect.map(current, ({ profiles }) => {
      const name = /^\/profiles\/([^/]+)\/mcp$/.exec(path)?.[1]
      return name === undefined ? [] : (profiles[safeDecode(name)]?.scopes ?? [])
    })
  const guards = makeGuards(options, options.port, config)

  /** Where to get a token is public: a client reads it before it has one (any origin may: it holds nothing but URLs and scope names). */
  const metadata = (
    request: HttpServerRequest.HttpServerRequest,
    path: string
  ): HttpServerResponse.HttpServerResponse | undefined => {
    if (resourceServer === undefined) return undefined
    if (path !== ResourceServer.METADATA_PATH && !path.startsWith(`${ResourceServer.METADATA_PATH}/`)) return undefined
    return request.method === "GET" || request.method === "HEAD"
      ? json(200, resourceServer.metadata, { "access-control-allow-origin": "*", "cache-control": "max-age=3600" })
      : reject(405, "Method Not Allowed", { allow: "GET" })
  }

  /** The request's principal, or the response that refuses it. */
  const check = (
    request: HttpServerRequest.HttpServerRequest,
    path: string
  ): Effect.Effect<Result.Result<Principal, HttpServerResponse.HttpServerResponse>> =>
    Effect.gen(function* () {
      if (options.token !== undefined && !tokenMatches(request.headers["authorization"], options.token)) {
        return Result.fail(
          reject(401, "Unauthorized: a bearer token is required", { "www-authenticate": 'Bearer realm="mcp-agentify"' })
        )
      }
      let principal: Principal = undefined
      if (resourceServer !== undefined && httpAuth !== undefined) {
        const checked = yield* Effect.result(resourceServer.verify(request.headers["authorization"], yield* scopesFor(path)))
        if (Result.isFailure(checked)) {
          const refused = checked.failure
          return Result.fail(
            reject(refused.status, `${refused.status === 401 ? "Unauthorized" : "Forbidden"}: ${refused.description}`, {
              "www-authenticate": ResourceServer.challenge(refused, httpAuth.audience)
            })
          )
        }
        principal = checked.success
      }
      // The Host header as sent: Effect 4 puts an absolute-form request line's authority in its
      // place, and the hand-off at the listener (before Effect reads the request) judges the header.
      if (!guards.hostAllowed(NodeHttpServerRequest.toIncomingMessage(request).headers["host"])) {
        return Result.fail(reject(403, "Forbidden: the Host header does not name this server (add it to allowedHosts)"))
      }
      if (!guards.originAllowed(request.headers["origin"])) {
        return Result.fail(reject(403, "Forbidden: Origin not allowed (add it to allowedOrigins)"))
      }
      return Result.succeed(principal)
    })

  return { guards, metadata, check }
}

export type Access = ReturnType<typeof make>
