/**
 * Finished 2026-07-28 tasks kept where they outlive the gateway that ran them: a team's store
 * (`layer`) keeps each one's owner and `tasks/get` reply for its ttl under `task:<id>`, bounded per
 * owner as the gateway bounds its own (see gateway/routing/RunTasks): past `MAX_RECORDS_PER_OWNER`
 * or `MAX_BYTES_PER_OWNER` the owner's oldest go as the new one is kept (a group of the store's
 * values, see store/Driver). A record over `MAX_RECORD_BYTES` is kept without its result, saying
 * so: one session's flood of large results fills no store. `layerLocal`: one gateway alone keeps
 * its tasks itself (gateway/routing/RunTasks), nothing here.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { TaskRecord } from "./Contract.js"
import { StoreDriver, type StoreDriverService } from "./Driver.js"
import { field, isObject, parseJson } from "../json/Json.js"

export const MAX_RECORDS_PER_OWNER = 100
export const MAX_BYTES_PER_OWNER = 64 * 1024 * 1024
export const MAX_RECORD_BYTES = 8 * 1024 * 1024

export interface TaskRecordsService {
  /** Keeps a finished task's record for `ttlMs`. */
  readonly save: (taskId: string, record: TaskRecord, ttlMs: number) => Effect.Effect<void>
  /** A finished task's record: none when there is none, "unknown" when the store cannot say. */
  readonly get: (taskId: string) => Effect.Effect<TaskRecord | "none" | "unknown">
}

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

const parseRecord = (value: string): TaskRecord | "none" => {
  const record = parseJson(value)
  const owner = field(record, "owner")
  const reply = field(record, "reply")
  return typeof owner === "string" && isObject(reply) ? { owner, reply } : "none"
}

const team = ({ values }: StoreDriverService): TaskRecordsService => ({
  save: (taskId, record, ttlMs) =>
    Effect.ignore(
      values.set(`task:${taskId}`, recordText(record), ttlMs, {
        name: `tasks:${record.owner}`,
        maxEntries: MAX_RECORDS_PER_OWNER,
        maxBytes: MAX_BYTES_PER_OWNER
      })
    ),
  get: (taskId) =>
    values.get(`task:${taskId}`).pipe(
      Effect.map(Option.match({ onNone: () => "none" as const, onSome: parseRecord })),
      Effect.catchTag("StoreUnavailable", () => Effect.succeed("unknown" as const))
    )
})

export class TaskRecords extends Context.Service<TaskRecords, TaskRecordsService>()("mcp-agentify/TaskRecords") {
  static readonly layerLocal: Layer.Layer<TaskRecords> = Layer.succeed(TaskRecords, {
    save: () => Effect.void,
    get: () => Effect.succeed("none")
  })
  /** In the team's store, through its driver. */
  static readonly layer: Layer.Layer<TaskRecords, never, StoreDriver> = Layer.effect(TaskRecords, Effect.map(StoreDriver, team))
}
