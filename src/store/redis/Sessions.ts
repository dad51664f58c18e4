/**
 * The session directory in the team's store: `replica:<id>` = a gateway's address and
 * `session:<id>` = `<replica id> <address>`, each for `leaseMs`, written again by the holder's
 * heartbeat (and so put back by the first heartbeat after the store restarted empty). A gateway
 * that stops heartbeating (killed, cut off) loses them when they expire, and its sessions' next
 * requests get 404.
 */
import { Effect, Layer } from "effect"
import type { Owner } from "../Contract.js"
import { SessionDirectory } from "../SessionDirectory.js"
import { pause, PREFIX, RedisConnection } from "./Connection.js"
import { STORE_TIMEOUT_MS } from "../Contract.js"

/** Holders of other gateways' sessions remembered at most (then forgotten all at once). */
const MAX_KNOWN_OWNERS = 10_000

export const layer: Layer.Layer<SessionDirectory, never, RedisConnection> = Layer.scoped(
  SessionDirectory,
  Effect.gen(function* () {
    const { client, run, replicaId, leaseMs, where, failing, address, listeningAt, onBeat } = yield* RedisConnection
    const held = new Set<string>()
    /** Other gateways' sessions, as the store named their holders a moment ago. */
    const owners = new Map<string, { readonly owner: Owner; readonly until: number }>()
    const ownerKeptMs = Math.min(1_000, Math.floor(leaseMs / 3))
    const valueOf = () => `${replicaId} ${address()}`
    onBeat((beat) => {
      for (const id of held) beat.set(`${PREFIX}session:${id}`, valueOf(), { expiration: { type: "PX", value: leaseMs } })
    })
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        // Stopping cleanly: the sessions go at once (their clients start afresh), not after the lease.
        if (held.size === 0) return
        const keys = [...held].map((id) => `${PREFIX}session:${id}`)
        await Promise.race([client.del(keys), pause(STORE_TIMEOUT_MS)]).catch(() => {})
      })
    )
    // Known a moment ago: a session's holder changes only when it dies (then its address fails,
    // 502, until the lease runs out either way).
    const ownerKnown = (sessionId: string): Owner | undefined => {
      const known = owners.get(sessionId)
      return known !== undefined && known.until > Date.now() ? known.owner : undefined
    }
    return {
      replicaId,
      listeningAt,
      ownerKnown,
      claim: (sessionId) =>
        Effect.suspend(() => {
          held.add(sessionId)
          if (address() === undefined) return Effect.void
          return Effect.asVoid(
            run(() => client.set(`${PREFIX}session:${sessionId}`, valueOf(), { expiration: { type: "PX", value: leaseMs } }))
          )
        }),
      release: (sessionId) =>
        Effect.suspend(() => {
          held.delete(sessionId)
          return Effect.asVoid(run(() => client.del(`${PREFIX}session:${sessionId}`)))
        }),
      ownerOf: (sessionId) =>
        Effect.suspend(() => {
          const known = ownerKnown(sessionId)
          if (known !== undefined) return Effect.succeed(known)
          return Effect.map(
            run(() => client.get(`${PREFIX}session:${sessionId}`)),
            (value): Owner => {
              if (value === undefined) return "unknown"
              if (typeof value !== "string") return "none"
              const [replica, at] = value.split(" ")
              if (replica === replicaId || at === undefined || at === "") return "none"
              if (owners.size >= MAX_KNOWN_OWNERS) owners.clear()
              owners.set(sessionId, { owner: { at }, until: Date.now() + ownerKeptMs })
              return { at }
            }
          )
        }),
      addressOf: (other) =>
        Effect.map(
          run(() => client.get(`${PREFIX}replica:${other}`)),
          (at): Owner => (at === undefined ? "unknown" : typeof at === "string" && at !== "" ? { at } : "none")
        ),
      health: Effect.sync(() => {
        const failed = failing()
        return failed === undefined && client.isReady
          ? { ok: true, detail: `${where} (${held.size} sessions held here)` }
          : { ok: false, detail: `${where} is failing: ${failed ?? "not connected"}; sessions held elsewhere cannot be reached` }
      })
    }
  })
)
