/**
 * Backends' tasks through the aggregate, in both designs:
 * - the session era's (SEP-1686): a client asks for one with `tools/call {task}`; `tasks/get`,
 *   `tasks/result`, `tasks/list`, `tasks/cancel`; status in `notifications/tasks/status`;
 * - the 2026-07-28 extension's (SEP-2663, `io.modelcontextprotocol/tasks`): the backend decides,
 *   answering `{resultType: "task", taskId, ...}` to a client that declared the extension;
 *   `tasks/get` (the result inlined), `tasks/update` (answers to its `inputRequests`), `tasks/cancel`.
 *
 * Either way the client gets an id of the gateway's instead of the backend's (see
 * `Routes.adoptTask`: it names the backend, cannot be guessed, and is good only for its owner: the
 * session that created it, or for a 2026-07-28 client its OAuth subject), and every task method
 * is routed to the backend that owns the task, ids swapped both ways.
 *
 * Where a side lacks a design the call falls back to synchronous: `task` is not sent to a backend
 * that did not declare SEP-1686 task-run tool calls, and a tool's claimed task support
 * (`execution`) is not shown for such a backend, nor to a 2026-07-28 client (SEP-1686 is not
 * theirs). A SEP-2663 backend creates tasks only for a client that declared the extension.
 */
import { Effect } from "effect"
import {
  type BackendError,
  ErrorCode,
  type GatewayError,
  InternalError,
  MissingClientCapability,
  Relayed,
  sentCode,
  TaskEnded,
  UnknownTask
} from "../../protocol/Errors.js"
import * as Mcp from "../../protocol/Mcp.js"
import { field, isObject, numberField, objectField, stringField } from "../../json/Json.js"
import * as Meta from "../../json/Meta.js"
import type { BackendsService } from "../../backend/Backends.js"
import type { RoutesService, TaskOwner, TaskRoute } from "./Routes.js"
import type { Session } from "../session/Session.js"
import type { CurrentCaller } from "../pipeline/Caller.js"
import type { RunTasks } from "./RunTasks.js"

/** What the aggregate says it can route of SEP-1686: tool calls run as tasks, their listing and cancelling. */
export const AGGREGATE_TASKS = { list: {}, cancel: {}, requests: { tools: { call: {} } } }

/** The task methods a session answers, at /mcp and at a backend's own endpoint alike. */
export const TASK_METHODS = ["tasks/get", "tasks/result", "tasks/cancel", "tasks/update", "tasks/list"] as const

/** The 2026-07-28 tasks extension. */
export const EXTENSION = "io.modelcontextprotocol/tasks"

/** The `_meta` key that ties a message to a task (SEP-1686). */
export const RELATED_TASK = "io.modelcontextprotocol/related-task"

/** Whether a backend's capabilities say it may run `tools/call` as a task (SEP-1686). */
export const runsToolCallsAsTasks = (capabilities: unknown): boolean =>
  isObject(field(field(field(field(capabilities, "tasks"), "requests"), "tools"), "call"))

/** Whether capabilities (a server's, or a 2026-07-28 client's) declare the tasks extension. */
export const declaresExtension = (capabilities: unknown): boolean => isObject(field(field(capabilities, "extensions"), EXTENSION))

/** Whether a session's client speaks the stateless era (its tasks are the extension's). */
export const statelessClient = (session: Session) => session.protocolVersion === Mcp.STATELESS_PROTOCOL_VERSION

/** Who may use the tasks a session's requests create. */
export const ownerOf = (session: Session): TaskOwner =>
  statelessClient(session) ? { key: `subject:${session.subject ?? ""}` } : { key: `session:${session.id}`, session }

/** A tool as a session sees it: without `execution` where the task support it claims would not hold. */
export const toolFor = (tool: Mcp.Tool, session: Session, backend: BackendFacts | undefined): Mcp.Tool => {
  // "forbidden" (what the SDK states for every plain tool) holds everywhere: passed as it is.
  const support = field(tool.execution, "taskSupport")
  if (support === undefined || support === "forbidden") return tool
  const holds = statelessClient(session)
    ? backend?.era === "stateless" && declaresExtension(backend.capabilities)
    : backend?.era !== "stateless" && runsToolCallsAsTasks(backend?.capabilities)
  if (holds) return tool
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
  if (isObject(related) && typeof related.taskId === "string") {
    out = Meta.merge(out, { [RELATED_TASK]: { ...related, taskId: route.id } })
  }
  return out
}

