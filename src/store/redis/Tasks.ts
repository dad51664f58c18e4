/**
 * Finished tasks in a team's store, bounded as the gateway bounds its own (see
 * gateway/routing/RunTasks): a record per task (its owner and `tasks/get` reply) for its ttl, and
 * per owner an index of its records by when they were kept, with their sizes. Past
 * `MAX_RECORDS_PER_OWNER` or `MAX_BYTES_PER_OWNER` the owner's oldest go, in the same script that
 * keeps the new one (never the new one itself). A record over `MAX_RECORD_BYTES` is kept without
 * its result, saying so: one session's flood of large results fills no store.
 */
import { Effect, Layer } from "effect"
import type { TaskRecord } from "../Contract.js"
import { TaskRecords } from "../TaskRecords.js"
import { field, isObject, parseJson } from "../../values/Json.js"
import { PREFIX, RedisConnection } from "./Connection.js"

export const MAX_RECORDS_PER_OWNER = 100
export const MAX_BYTES_PER_OWNER = 64 * 1024 * 1024
export const MAX_RECORD_BYTES = 8 * 1024 * 1024

/** ARGV: prefix, task id, record (JSON), ttl ms, owner, now ms, max records, max bytes. */
export const SAVE = `
local prefix, id, record, ttl, owner, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local maxCount, maxBytes = tonumber(ARGV[7]), tonumber(ARGV[8])
local index = prefix .. 'tasks-of:' .. owner
local sizes = prefix .. 'task-bytes-of:' .. owner
redis.call('SET', prefix .. 'task:' .. id, record, 'PX', ttl)
redis.call('ZADD', index, now, id)
redis.call('HSET', sizes, id, #record)
for _, old in ipairs(redis.call('ZRANGEBYSCORE', index, '-inf', now - ttl)) do
  redis.call('ZREM', index, old)
  redis.call('HDEL', sizes, old)
end
local total = 0
for _, v in ipairs(redis.call('HVALS', sizes)) do total = total + tonumber(v) end
while redis.call('ZCARD', index) > 1 and (redis.call('ZCARD', index) > maxCount or total > maxBytes) do
  local first = redis.call('ZRANGE', index, 0, 1)
  local oldest = first[1]
  if oldest == id then oldest = first[2] end
  total = total - tonumber(redis.call('HGET', sizes, oldest) or '0')
  redis.call('ZREM', index, oldest)
  redis.call('HDEL', sizes, oldest)
  redis.call('DEL', prefix .. 'task:' .. oldest)
end
redis.call('PEXPIRE', index, ttl)
redis.call('PEXPIRE', sizes, ttl)
return 0
`

/** The record as it is kept: whole, or past `MAX_RECORD_BYTES` without its result (a failure saying why). */
export const recordText = (record: TaskRecord): string => {
  const text = JSON.stringify(record)
  if (text.length <= MAX_RECORD_BYTES) return text
  const { result: _result, ...reply } = record.reply
  const mib = (text.length / 1024 / 1024).toFixed(1)
  return JSON.stringify({
    owner: record.owner,
    reply: {
      ...reply,
      status: "failed",
      error: {
        code: -32603,
        message: `the task's result (${mib} MiB) is more than the team's store keeps; the gateway that ran it has it while it runs`
      }
    }
  })
}

export const saveArguments = (prefix: string, taskId: string, record: TaskRecord, ttlMs: number, now: number) => [
  prefix,
  taskId,
  recordText(record),
  String(ttlMs),
  record.owner,
  String(now),
  String(MAX_RECORDS_PER_OWNER),
  String(MAX_BYTES_PER_OWNER)
]

const parseRecord = (value: string): TaskRecord | "none" => {
  const record = parseJson(value)
  const owner = field(record, "owner")
  const reply = field(record, "reply")
  return typeof owner === "string" && isObject(reply) ? { owner, reply } : "none"
}

/** Each record under `task:<id>`, its owner's index under `tasks-of:<owner>` and `task-bytes-of:<owner>`. */
export const layer: Layer.Layer<TaskRecords, never, RedisConnection> = Layer.effect(
  TaskRecords,
  Effect.map(RedisConnection, ({ client, run }) => ({
    save: (taskId, record, ttlMs) =>
      Effect.asVoid(run(() => client.eval(SAVE, { arguments: saveArguments(PREFIX, taskId, record, ttlMs, Date.now()) }))),
    get: (taskId) =>
      Effect.map(
        run(() => client.get(`${PREFIX}task:${taskId}`)),
        (value) => (value === undefined ? "unknown" : typeof value === "string" ? parseRecord(value) : "none")
      )
  }))
)
