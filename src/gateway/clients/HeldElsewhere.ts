/**
 * A 2026-07-28 request about something another gateway of the team holds (see store/): which
 * gateway that is (the call its `requestState` resumes, the task its id names), and, once that
 * gateway is gone, what the request is answered with: what the store kept of a finished task (its
 * owner's only), else a failure saying why.
 */
import { Effect } from "effect"
import { ErrorCode } from "../../protocol/Errors.js"
import * as Replica from "../../store/Replica.js"
import type { TaskRecordsService } from "../../store/TaskRecords.js"
import { objectOr } from "../../json/Json.js"
import type { RequestStatesService } from "../clientRequests/RequestStates.js"

/** What the transport answers when the team's store cannot say where something is: 503, try again. */
export const STORE_SILENT = "store silent" as const

/** The 2026-07-28 requests about one task, which name it by its id (`params.taskId`). */
const TASK_METHODS: ReadonlySet<string> = new Set(["tasks/get", "tasks/update", "tasks/cancel", "tasks/result"])

/** The gateway of the team that holds what the request is about, when not this one. */
export const heldElsewhere = (
  config: { readonly sessionIdPrefix: string; readonly state?: unknown },
  states: RequestStatesService,
  value: unknown
): string | undefined => {
  if (Array.isArray(value)) return undefined
  const { method, params } = objectOr(value)
  const given = objectOr(params)
  if (typeof method === "string" && TASK_METHODS.has(method)) return Replica.givenElsewhere(config, given.taskId)
  return states.heldElsewhere(given.requestState)
}

/** The failure a request about a task whose gateway stopped before it finished gets. */
const failedTask = (id: unknown, method: string, taskId: string, holder: string) => {
  const message = `the gateway that ran task ${taskId} (${holder}) stopped before the task finished: it failed`
  const error = { code: ErrorCode.InternalError, message, data: { taskId } }
  const at = new Date().toISOString()
  return method === "tasks/get"
    ? {
        jsonrpc: "2.0",
        id,
        result: {
          taskId,
          status: "failed",
          statusMessage: message,
          createdAt: at,
          lastUpdatedAt: at,
          error,
          resultType: "complete"
        }
      }
    : { jsonrpc: "2.0", id, error }
}

/**
 * The reply to a request about a task whose gateway (`holder`) is gone, else undefined (it is no
 * request about a task): what the store kept of it when it finished, for its owner only.
 */
export const lostTask = (records: TaskRecordsService, value: unknown, holder: string, subject: string | undefined) =>
  Effect.gen(function* () {
    const { id, method, params } = objectOr(value)
    if (typeof method !== "string" || !TASK_METHODS.has(method)) return undefined
    const taskId = String(objectOr(params).taskId)
    const kept = yield* records.get(taskId)
    // The store cannot say now: not "failed" on that account (the client asks again).
    if (kept === "unknown") return STORE_SILENT
    if (kept === "none" || kept.owner !== `subject:${subject ?? ""}`) return failedTask(id, method, taskId, holder)
    const reply = kept.reply
    if (method === "tasks/get") return { jsonrpc: "2.0", id, result: reply }
    if (method !== "tasks/result") return { jsonrpc: "2.0", id, result: { resultType: "complete" } }
    return reply.error !== undefined
      ? { jsonrpc: "2.0", id, error: reply.error }
      : { jsonrpc: "2.0", id, result: reply.result ?? {} }
  })