/** What the gateway knows of a running backend. */
export interface BackendFacts {
  readonly era: "session" | "stateless"
  readonly capabilities: unknown
}

/** A backend's facts as it runs now (undefined when it does not run). */
export const factsOf =
  (backends: Pick<BackendsService, "backend">) =>
  (backendId: string): BackendFacts | undefined => {
    const running = backends.backend(backendId)
    return running === undefined ? undefined : { era: running.era, capabilities: running.serverCapabilities }
  }

export interface Deps {
  readonly routes: RoutesService
  /** The session's request on a backend (see pipeline/Forwarding). */
  readonly forward: (backendId: string, method: string, params: unknown) => Effect.Effect<unknown, BackendError, CurrentCaller>
  readonly backend: (backendId: string) => BackendFacts | undefined
  /** What the ids the gateway gives start with (its `sessionIdPrefix`). */
  readonly idPrefix: string
  /** A team's word on a task another of its gateways gave (see `Elsewhere`); absent alone. */
  readonly elsewhere?: ((taskId: string) => Effect.Effect<Elsewhere | undefined>) | undefined
}

/**
 * What a team's store says of a task that another of its gateways gave, once that gateway is gone
 * (undefined: another's that lives, or not another's): what it kept when the task finished, or
 * nothing (it stopped first), or "unknown" (the store did not answer).
 */
export type Elsewhere =
  | { readonly _tag: "Kept"; readonly owner: string; readonly reply: Readonly<Record<string, unknown>> }
  | { readonly _tag: "Gone"; readonly replica: string }
  | { readonly _tag: "Unknown" }

/**
 * A session-era task method on a task whose gateway is gone (the session it was made in went with
 * it): its user's, from another session, reads what the store kept when it finished; one that
 * never finished is failed, saying why; never "working" for ever.
 */
const lost = (
  found: Elsewhere | undefined,
  session: Session,
  method: string,
  taskId: string
): Effect.Effect<unknown, GatewayError> => {
  if (found === undefined) return Effect.fail(unknownTask(taskId))
  if (found._tag === "Unknown") {
    return Effect.fail(new InternalError({ message: "the store of this team's gateways did not answer; try again" }))
  }
  if (found._tag === "Kept") {
    if (session.subject === undefined || found.owner !== `subject:${session.subject}`) return Effect.fail(unknownTask(taskId))
    const { result, error, ...task } = found.reply
    if (method === "tasks/get") return Effect.succeed(task)
    if (method === "tasks/result") {
      return isObject(error)
        ? Effect.fail(
            new Relayed({ from: "store", code: sentCode(Number(error.code)), message: String(error.message), data: error.data })
          )
        : Effect.succeed(result ?? {})
    }
    return Effect.fail(new TaskEnded({ taskId }))
  }
  const message = `the gateway that ran task ${taskId} (${found.replica}) stopped before the task finished: it failed`
  // When it was made died with its gateway: a task as SEP-1686 states one all the same.
  const at = new Date().toISOString()
  if (method === "tasks/get") {
    return Effect.succeed({ taskId, status: "failed", statusMessage: message, createdAt: at, lastUpdatedAt: at, ttl: null })
  }
  return Effect.fail(new InternalError({ message, data: { taskId } }))
}

/**
 * Whether a `tools/call` on a backend needs this module (the rest is the passthrough hot path):
 * the client asked for a task, or the backend may create one of the extension's on its own.
 */
export const concerns = (params: Readonly<Record<string, unknown>>, backend: BackendFacts | undefined): boolean =>
  params.task !== undefined || (backend?.era === "stateless" && declaresExtension(backend.capabilities))

/** A backend's answer to a call, its task (of either design) adopted for the session's owner. */
const adopted = (deps: Deps, session: Session, backendId: string, result: unknown): unknown => {
  const nested = objectField(result, "task")
  const taskId =
    stringField(nested, "taskId") ?? (field(result, "resultType") === "task" ? stringField(result, "taskId") : undefined)
  // A backend may still answer at once: its result goes as it is.
  if (taskId === undefined) return result
  const ttl = numberField(nested, "ttl") ?? numberField(result, "ttlMs")
  return toClient(deps.routes.adoptTask(ownerOf(session), backendId, taskId, ttl, deps.idPrefix), result)
}

