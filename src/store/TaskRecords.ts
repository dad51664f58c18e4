/**
 * Finished 2026-07-28 tasks kept where they outlive the gateway that ran them: a team's store
 * (`store/redis/Tasks`) keeps each one's owner and `tasks/get` reply for its ttl. `layerLocal`: one
 * gateway alone keeps its tasks itself (gateway/routing/RunTasks), nothing here.
 */
import { Context, Effect, Layer } from "effect"
import type { TaskRecord } from "./Contract.js"

export interface TaskRecordsService {
  /** Keeps a finished task's record for `ttlMs`. */
  readonly save: (taskId: string, record: TaskRecord, ttlMs: number) => Effect.Effect<void>
  /** A finished task's record: none when there is none, "unknown" when the store cannot say. */
  readonly get: (taskId: string) => Effect.Effect<TaskRecord | "none" | "unknown">
}

export class TaskRecords extends Context.Tag("mcp-agentify/TaskRecords")<TaskRecords, TaskRecordsService>() {
  static readonly layerLocal: Layer.Layer<TaskRecords> = Layer.succeed(TaskRecords, {
    save: () => Effect.void,
    get: () => Effect.succeed("none")
  })
}
