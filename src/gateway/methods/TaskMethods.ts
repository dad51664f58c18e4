/**
 * The tasks extension at the aggregate and at a backend's endpoint: `tasks/get`, `result`,
 * `cancel`, `update` and `list` for this session's tasks, on their backends or the gateway's own
 * (see routing/Tasks).
 */
import { Effect } from "effect"
import type { GatewayError } from "../../protocol/Errors.js"
import type { RequestContext } from "../../jsonrpc/Peer.js"
import type { CurrentCaller } from "../call/Caller.js"
import type { Session } from "../session/Session.js"
import type { Context } from "./Context.js"
import * as Methods from "./Methods.js"
import * as Params from "./Params.js"
import * as Tasks from "../routing/Tasks.js"
import { asBackendSent } from "./Relayed.js"

/** `runTasks`: the gateway's own tasks, at the aggregate (a backend's endpoint has none). */
export const rows = (ctx: Context, session: Session, runTasks: Context["runTasks"] | undefined) => {
  const backendFacts = Tasks.factsOf(ctx.backends)
  /** What a task's methods use of the gateway: this session's requests on backends. */
  const taskDeps = (context: RequestContext): Tasks.Deps => ({
    routes: ctx.routes,
    forward: (backendId, method, params) => ctx.forward(context, backendId, method, params),
    backend: backendFacts,
    idPrefix: ctx.idPrefix(),
    elsewhere: ctx.tasksElsewhere
  })
  const onTask =
    (method: "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/update") =>
    (params: Params.TaskParams, context: RequestContext): Effect.Effect<unknown, GatewayError, CurrentCaller> =>
      Effect.mapError(Tasks.onTask(taskDeps(context), session, method, params, runTasks), (error) =>
        error._tag === "BackendError" ? asBackendSent(error) : error
      )

  return {
    "tasks/get": Methods.method(Params.TaskParams, onTask("tasks/get")),
    "tasks/result": Methods.method(Params.TaskParams, onTask("tasks/result")),
    "tasks/cancel": Methods.method(Params.TaskParams, onTask("tasks/cancel")),
    "tasks/update": Methods.method(Params.TaskParams, onTask("tasks/update")),
    "tasks/list": Methods.relayed((_params, context) => Tasks.list(taskDeps(context), session, runTasks))
  }
}