/**
 * A client's `tools/call` on a backend that `concerns` this module: a SEP-1686 task where both
 * sides have them, a SEP-2663 task where the backend creates one, else synchronously (without
 * the `task` param where the backend would take it for SEP-1686's).
 */
export const callTool = (
  deps: Deps,
  session: Session,
  backendId: string,
  params: Readonly<Record<string, unknown>>
): Effect.Effect<unknown, GatewayError, CurrentCaller> => {
  const backend = deps.backend(backendId)
  const sessionTasks = !statelessClient(session) && backend?.era !== "stateless" && runsToolCallsAsTasks(backend?.capabilities)
  const keepsTask = sessionTasks || backend?.era === "stateless"
  const { task: _task, ...synchronous } = params
  return Effect.map(deps.forward(backendId, "tools/call", keepsTask ? params : synchronous), (result) =>
    adopted(deps, session, backendId, result)
  )
}

const unknownTask = (taskId: string) => new UnknownTask({ taskId })

/** -32021: a 2026-07-28 client that did not declare the extension has no task methods. */
const extensionMissing = () =>
  new MissingClientCapability({
    message: `Missing required client capability: extension ${EXTENSION}`,
    requiredCapabilities: { extensions: { [EXTENSION]: {} } }
  })

/** Whether a session's request runs the gateway's own work as a task (see RunTasks). */
export const wantsTask = (session: Session): boolean => statelessClient(session) && declaresExtension(session.clientCapabilities)

/** A task method on one of the owner's tasks: the gateway's own, or at its backend. */
export const onTask = (
  deps: Deps,
  session: Session,
  method: string,
  params: { readonly taskId: string } & Readonly<Record<string, unknown>>,
  own: RunTasks | undefined
): Effect.Effect<unknown, GatewayError, CurrentCaller> => {
  if (statelessClient(session) && !declaresExtension(session.clientCapabilities)) return Effect.fail(extensionMissing())
  if (own !== undefined && own.owns(params.taskId)) {
    const owner = ownerOf(session)
    if (method === "tasks/get") return own.get(owner, params.taskId)
    if (method === "tasks/update") return own.update(owner, params.taskId, params.inputResponses)
    if (method === "tasks/cancel") return own.cancel(owner, params.taskId)
    if (method === "tasks/result") return own.result(owner, params.taskId)
    return Effect.fail(unknownTask(params.taskId))
  }
  const route = deps.routes.task(ownerOf(session), params.taskId)
  if (route === undefined) {
    // Another gateway's, of a team: the 2026-07-28 era's are handed to it before they reach here.
    if (deps.elsewhere === undefined || statelessClient(session)) return Effect.fail(unknownTask(params.taskId))
    return Effect.flatMap(deps.elsewhere(params.taskId), (found) => lost(found, session, method, params.taskId))
  }
  return Effect.map(deps.forward(route.backendId, method, { ...params, taskId: route.backendTaskId }), (result) =>
    toClient(route, result)
  )
}

/**
 * `tasks/list` (SEP-1686): the session's own tasks, each as its backend (or the gateway) states it now (a task its
 * backend no longer has is forgotten). One page: an owner has at most `MAX_TASKS_PER_SESSION`.
 */
export const list = (deps: Deps, session: Session, own: RunTasks | undefined): Effect.Effect<unknown, never, CurrentCaller> =>
  Effect.map(
    Effect.forEach(
      deps.routes.tasksOf(ownerOf(session)),
      (route) =>
        deps.forward(route.backendId, "tasks/get", { taskId: route.backendTaskId }).pipe(
          Effect.map((task) => [
            toClient(
              route,
              Meta.without(task, () => true)
            )
          ]),
          Effect.catch((error) => {
            // The backend says it has no such task any more: so does the gateway.
            if (field(field(error, "detail"), "code") === ErrorCode.InvalidParams) deps.routes.forgetTask(route)
            return Effect.succeed([])
          })
        ),
      { concurrency: 4 }
    ),
    // The gateway's own (orchestrations and scripts run as tasks) after its backends'.
    (tasks) => ({ tasks: [...tasks.flat(), ...(own === undefined ? [] : own.list(ownerOf(session)))] })
  )
