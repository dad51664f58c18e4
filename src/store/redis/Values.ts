/**
 * Values in Redis: `<prefix><key>` with its time to live. A value in a group is written by a script
 * that also keeps the group bounded: `group:<name>`, a sorted set of its keys by when they joined,
 * and `group-bytes:<name>`, their sizes; past its bounds the oldest go (never the new one) with
 * nothing between. `setIfAbsent` is a script too (a `SET NX` that answers what is there).
 */
import { Effect, Option } from "effect"
import type { Group, Values } from "../Driver.js"
import { StoreUnavailable } from "../Driver.js"
import { PREFIX, type RedisConnectionService } from "./Connection.js"

/** ARGV: key, value, ttl ms, group's keys index, its sizes, now ms, max entries, max bytes. */
export const SET_IN_GROUP = `
local key, value, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local index, sizes, now = ARGV[4], ARGV[5], tonumber(ARGV[6])
local maxCount, maxBytes = tonumber(ARGV[7]), tonumber(ARGV[8])
redis.call('SET', key, value, 'PX', ttl)
redis.call('ZADD', index, now, key)
redis.call('HSET', sizes, key, #value)
for _, old in ipairs(redis.call('ZRANGEBYSCORE', index, '-inf', now - ttl)) do
  redis.call('ZREM', index, old)
  redis.call('HDEL', sizes, old)
end
local total = 0
for _, v in ipairs(redis.call('HVALS', sizes)) do total = total + tonumber(v) end
while redis.call('ZCARD', index) > 1 and (redis.call('ZCARD', index) > maxCount or total > maxBytes) do
  local first = redis.call('ZRANGE', index, 0, 1)
  local oldest = first[1]
  if oldest == key then oldest = first[2] end
  total = total - tonumber(redis.call('HGET', sizes, oldest) or '0')
  redis.call('ZREM', index, oldest)
  redis.call('HDEL', sizes, oldest)
  redis.call('DEL', oldest)
end
redis.call('PEXPIRE', index, ttl)
redis.call('PEXPIRE', sizes, ttl)
return 0
`

/** ARGV: key, value, ttl ms (0: for ever). {1, value} when set, else {0, what is there}. */
export const SET_IF_ABSENT = `
local there = redis.call('GET', ARGV[1])
if there then return {0, there} end
if tonumber(ARGV[3]) > 0 then
  redis.call('SET', ARGV[1], ARGV[2], 'PX', ARGV[3])
else
  redis.call('SET', ARGV[1], ARGV[2])
end
return {1, ARGV[2]}
`

export const setArguments = (key: string, value: string, ttlMs: number, group: Group, now: number) => [
  `${PREFIX}${key}`,
  value,
  String(ttlMs),
  `${PREFIX}group:${group.name}`,
  `${PREFIX}group-bytes:${group.name}`,
  String(now),
  String(group.maxEntries),
  String(group.maxBytes)
]

export const make = ({ client, run }: RedisConnectionService): Values => ({
  get: (key) =>
    Effect.map(
      run(() => client.get(`${PREFIX}${key}`)),
      (value) => Option.fromNullishOr(typeof value === "string" ? value : undefined)
    ),
  set: (key, value, ttlMs, group) =>
    Effect.asVoid(
      run(() =>
        group === undefined
          ? client.set(`${PREFIX}${key}`, value, { expiration: { type: "PX", value: ttlMs } })
          : client.eval(SET_IN_GROUP, { arguments: setArguments(key, value, ttlMs, group, Date.now()) })
      )
    ),
  setIfAbsent: (key, value, ttlMs) =>
    Effect.flatMap(
      run(() => client.eval(SET_IF_ABSENT, { arguments: [`${PREFIX}${key}`, value, String(ttlMs ?? 0)] })),
      (answer) => {
        const [set, there] = Array.isArray(answer) ? answer : []
        return typeof there === "string"
          ? Effect.succeed({ set: Number(set) === 1, value: there })
          : Effect.fail(new StoreUnavailable({ why: "the store answered no value" }))
      }
    )
})
