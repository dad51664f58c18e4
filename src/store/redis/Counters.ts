/**
 * Counters in Redis: one script checks every key a take counts in and, if none refuses, counts it
 * in all of them, atomically (no other replica's take between). Within the window, a sorted set of
 * the takes' times (`<key>:window`, older ones dropped); at once, a hash of each replica's places
 * (`<key>:inflight`), where a replica that stopped heartbeating (its `replica:<id>` key expired)
 * counts for nothing: its places are not lost for ever. This replica's places are written whole
 * at each heartbeat, so a lost release heals.
 */
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { type Count, type Counters, type CountTaken, StoreUnavailable } from "../Driver.js"
import { PREFIX, type RedisConnectionService } from "./Connection.js"

/**
 * ARGV: now, replica, prefix, window ms, n, then per key: key, per window (-1: none), at once (-1:
 * none), member. Answers {-1, 0, 0} when taken, else {index, 1 when the window refuses, retry after ms}.
 */
export const TAKE = `
local now = tonumber(ARGV[1])
local replica = ARGV[2]
local prefix = ARGV[3]
local window = tonumber(ARGV[4])
local n = tonumber(ARGV[5])
for i = 0, n - 1 do
  local base = 6 + i * 4
  local key = ARGV[base]
  local perWindow = tonumber(ARGV[base + 1])
  local atOnce = tonumber(ARGV[base + 2])
  if perWindow >= 0 then
    local z = prefix .. key .. ':window'
    redis.call('ZREMRANGEBYSCORE', z, '-inf', now - window)
    if perWindow == 0 then return {i, 1, window} end
    if redis.call('ZCARD', z) >= perWindow then
      local oldest = redis.call('ZRANGE', z, -perWindow, -perWindow, 'WITHSCORES')
      return {i, 1, tonumber(oldest[2]) + window - now}
    end
  end
  if atOnce >= 0 then
    local h = prefix .. key .. ':inflight'
    local all = redis.call('HGETALL', h)
    local sum = 0
    for j = 1, #all, 2 do
      if all[j] == replica or redis.call('EXISTS', prefix .. 'replica:' .. all[j]) == 1 then
        sum = sum + tonumber(all[j + 1])
      else
        redis.call('HDEL', h, all[j])
      end
    end
    if sum >= atOnce then return {i, 0, 1000} end
  end
end
for i = 0, n - 1 do
  local base = 6 + i * 4
  local key = ARGV[base]
  if tonumber(ARGV[base + 1]) >= 0 then
    local z = prefix .. key .. ':window'
    redis.call('ZADD', z, now, ARGV[base + 3])
    redis.call('PEXPIRE', z, window)
  end
  if tonumber(ARGV[base + 2]) >= 0 then
    local h = prefix .. key .. ':inflight'
    redis.call('HINCRBY', h, replica, 1)
    redis.call('PEXPIRE', h, 86400000)
  end
end
return {-1, 0, 0}
`

/** ARGV: prefix, replica, then the keys: one place given back in each. */
export const RELEASE = `
for i = 3, #ARGV do
  local h = ARGV[1] .. ARGV[i] .. ':inflight'
  if redis.call('HINCRBY', h, ARGV[2], -1) <= 0 then redis.call('HDEL', h, ARGV[2]) end
end
return 0
`

export const takeArguments = (counts: ReadonlyArray<Count>, replicaId: string, windowMs: number, now: number) => [
  String(now),
  replicaId,
  PREFIX,
  String(windowMs),
  String(counts.length),
  ...counts.flatMap((c) => [c.key, String(c.perWindow ?? -1), String(c.atOnce ?? -1), `${now}-${randomBytes(6).toString("hex")}`])
]

export const make = (connection: RedisConnectionService): Counters => {
  const { client, run, replicaId, onBeat } = connection
  /** This replica's places at once per key. */
  const inflight = new Map<string, number>()
  onBeat((beat) => {
    for (const [key, count] of inflight) {
      if (count > 0) beat.hSet(`${PREFIX}${key}:inflight`, replicaId, count)
      else {
        beat.hDel(`${PREFIX}${key}:inflight`, replicaId)
        inflight.delete(key)
      }
    }
  })
  const taken = (atOnce: ReadonlyArray<string>): CountTaken => {
    for (const key of atOnce) inflight.set(key, (inflight.get(key) ?? 0) + 1)
    let released = false
    return {
      _tag: "Taken",
      release: Effect.suspend(() => {
        if (released || atOnce.length === 0) return Effect.void
        released = true
        for (const key of atOnce) inflight.set(key, (inflight.get(key) ?? 1) - 1)
        // Not given back now (the store failed): the next heartbeat writes this replica's places whole.
        return Effect.ignore(run(() => client.eval(RELEASE, { arguments: [PREFIX, replicaId, ...atOnce] })))
      })
    }
  }
  return {
    take: (counts, windowMs) =>
      Effect.flatMap(
        run(() => client.eval(TAKE, { arguments: takeArguments(counts, replicaId, windowMs, Date.now()) })),
        (answer): Effect.Effect<CountTaken, StoreUnavailable> => {
          if (!Array.isArray(answer)) return Effect.fail(new StoreUnavailable({ why: "the count script answered nothing" }))
          const [index = -1, perWindow = 0, retryAfterMs = 0] = answer.map(Number)
          return Effect.succeed(
            index >= 0
              ? { _tag: "Refused", index, perWindow: perWindow === 1, retryAfterMs }
              : taken(counts.filter((c) => c.atOnce !== undefined).map((c) => c.key))
          )
        }
      )
  }
}
