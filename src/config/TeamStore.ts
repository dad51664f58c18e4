/**
 * The team's store (the configuration's `state` key; not the state directory, see StateDir):
 * where several gateways keep what they share (Redis, or Valkey: the same protocol), so any of
 * them serves any client (see store/). Absent: everything in this process, as on one machine. And
 * the http(s) URL the configuration names in several places.
 */
import { Schema } from "effect"

/** An http(s) URL (an issuer, a resource, a gateway's address). */
export const HttpUrl = Schema.String.check(
  Schema.makeFilter(
    (s) => {
      try {
        return /^https?:$/.test(new URL(s).protocol)
      } catch {
        return false
      }
    },
    { message: "must be an http:// or https:// URL" }
  )
)

const MAX_LEASE_MS = 3_600_000

export const State = Schema.Struct({
  /** `redis://[user:password@]host:port[/db]` or `rediss://` (TLS); a secret (it may carry a password). */
  url: Schema.String.annotate({ message: "must be a string (value not shown)" }).check(
    Schema.makeFilter((s) => /^rediss?:\/\/[^\s]+$/.test(s), {
      message: "must be a redis:// or rediss:// URL (value not shown)"
    })
  ),
  /**
   * How the other gateways reach this one's HTTP listener to hand it a request of one of its
   * sessions (`http://10.0.0.5:8080`); default: the address it listens on.
   */
  address: Schema.optional(HttpUrl),
  /** How long a gateway that stopped answering the store keeps its sessions (default 10000). */
  leaseMs: Schema.optional(
    Schema.Number.check(
      Schema.makeFilter((n) => Number.isInteger(n) && n >= 100 && n <= MAX_LEASE_MS, {
        message: `must be a whole number of milliseconds from 100 to ${MAX_LEASE_MS}`
      })
    )
  )
})
export type State = typeof State.Type
