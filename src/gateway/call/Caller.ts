/**
 * Who a request on a backend is made for: the session (its subject, profile, era and transport),
 * the client's request it belongs to, and how its user is asked. Carried by the context
 * (`CurrentCaller`), not passed by hand: the call pipeline and the forwarder read it from there,
 * so every road to a backend (a client's call, an orchestration's step, a script's call, a task,
 * a read or a prompt) must provide one or it does not compile. Each inbound request provides its
 * session's; an app that embeds the gateway's layers provides its own (`CurrentCaller.nobody` for
 * calls made for no client at all).
 */
import { Context, Effect } from "effect"
import type { RequestContext } from "../../jsonrpc/Peer.js"
import type { Confirm } from "../../orchestration/Steps.js"
import type { Session } from "../session/Session.js"

export interface Caller {
  /** The client's session; none for an app that calls for no client. */
  readonly session: Session | undefined
  /** The client's request (its progress and log messages travel with it). */
  readonly context: RequestContext | undefined
  /** How the user is asked about a planned call (`confirmTools`, a flow rule); none: not asked. */
  readonly confirm?: Confirm | undefined
}

export class CurrentCaller extends Context.Tag("mcp-agentify/CurrentCaller")<CurrentCaller, Caller>() {
  /** Calls made for no client (an embedding app's own): judged as `User::"local"`, audited as `embedded`. */
  static readonly nobody: Caller = { session: undefined, context: undefined }
}

/** `effect` made for `caller`. */
export const as =
  (caller: Caller) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, Exclude<R, CurrentCaller>> =>
    Effect.provideService(effect, CurrentCaller, caller)
