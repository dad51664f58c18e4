/**
 * What every HTTP server of the gateway checks before anything else: the bearer token
 * (constant-time) and the Host and Origin headers (DNS rebinding). Shared by the MCP transport
 * (`--http`) and the debug UI.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { Redacted } from "effect"
import { isLoopback } from "./Address.js"

const isWildcard = (host: string) => host === "0.0.0.0" || host === "::"

const digest = (text: string) => createHash("sha256").update(text).digest()

/** Constant-time: both sides are hashed to the same length first. */
export const tokenMatches = (header: string | undefined, token: Redacted.Redacted<string>): boolean => {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? "")
  const given = match?.[1] ?? ""
  return timingSafeEqual(digest(given), digest(Redacted.value(token))) && given.length > 0
}

const hostOf = (authority: string): string => {
  const match = /^(\[[^\]]*\]|[^:]*)(?::\d+)?$/.exec(authority)
  return (match?.[1] ?? authority).toLowerCase()
}

/**
 * Host and Origin checks (DNS rebinding, cross-site requests): what a server bound to
 * `options.host` accepts, besides `allowed` hosts and origins. `port` is read when checking (a
 * server on port 0 learns its port once listening).
 */
export const makeGuards = (
  options: { readonly host: string },
  /** The port served; undefined when unknown (mounted on an app's router): any port of the name. */
  port: () => number | undefined,
  allowed: { readonly allowedHosts: ReadonlyArray<string>; readonly allowedOrigins: ReadonlyArray<string> }
) => {
  const allowedHosts = new Set(allowed.allowedHosts.map((h) => h.toLowerCase()))
  const allowedOrigins = new Set(allowed.allowedOrigins.map((o) => o.toLowerCase().replace(/\/+$/, "")))
  const bound = options.host.includes(":") ? `[${options.host.toLowerCase()}]` : options.host.toLowerCase()
  const hostAllowed = (header: string | undefined): boolean => {
    if (header === undefined) return false
    const value = header.toLowerCase()
    if (allowedHosts.has(value) || allowedHosts.has(hostOf(value))) return true
    const name = hostOf(value)
    const served = port()
    const withPort = (h: string) =>
      value === h ||
      (served === undefined ? /^:\d+$/.test(value.slice(h.length)) && value.startsWith(h) : value === `${h}:${served}`)
    // A wildcard bind has no name to check against: only allowedHosts (and the token) limit it.
    if (isWildcard(options.host)) return allowedHosts.size === 0 || isLoopback(name.replace(/^\[|\]$/g, ""))
    if (isLoopback(options.host)) return ["localhost", "127.0.0.1", "[::1]", bound].some(withPort)
    return withPort(bound)
  }
  const originAllowed = (origin: string | undefined): boolean => {
    if (origin === undefined) return true
    const value = origin.toLowerCase().replace(/\/+$/, "")
    if (allowedOrigins.has(value)) return true
    try {
      // A page served from this machine, or by this server itself; a rebound name (evil.example
      // resolving to 127.0.0.1) is not.
      const url = new URL(value)
      const served = port()
      return (
        isLoopback(url.hostname.replace(/^\[|\]$/g, "")) ||
        (served === undefined ? url.hostname === bound : url.host === `${bound}:${served}`)
      )
    } catch {
      return false
    }
  }
  // Clients send the same few values on every request: remember the verdicts (a bounded set).
  const memo = (check: (value: string | undefined) => boolean) => {
    const seen = new Map<string | undefined, boolean>()
    return (value: string | undefined): boolean => {
      let verdict = seen.get(value)
      if (verdict === undefined) {
        verdict = check(value)
        if (seen.size >= 256) seen.clear()
        seen.set(value, verdict)
      }
      return verdict
    }
  }
  return { hostAllowed: memo(hostAllowed), originAllowed: memo(originAllowed) }
}
