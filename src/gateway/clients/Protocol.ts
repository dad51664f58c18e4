/**
 * MCP behind the transports, in the manner of Effect's `RpcServer.Protocol`: a transport frames
 * and carries, and this service owns what MCP makes of the frames (a connection's era, the
 * sessions and their idle sweep, where the backends start, which endpoint a path names). A
 * transport asks it for a connection (a byte stream's one client) or for the sessions of a shared
 * endpoint, and knows nothing of the gateway behind it.
 */
import { Context, Effect, Layer, type Scope } from "effect"
import { SessionDirectory } from "../../store/SessionDirectory.js"
import { RequestStates } from "../clientRequests/RequestStates.js"
import { TaskRecords } from "../../store/TaskRecords.js"
import { SignIns, type SignInsService } from "../../auth/SignIns.js"
import { Backends } from "../../backend/Backends.js"
import { GatewayConfig } from "../../config/Config.js"
import { Events } from "../../observability/Events.js"
import { Gateway } from "../Gateway.js"
import { InputBridge } from "../clientRequests/InputBridge.js"
import { Launch } from "../Launch.js"
import type { Target } from "../session/Session.js"
import * as SharedSessions from "./SharedSessions.js"
import * as StreamConnection from "./StreamConnection.js"

export type { Target } from "../session/Session.js"
export { CALLBACK_PATH } from "../../auth/SignIns.js"
export type { StreamConnection } from "./StreamConnection.js"
export type { Arrival, Body, Delivery, Refused, SharedSessions, Stream } from "./SharedSessions.js"
export { STORE_SILENT_REFUSAL } from "./SharedSessions.js"
/** How long requests in flight at shutdown may finish on their own (each still replies). */
export const STOP_GRACE_MS = SharedSessions.STOP_GRACE_MS

/** Every enabled backend's state, for a readiness probe. */
export interface Readiness {
  readonly ready: boolean
  readonly backends: ReadonlyArray<{ readonly id: string; readonly state: string; readonly lastError?: string }>
}

export interface ProtocolService {
  /** One client on a byte stream, for the current scope: closing it stops the backends. */
  readonly stream: (options: StreamConnection.Options) => Effect.Effect<StreamConnection.StreamConnection, never, Scope.Scope>
  /** The sessions of a shared endpoint, for the current scope: closing it ends them. */
  readonly shared: Effect.Effect<SharedSessions.SharedSessions, never, Scope.Scope>
  /** The endpoint `/servers/<name>/mcp` or `/profiles/<name>/mcp` names as configured now, or why none. */
  readonly targetOf: (kind: "servers" | "profiles", name: string) => Effect.Effect<Target | { readonly notFound: string }>
  readonly readiness: Effect.Effect<Readiness>
  /**
   * Sign-ins the gateway asks its users for (a step-up): a listener says where it is reachable,
   * and hands over the authorization server's redirects (`/oauth/callback`).
   */
  readonly signIns: Pick<SignInsService, "callbacksAt" | "callback">
}

/** What the sessions of a team share through its store (this process alone, without one). */
type Shared = SessionDirectory | TaskRecords | RequestStates

export class Protocol extends Context.Service<Protocol, ProtocolService>()("mcp-agentify/Protocol") {
  static readonly layer: Layer.Layer<
    Protocol,
    never,
    Gateway | Backends | GatewayConfig | Launch | InputBridge | SignIns | Shared
  > = Layer.effect(
    Protocol,
    Effect.gen(function* () {
      // Only the services: a connection's finalizers belong to the scope it is opened in, not the layer's.
      const context = (yield* Effect.context<Gateway | Backends | GatewayConfig | Launch | InputBridge | Shared>()).pipe(
        Context.pick(Gateway, Backends, Events, GatewayConfig, Launch, InputBridge, SessionDirectory, TaskRecords, RequestStates)
      )
      const backends = yield* Backends
      const config = yield* GatewayConfig
      const signIns = yield* SignIns
      const service: ProtocolService = {
        signIns,
        stream: (options) => StreamConnection.open(options).pipe(Effect.provide(context)),
        shared: SharedSessions.make.pipe(Effect.provide(context)),
        targetOf: (kind, name) =>
          kind === "servers"
            ? Effect.sync(() =>
                backends.configOf(name) === undefined
                  ? { notFound: `Not Found: no backend '${name.slice(0, 64)}' is configured` }
                  : { _tag: "Backend", backendId: name }
              )
            : Effect.map(config.current, ({ profiles }): Target | { notFound: string } => {
                if (Object.hasOwn(profiles, name)) return { _tag: "Aggregate", profile: name }
                const known = Object.keys(profiles)
                return {
                  notFound: `Not Found: no profile '${name.slice(0, 64)}' is configured (${known.length === 0 ? "there are none" : `there are: ${known.join(", ")}`})`
                }
              }),
        readiness: Effect.map(backends.states, (states) => {
          const enabled = states.filter((s) => s.enabled)
          return {
            // One waiting for its first use is as ready as a running one: a request starts it.
            ready: enabled.every((s) => s.state === "ready" || s.state === "idle"),
            backends: enabled.map((s) => ({
              id: s.id,
              state: s.state,
              ...(s.lastError === undefined ? {} : { lastError: s.lastError })
            }))
          }
        })
      }
      return service
    })
  )
}
