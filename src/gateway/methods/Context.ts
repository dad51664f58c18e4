/** What the method tables need from the process-wide Gateway (it builds one for all its sessions). */
import type { Effect } from "effect"
import type { BackendsService } from "../../backend/Backends.js"
import type { GatewayConfig, Profile } from "../../config/Config.js"
import type { LaunchService } from "../Launch.js"
import type { BackendError } from "../../protocol/Errors.js"
import type { Orchestrator } from "../../orchestration/Orchestrator.js"
import type { CallPipelineService } from "../call/Pipeline.js"
import type { RequestContext } from "../../jsonrpc/Peer.js"
import type { Mode } from "../session/Sessions.js"
import type { Relay } from "./Relay.js"
import type { Session } from "../session/Session.js"
import type { CurrentCaller } from "../call/Caller.js"
import type { ForwarderService } from "../call/Forwarding.js"
import type * as Tasks from "../routing/Tasks.js"
import type * as RunTasks from "../routing/RunTasks.js"
import type * as Audit from "../call/Audit.js"
import type { RoutesService } from "../routing/Routes.js"
import type * as PolicyChecks from "../call/PolicyChecks.js"

export interface Context {
  readonly mode: Mode
  readonly config: GatewayConfig["Type"]
  readonly backends: BackendsService
  /** Where the backends start (a single client's start with its `initialize`). */
  readonly launch: LaunchService
  readonly orchestrator: Orchestrator["Type"]
  /** The backends' resources, prompts and completion, merged and routed. */
  readonly relay: Relay
  /**
   * The profile a session is served (`/profiles/<name>/mcp`, `--profile`), as configured now;
   * undefined for the whole aggregate. A profile a reload removed admits nothing.
   */
  readonly profileOf: (session: Session) => Profile | undefined
  /** The routing tables (the aggregate's tasks are routed by them). */
  readonly routes: RoutesService
  /** The gateway's own tasks: orchestrations and scripts run for a client of the tasks extension. */
  readonly runTasks: RunTasks.RunTasks
  /** The audit log (off unless configured). */
  readonly audit: Audit.AuditService
  /** What the ids the gateway gives (sessions, tasks) start with: its `sessionIdPrefix`. */
  readonly idPrefix: () => string
  /** A team's word on a task another of its gateways gave (see routing/Tasks); absent alone. */
  readonly tasksElsewhere?: Tasks.Deps["elsewhere"]
  /** The road of every tool call on a backend (see call/Pipeline). */
  readonly pipeline: CallPipelineService
  /** The policies in force (`policies`), asked before the gateway's own work, reads and listings. */
  readonly policies: PolicyChecks.Settings
  /** A request on a backend for the current caller's request: progress and log messages follow it. */
  readonly forward: ForwarderService["forward"]
  /**
   * `resources/subscribe` or `unsubscribe` of a session on a backend: recorded, so the backend's
   * `notifications/resources/updated` reach only the sessions that subscribed, and passed on only
   * when it changes whether any session holds the URI.
   */
  readonly subscription: (
    session: Session,
    context: RequestContext,
    backendId: string,
    method: "resources/subscribe" | "resources/unsubscribe",
    params: unknown
  ) => Effect.Effect<unknown, BackendError, CurrentCaller>
}
