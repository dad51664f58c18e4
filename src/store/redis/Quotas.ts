/**
 * `limits` counted team-wide in Redis: one script checks every key a call counts against and, if
 * none refuses, counts it in all of them, atomically (no other gateway's call between). Per
 * minute, a sorted set of the calls' times (`quota:<key>:minute`, older than a minute dropped);
 * at once, a hash of each gateway's calls in flight (`quota:<key>:inflight`), where a gateway that
 * died (its `replica:<id>` key expired) counts for nothing: its places are not lost for ever.
 * This gateway's calls in flight are written whole at each heartbeat, so a lost release heals.
 * While the store fails to answer in time, a call is counted by this gateway alone.
 */
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import type { QuotaKey } from "../Contract.js"
import { type Counted, limitWords, local, Quotas, type Taken, TeamQuotas } from "../TeamQuotas.js"
import { PREFIX, RedisConnection } from "./Connection.js"

const MINUTE_MS = 60_000

/** ARGV: now, replica, prefix, n, then per key: key, per minute (-1: none), at once (-1: none), member. */
export const TAKE = `
local now = tonumber(ARGV[1])
local replica = ARGV[2]
local prefix = ARGV[3]
local n = tonumber(ARGV[4])
for i = 0, n - 1 do
  local base = 5 + i * 4
  local key = ARGV[base]
  local perMinute = tonumber(ARGV[base + 1])
  local atOnce = tonumber(ARGV[base + 2])
  if perMinute >= 0 then
    local z = prefix .. 'quota:' .. key .. ':minute'
    redis.call('ZREMRANGEBYSCORE', z, '-inf', now - ${MINUTE_MS})
    if redis.call('ZCARD', z) >= perMinute then
      local oldest = redis.call('ZRANGE', z, -perMinute, -perMinute, 'WITHSCORES')
      return {i, 1, tonumber(oldest[2]) + ${MINUTE_MS} - now}
    end
  end
  if atOnce >= 0 then
    local h = prefix .. 'quota:' .. key .. ':inflight'
    local all = redis.call('HGETALL', h)
    local sum = 0
    for j = 1, #all, 2 do
      if redis.call('EXISTS', prefix .. 'replica:' .. all[j]) == 1 then
        sum = sum + tonumber(all[j + 1])
      else
        redis.call('HDEL', h, all[j])
      end
    end
    if sum >= atOnce then return {i, 0, 1000} end
  end
end
for i = 0, n - 1 do
  local base = 5 + i * 4
  local key = ARGV[base]
  if tonumber(ARGV[base + 1]) >= 0 then
    local z = prefix .. 'quota:' .. key .. ':minute'
    redis.call('ZADD', z, now, ARGV[base + 3])
    redis.call('PEXPIRE', z, ${MINUTE_MS})
  end
  if tonumber(ARGV[base + 2]) >= 0 then
    local h = prefix .. 'quota:' .. key .. ':inflight'
    redis.call('HINCRBY', h, replica, 1)
    redis.call('PEXPIRE', h, 86400000)
  end
end
return {-1, 0, 0}
`

/** Gives back a call's places in flight. */
export const RELEASE = `
for i = 3, #ARGV do
  local h = ARGV[1] .. 'quota:' .. ARGV[i] .. ':inflight'
  if redis.call('HINCRBY', h, ARGV[2], -1) <= 0 then redis.call('HDEL', h, ARGV[2]) end
end
return 0
`

export const takeArguments = (keys: ReadonlyArray<QuotaKey>, replicaId: string, prefix: string, now: number) => [
  String(now),
  replicaId,
  prefix,
  String(keys.length),
  ...keys.flatMap((k) => [
    k.key,
    String(k.callsPerMinute ?? -1),
    String(k.concurrent ?? -1),
    `${now}-${randomBytes(6).toString("hex")}`
  ])
]

/** A counted key as the store names it (its parts joined by `:`). */
const storeKey = (counted: Counted): string => counted.key.replace("\u0000", ":")

export const layer: Layer.Layer<TeamQuotas, never, RedisConnection> = Layer.effect(
  TeamQuotas,
  Effect.gen(function* () {
    const { client, run, replicaId, onBeat } = yield* RedisConnection
    const own = local(new Quotas())
    /** This gateway's calls in flight per quota key. */
    const inflight = new Map<string, number>()
    onBeat((beat) => {
      for (const [key, count] of inflight) {
        if (count > 0) beat.hSet(`${PREFIX}quota:${key}:inflight`, replicaId, count)
        else {
          beat.hDel(`${PREFIX}quota:${key}:inflight`, replicaId)
          inflight.delete(key)
        }
      }
    })
    const release = (counted: ReadonlyArray<string>) => () => {
      for (const key of counted) inflight.set(key, (inflight.get(key) ?? 1) - 1)
      void Effect.runFork(run(() => client.eval(RELEASE, { arguments: [PREFIX, replicaId, ...counted] })))
    }
    return {
      take: (counted) =>
        Effect.flatMap(
          run(() =>
            client.eval(TAKE, {
              arguments: takeArguments(
                counted.map((c) => ({ key: storeKey(c), ...c.limit })),
                replicaId,
                PREFIX,
                Date.now()
              )
            })
          ),
          (answer): Effect.Effect<Taken> => {
            if (!Array.isArray(answer)) return own.take(counted)
            const [index = -1, perMinute = 0, retryAfterMs = 0] = answer.map(Number)
            const refusing = counted[index]
            if (refusing !== undefined) {
              return Effect.succeed({
                _tag: "Refused",
                named: refusing.named,
                why: limitWords(refusing.limit, perMinute === 1),
                retryAfterMs: Math.max(1, retryAfterMs)
              })
            }
            const atOnce = counted.filter((c) => c.limit.concurrent !== undefined).map(storeKey)
            if (atOnce.length === 0) return Effect.succeed({ _tag: "Taken", release: () => {} })
            for (const key of atOnce) inflight.set(key, (inflight.get(key) ?? 0) + 1)
            let released = false
            const give = release(atOnce)
            return Effect.succeed({
              _tag: "Taken",
              release: () => {
                if (released) return
                released = true
                give()
              }
            })
          }
        )
    }
  })
)
