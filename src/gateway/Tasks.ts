/**
 * Tasks of the session era (SEP-1686) through the aggregate. A backend that runs `tools/call` as a
 * task answers with the task's id; the client gets an id of the gateway's instead (see
 * `Routes.adoptTask`: it names the backend, cannot be guessed, and is good for the session that
 * created the task only), and `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/list` are
 * routed to the backend that owns each task, with ids swapped both ways. Status notifications find
 * the task's session the same way.
 *
 * Where a side lacks tasks the call falls back to synchronous: the `task` param is not sent to a
 * backend that did not declare task-run tool calls, and a tool's `execution` is not shown to a
 * client of the stateless era (whose tasks are another extension) nor for such a backend.
 */
import { Effect } from "effect"
import { type BackendError, ErrorCode, RpcError } from "../protocol/Errors.js"
import * as Mcp from "../protocol/Mcp.js"
import { field, isObject, numberField, objectField, stringField } from "../data/Json.js"
import * as Meta from "../data/Meta.js"
import type { RoutesService, TaskRoute } from "./Routes.js"
import type { Session } from "./Session.js"

/** What the aggregate says it can route: tool calls run as tasks, their listing and cancelling. */
export const AGGREGATE_TASKS = { list: {}, cancel: {}, requests: { tools: { call: {} } } }

/** The `_meta` key that ties a message to a task. */
export const RELATED_TASK = "io.modelcontextprotocol/related-task"

/** Whether a backend's capabilities say it may run `tools/call` as a task. */
export const runsToolCallsAsTasks = (capabilities: unknown): boolean =>
  isObject(field(field(field(field(capabilities, "tasks"), "requests"), "tools"), "call"))

/** Whether a session's client speaks the stateless era (its tasks are not SEP-1686's). */
const statelessClient = (session: Session) => session.protocolVersion === Mcp.STATELESS_PROTOCOL_VERSION

/** A tool as a session sees it: without `execution` where the task support it claims would not hold. */
export const toolFor = (tool: Mcp.Tool, session: Session, backendCapabilities: unknown): Mcp.Tool => {
  // "forbidden" (what the SDK states for every plain tool) holds everywhere: passed as it is.
  const support = field(tool.execution, "taskSupport")
  if (support === undefined || support === "forbidden") return tool
  if (!statelessClient(session) && runsToolCallsAsTasks(backendCapabilities)) return tool
  const { execution: _execution, ...rest } = tool
  return rest
}

/** The task id `value` carries (a task, a CreateTaskResult, a related-task `_meta`) as the client knows it. */
export const toClient = (route: TaskRoute, value: unknown): unknown => {
  if (!isObject(value)) return value
  let out: Record<string, unknown> = value
  if (typeof value.taskId === "string") out = { ...out, taskId: route.id }
  const task = objectField(value, "task")
  if (task !== undefined && typeof task.taskId === "string") out = { ...out, task: { ...task, taskId: route.id } }
  const related = Meta.get(value, RELATED_TASK)
  if (isObject(related) && typeof related.taskId === "string")
    out = Meta.merge(out, { [RELATED_TASK]: { ...related, taskId: route.id } })
  return out
}

export interface Deps {
  readonly routes: RoutesService
  /** The session's request on a backend (see Server.Context.forward). */
  readonly forward: (backendId: string, method: string, params: unknown) => Effect.Effect<unknown, BackendError | RpcError>
  /** The capabilities a backend declared, if it is running. */
  readonly capabilitiesOf: (backendId: string) => unknown
}

/**
 * A client's `tools/call` on a backend, `task` param and all: run as a task where the backend runs
 * them (its task adopted), else synchronously without the param.
 */
export const callTool = (
  deps: Deps,
  session: Session,
  backendId: string,
  params: Readonly<Record<string, unknown>>
): Effect.Effect<unknown, BackendError | RpcError> => {
  if (params.task === undefined) return deps.forward(backendId, "tools/call", params)
  if (statelessClient(session) || !runsToolCallsAsTasks(deps.capabilitiesOf(backendId))) {
    const { task: _task, ...synchronous } = params
    return deps.forward(backendId, "tools/call", synchronous)
  }
  return Effect.map(deps.forward(backendId, "tools/call", params), (result) => {
    const task = objectField(result, "task")
    const taskId = stringField(task, "taskId")
    // A backend may still answer at once: its result goes as it is.
    if (taskId === undefined) return result
    return toClient(deps.routes.adoptTask(session, backendId, taskId, numberField(task, "ttl")), result)
  })
}

const unknownTask = (taskId: string) =>
  new RpcError({ code: ErrorCode.InvalidParams, message: `Unknown task: ${taskId}`, data: { taskId } })

/** `tasks/get`, `tasks/result` or `tasks/cancel` of one of the session's tasks, at its backend. */
export const onTask = (
  deps: Deps,
  session: Session,
  method: "tasks/get" | "tasks/result" | "tasks/cancel",
  params: { readonly taskId: string } & Readonly<Record<string, unknown>>
): Effect.Effect<unknown, BackendError | RpcError> => {
  const route = deps.routes.task(session, params.taskId)
  if (route === undefined) return Effect.fail(unknownTask(params.taskId))
  return Effect.map(deps.forward(route.backendId, method, { ...params, taskId: route.backendTaskId }), (result) =>
    toClient(route, result)
  )
}

/**
 * `tasks/list`: the session's own tasks, each as its backend states it now (a task its backend no
 * longer has is forgotten). One page: a session has at most `MAX_TASKS_PER_SESSION`.
 */
export const list = (deps: Deps, session: Session): Effect.Effect<unknown> =>
  Effect.map(
    Effect.forEach(
      deps.routes.tasksOf(session),
      (route) =>
        deps.forward(route.backendId, "tasks/get", { taskId: route.backendTaskId }).pipe(
          Effect.map((task) => [
            toClient(
              route,
              Meta.without(task, () => true)
            )
          ]),
          Effect.catchAll((error) => {
            // The backend says it has no such task any more: so does the gateway.
            if (field(field(error, "detail"), "code") === ErrorCode.InvalidParams) deps.routes.forgetTask(route)
            return Effect.succeed([])
          })
        ),
      { concurrency: 4 }
    ),
    (tasks) => ({ tasks: tasks.flat() })
  )
