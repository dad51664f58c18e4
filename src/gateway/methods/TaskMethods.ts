/**
 * The tasks extension at the aggregate and at a backend's endpoint: `tasks/get`, `result`,
 * `cancel`, `update` and `list` for this session's tasks, on their backends or the gateway's own
 * (see routing/Tasks).
 */
import { Context, Effect, Layer } from "effect"
import type { GatewayError } from "../../protocol/Errors.js"
import type { RequestContext } from "../../jsonrpc/Peer.js"
import type { CurrentCaller } from "../pipeline/Caller.js"
import type { Session } from "../session/Session.js"
import { Backends, type BackendsService } from "../../backend/Backends.js"
import { type GatewayConfig, inForce, type ResolvedConfig } from "../../config/Config.js"
import { givenElsewhere, idPrefixOf } from "../../store/Replica.js"
import { SessionDirectory, type SessionDirectoryService } from "../../store/SessionDirectory.js"
import { TaskRecords, type TaskRecordsService } from "../../store/TaskRecords.js"
import { Forwarder, type ForwarderService } from "../pipeline/Forwarding.js"
import { Routes, type RoutesService } from "../routing/Routes.js"
import type * as RunTasks from "../routing/RunTasks.js"
import * as Methods from "./Methods.js"
import * as Params from "./Params.js"
import * as Tasks from "../routing/Tasks.js"
import { asBackendSent } from "./RelayedFailure.js"

/** What a session's tasks use of the gateway. */
export interface Deps {
  readonly backends: BackendsService
  readonly routes: RoutesService
  readonly forward: ForwarderService["forward"]
  /** What the ids the gateway gives start with: its `sessionIdPrefix`. */
  readonly idPrefix: () => string
  /** A team's word on a task another of its gateways gave (see routing/Tasks). */
  readonly tasksElsewhere: Tasks.Deps["elsewhere"]
}

/**
 * A task another gateway of the team gave: unknown while its gateway lives (the client is sent
 * there), its record once it is gone.
 */
const tasksElsewhereOf =
  (current: () => ResolvedConfig, directory: SessionDirectoryService, records: TaskRecordsService): Tasks.Deps["elsewhere"] =>
  (taskId) =>
    Effect.gen(function* () {
      const replica = givenElsewhere(current(), taskId)
      if (replica === undefined) return undefined
      const at = yield* directory.addressOf(replica)
      if (at === "unknown") return { _tag: "Unknown" } as const
      if (at !== "none") return undefined
      const kept = yield* records.get(taskId)
      if (kept === "unknown") return { _tag: "Unknown" } as const
      return kept === "none" ? ({ _tag: "Gone", replica } as const) : ({ _tag: "Kept", ...kept } as const)
    })

/** `runTasks`: the gateway's own tasks, at the aggregate (a backend's endpoint has none). */
export const rows = (ctx: Deps, session: Session, runTasks: RunTasks.RunTasks | undefined) => {
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

export class TaskRows extends Context.Service<
  TaskRows,
  { readonly rows: (session: Session, runTasks: RunTasks.RunTasks | undefined) => ReturnType<typeof rows> }
>()("mcp-agentify/TaskRows") {
  /** Built from the services it uses (its layer, or the gateway's methods layer: see Gateway). */
  static readonly make: Effect.Effect<
    TaskRows["Service"],
    never,
    GatewayConfig | Backends | Routes | Forwarder | SessionDirectory | TaskRecords
  > = Methods.rowsOf(
    Effect.gen(function* () {
      const current = yield* inForce
      return {
        backends: yield* Backends,
        routes: yield* Routes,
        forward: (yield* Forwarder).forward,
        idPrefix: () => idPrefixOf(current()),
        tasksElsewhere: tasksElsewhereOf(current, yield* SessionDirectory, yield* TaskRecords)
      }
    }),
    rows
  )
  static readonly layer: Layer.Layer<
    TaskRows,
    never,
    GatewayConfig | Backends | Routes | Forwarder | SessionDirectory | TaskRecords
  > = Layer.effect(TaskRows, TaskRows.make)
}
