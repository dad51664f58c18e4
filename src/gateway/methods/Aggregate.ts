/**
 * The aggregate's method table: what each JSON-RPC method does for one session of the gateway's
 * own surface (`agentify_orchestrate`, code mode, every backend's tools namespaced, resources,
 * prompts, tasks). One backend served as itself (`/servers/<id>/mcp`) is `BackendEndpoint`'s table.
 *
 * It knows nothing of stdio or HTTP, and nothing process-wide lives here. The rows are each
 * concern's, each a service its layer wires from what it uses: the session's own methods
 * (SessionMethods), tools (ToolMethods, with the gateway's own work in OwnTools), the backends'
 * resources, prompts and completion (ContentMethods), tasks (TaskMethods), over what the session
 * may see (View); the lifecycle rules both tables keep are in Lifecycle. `AggregateMethods.layer`
 * composes them; the Gateway opens a session's table with it.
 */
import { Context, Effect, Layer } from "effect"
import { type GatewayError, MethodNotFound } from "../../protocol/Errors.js"
import type { Notification, Request } from "../../jsonrpc/JsonRpc.js"
import type { Handlers, RequestContext } from "../../jsonrpc/Peer.js"
import { outOfPhase } from "./Lifecycle.js"
import * as Methods from "./Methods.js"
import type { Session } from "../session/Session.js"
import type { CurrentCaller } from "../pipeline/Caller.js"
import * as Tasks from "../routing/Tasks.js"
import { OwnTasks } from "../routing/RunTasks.js"
import * as View from "./View.js"
import * as SessionMethods from "./SessionMethods.js"
import * as ToolMethods from "./ToolMethods.js"
import * as ContentMethods from "./ContentMethods.js"
import * as TaskMethods from "./TaskMethods.js"
export type { Mode } from "../session/Sessions.js"
export { AGGREGATE_CAPABILITIES, INSTRUCTIONS, SERVER_NAME, SERVER_VERSION } from "./SessionMethods.js"
export { asBackendSent, type SubscriptionMethod } from "./RelayedFailure.js"

/** The methods the aggregate answers itself (its table must have exactly these rows). */
export const AGGREGATE_METHODS = [
  "initialize",
  "ping",
  "shutdown",
  "tools/list",
  "tools/call",
  "agentify/orchestrateTask",
  "resources/list",
  "resources/templates/list",
  "prompts/list",
  "resources/read",
  "resources/subscribe",
  "resources/unsubscribe",
  "prompts/get",
  "completion/complete",
  "logging/setLevel",
  ...Tasks.TASK_METHODS
] as const
type AggregateMethod = (typeof AGGREGATE_METHODS)[number]

const unknownMethod = (request: Request) => Effect.fail(methodNotFound(request.method))
const ignored = (n: Notification) => Effect.logDebug("ignoring notification", { method: n.method })

const methodNotFound = (method: string) => new MethodNotFound({ message: `Method not found: ${method}` })

/** Each concern's rows, from its service. */
interface Rows {
  readonly views: View.ViewsService
  readonly session: SessionMethods.SessionRows["Service"]
  readonly tools: ToolMethods.ToolRows["Service"]
  readonly content: ContentMethods.ContentRows["Service"]
  readonly tasks: TaskMethods.TaskRows["Service"]
  readonly runTasks: OwnTasks["Service"]
}

/** The gateway's own surface for one session: the rows of each concern, in one table. */
const aggregate = (rows: Rows, session: Session, onExit: Effect.Effect<void>): Handlers<CurrentCaller> => {
  const view = rows.views.of(session)
  const methods = Methods.table({
    ...rows.session.rows(session, view),
    ...rows.tools.rows(session, view),
    ...rows.content.rows(session, view),
    ...rows.tasks.rows(session, rows.runTasks)
  } satisfies Record<AggregateMethod, Methods.Method<CurrentCaller>>)

  const request = (req: Request, context: RequestContext): Effect.Effect<unknown, GatewayError, CurrentCaller> => {
    const refused = outOfPhase(session, req.method)
    if (refused !== undefined) return Effect.fail(refused)
    return Methods.run(methods, req, context, unknownMethod)
  }

  const notifications = Methods.notifications({
    "notifications/initialized": () => Effect.logDebug("client initialized", { session: session.id }),
    initialized: () => Effect.logDebug("client initialized", { session: session.id }),
    exit: () => Effect.andThen(Effect.logInfo("exit requested", { session: session.id }), onExit)
  })

  const notification = (n: Notification): Effect.Effect<void> => Methods.notify(notifications, n, ignored)

  return { request, notification }
}

export class AggregateMethods extends Context.Service<
  AggregateMethods,
  { readonly open: (session: Session, onExit: Effect.Effect<void>) => Handlers<CurrentCaller> }
>()("mcp-agentify/AggregateMethods") {
  /** Over the concerns' rows (a test may provide any of them itself). */
  /** Built from the services it uses (its layer, or the gateway's methods layer: see Gateway). */
  static readonly make: Effect.Effect<
    AggregateMethods["Service"],
    never,
    View.Views | SessionMethods.SessionRows | ToolMethods.ToolRows | ContentMethods.ContentRows | TaskMethods.TaskRows | OwnTasks
  > = Effect.gen(function* () {
    const rows: Rows = {
      views: yield* View.Views,
      session: yield* SessionMethods.SessionRows,
      tools: yield* ToolMethods.ToolRows,
      content: yield* ContentMethods.ContentRows,
      tasks: yield* TaskMethods.TaskRows,
      runTasks: yield* OwnTasks
    }
    return { open: (session, onExit) => aggregate(rows, session, onExit) }
  })
  static readonly layer: Layer.Layer<
    AggregateMethods,
    never,
    View.Views | SessionMethods.SessionRows | ToolMethods.ToolRows | ContentMethods.ContentRows | TaskMethods.TaskRows | OwnTasks
  > = Layer.effect(AggregateMethods, AggregateMethods.make)
}
