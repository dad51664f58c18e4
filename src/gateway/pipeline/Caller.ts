/**
 * Who a request on a backend is made for: the session (its subject, profile, era and edge)
 * and how its user is asked. Carried by the context (`CurrentCaller`), not passed by hand: the call
 * pipeline and the forwarder read it from there, so every road to a backend (a client's call, an
 * orchestration's step, a script's call, a task, a read or a prompt) must provide one or it does
 * not compile. A session's connection provides its caller once, where its requests' engine is made
 * (each request's fiber inherits it at no cost); a task keeps the caller of the request that
 * started it; an app that embeds the gateway's layers provides its own (`CurrentCaller.nobody` for
 * calls made for no client at all). The client's request a call belongs to (where its progress
 * goes) travels with the call itself.
 */
import { Context, Effect } from "effect"
import type { Confirm } from "../../call/Vocabulary.js"
import type { Session } from "../session/Session.js"

export interface Caller {
  /** The client's session; none for an app that calls for no client. */
  readonly session: Session | undefined
  /** How the user is asked about a planned call (`confirmTools`, a flow rule); none: not asked. */
  readonly confirm?: Confirm | undefined
}

export class CurrentCaller extends Context.Service<CurrentCaller, Caller>()("mcp-agentify/CurrentCaller") {
  /** Calls made for no client (an embedding app's own): judged as `User::"local"`, audited as `embedded`. */
  static readonly nobody: Caller = { session: undefined }
  /**
   * The gateway's own requests, made for no one session: what sessions share (a subscription held
   * by several, the lists the relay caches) and its housekeeping (cancelling a task it forgot). On
   * the backend's shared connection, never on a user's lane.
   */
  static readonly gateway: Caller = { session: undefined }
}

/** `effect` made for `caller`. */
export const as =
  (caller: Caller) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, Exclude<R, CurrentCaller>> =>
    Effect.provideService(effect, CurrentCaller, caller)
