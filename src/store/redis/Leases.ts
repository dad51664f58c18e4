/**
 * Leases in Redis: a lease is the key `<prefix><lease>` = `<replica id> <address>` (the address
 * where its holder listened when it claimed it, "" when it had not said), with its time to live.
 * Claiming, renewing and releasing are scripts (a check and a write with nothing between);
 * the leases this replica keeps are claimed again in its heartbeat's round trip, and released
 * when the driver stops, so that their clients start afresh at once.
 */
import { Effect, Option, type Scope } from "effect"
import type { Holder, Leases } from "../Driver.js"
import { pause, PREFIX, type RedisConnectionService } from "./Connection.js"
import { STORE_TIMEOUT_MS } from "../Contract.js"

/** ARGV: replica, its address, ttl ms, then the keys: each taken when free or the replica's. The number taken. */
export const CLAIM = `
local me, value, ttl = ARGV[1] .. ' ', ARGV[1] .. ' ' .. ARGV[2], ARGV[3]
local taken = 0
for i = 4, #ARGV do
  local held = redis.call('GET', ARGV[i])
  if not held or string.sub(held, 1, #me) == me then
    redis.call('SET', ARGV[i], value, 'PX', ttl)
    taken = taken + 1
  end
end
return taken
`

/** ARGV: replica, ttl ms, key: extended when the replica's. */
export const RENEW = `
local held = redis.call('GET', ARGV[3])
if held and string.sub(held, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then
  redis.call('PEXPIRE', ARGV[3], ARGV[2])
  return 1
end
return 0
`

/** ARGV: replica, then the keys: each removed when the replica's. */
export const RELEASE = `
local me = ARGV[1] .. ' '
for i = 2, #ARGV do
  local held = redis.call('GET', ARGV[i])
  if held and string.sub(held, 1, #me) == me then redis.call('DEL', ARGV[i]) end
end
return 0
`

const keyOf = (lease: string) => `${PREFIX}${lease}`

/** A lease's value as its holder: `<replica id> <address>`. */
export const holderIn = (value: string): Holder | undefined => {
  const space = value.indexOf(" ")
  if (space <= 0) return undefined
  const address = value.slice(space + 1)
  return { replicaId: value.slice(0, space), address: address === "" ? undefined : address }
}

export const make = (connection: RedisConnectionService): Effect.Effect<Leases, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { client, run, replicaId, leaseMs, address, onBeat } = connection
    const kept = new Set<string>()
    const claiming = (ttlMs: number, keys: ReadonlyArray<string>) => [replicaId, address() ?? "", String(ttlMs), ...keys]
    onBeat((beat) => {
      if (kept.size > 0) beat.eval(CLAIM, { arguments: claiming(leaseMs, [...kept]) })
    })
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        // Stopping cleanly: the leases go at once (their clients start afresh), not after their time;
        // kept no more, so that a heartbeat still running (the connection's) claims none of them again.
        const leases = [...kept]
        kept.clear()
        if (leases.length === 0) return
        const releasing = client.eval(RELEASE, { arguments: [replicaId, ...leases] })
        await Promise.race([releasing, pause(STORE_TIMEOUT_MS)]).catch(() => {})
      })
    )
    const claim = (lease: string, ttlMs: number) =>
      Effect.map(
        run(() => client.eval(CLAIM, { arguments: claiming(ttlMs, [keyOf(lease)]) })),
        (taken) => Number(taken) === 1
      )
    return {
      claim,
      renew: (lease, ttlMs) =>
        Effect.map(
          run(() => client.eval(RENEW, { arguments: [replicaId, String(ttlMs), keyOf(lease)] })),
          (renewed) => Number(renewed) === 1
        ),
      release: (lease) =>
        Effect.suspend(() => {
          kept.delete(keyOf(lease))
          return Effect.asVoid(run(() => client.eval(RELEASE, { arguments: [replicaId, keyOf(lease)] })))
        }),
      holderOf: (lease) =>
        Effect.map(
          run(() => client.get(keyOf(lease))),
          (value) => Option.fromNullishOr(typeof value === "string" ? holderIn(value) : undefined)
        ),
      keep: (lease) =>
        Effect.suspend(() => {
          kept.add(keyOf(lease))
          return Effect.asVoid(claim(lease, leaseMs))
        })
    }
  })
