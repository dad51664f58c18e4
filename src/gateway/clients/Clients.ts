/**
 * The gateway's clients, whatever carries them: the one consumer of the `Protocol` a transport
 * provides. It hands the transport the `Server` its clients reach: a byte stream's one client
 * (StreamConnection: its first message decides its era), a shared endpoint's sessions and
 * 2026-07-28 requests (SharedSessions: what a body is, sessions issued, found, swept, handed to
 * the gateway of the team that holds them), which endpoint a path names, the backends' readiness
 * and the sign-ins' redirects.
 */
import { Context, Effect, Layer } from "effect"
import { SessionDirectory } from "../../store/SessionDirectory.js"
import { RequestStates } from "../clientRequests/RequestStates.js"
import { TaskRecords } from "../../store/TaskRecords.js"
import { SignIns } from "../../auth/SignIns.js"
import { Backends } from "../../backend/Backends.js"
import { GatewayConfig } from "../../config/Config.js"
import { Events } from "../../observability/Events.js"
import { Gateway } from "../Gateway.js"
import { InputBridge } from "../clientRequests/InputBridge.js"
import { Launch } from "../Launch.js"
import type { Target } from "../session/Session.js"
import { Protocol, type Server } from "./Protocol.js"
import * as SharedSessions from "./SharedSessions.js"
import * as StreamConnection from "./StreamConnection.js"

/** What the sessions of a team share through its store (this process alone, without one). */
type Shared = SessionDirectory | TaskRecords | RequestStates

/** What the clients are served with. */
export type Requirements = Gateway | Backends | GatewayConfig | Launch | InputBridge | SignIns | Shared

/** What the clients see of the gateway. */
export interface Options {
  /** A byte stream's client's view: a profile's (`--profile`); the whole aggregate without. */
  readonly profile?: string | undefined
}

/** The `Server` a transport's clients reach. */
export const server = (options: Options = {}): Effect.Effect<Server, never, Requirements> =>
  Effect.gen(function* () {
    // Only the services: a connection's finalizers belong to the scope it is opened in.
    const context = (yield* Effect.context<Gateway | Backends | GatewayConfig | Launch | InputBridge | Shared>()).pipe(
      Context.pick(Gateway, Backends, Events, GatewayConfig, Launch, InputBridge, SessionDirectory, TaskRecords, RequestStates)
    )
    const backends = yield* Backends
    const config = yield* GatewayConfig
    const signIns = yield* SignIns
    return {
      signIns,
      connect: (out) => StreamConnection.open({ profile: options.profile, out }).pipe(Effect.provide(context)),
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
  })

/**
 * The transport's clients served in the current scope: returns when the transport has no more
 * to carry (a byte stream's end), or once a listener serves (it serves until the scope closes).
 */
export const run = (options: Options = {}) =>
  Effect.gen(function* () {
    const protocol = yield* Protocol
    yield* protocol.run(yield* server(options))
  })

/** `run` while the layer lives (a listener; a byte stream's transport is run in a fiber of its own). */
export const layer = (options: Options = {}): Layer.Layer<never, never, Protocol | Requirements> =>
  Layer.effectDiscard(run(options))
