/**
 * What a transport provides, in the manner of Effect's `RpcServer.Protocol`: a transport module
 * (transport/Stdio, transport/Http) frames and carries, and provides this service; the gateway's
 * clients (gateway/clients/Clients, the one consumer) run it with the `Server` its clients reach.
 * A connection or a request arrives with what the transport knows of it (its headers, who sent it)
 * as opaque data, and everything its client is sent goes back through the outbox the transport
 * gave. What a message is (its era, a session, a session's id, a hand-off's meaning) is decided
 * behind `Server`, never by the transport. A new transport is one module and one layer of this
 * service.
 */
import { Context, type Effect, type Scope } from "effect"
import type { SignInsService } from "../../auth/SignIns.js"
import type * as Peer from "../../jsonrpc/Peer.js"
import type { Target } from "../session/Session.js"
import type { SharedSessions } from "./SharedSessions.js"
import type { StreamConnection } from "./StreamConnection.js"
export type { Target } from "../session/Session.js"
export { CALLBACK_PATH } from "../../auth/SignIns.js"
export type { StreamConnection } from "./StreamConnection.js"
export type { Arrival, Body, Delivery, Refused, SharedSessions, Stream } from "./SharedSessions.js"
export { STOP_GRACE_MS, STORE_SILENT_REFUSAL } from "./SharedSessions.js"

/** Every enabled backend's state, for a readiness probe. */
export interface Readiness {
  readonly ready: boolean
  readonly backends: ReadonlyArray<{ readonly id: string; readonly state: string; readonly lastError?: string }>
}

/** What a transport's clients reach: the gateway's clients, as a transport sees them. */
export interface Server {
  /**
   * A client on a connection of its own (a byte stream), for the current scope: everything it is
   * sent goes to `out`, in the transport's framing; closing the scope stops the backends.
   */
  readonly connect: (out: Peer.Outbox) => Effect.Effect<StreamConnection, never, Scope.Scope>
  /** The clients of a shared endpoint, for the current scope: closing it ends them. */
  readonly shared: Effect.Effect<SharedSessions, never, Scope.Scope>
  /** The endpoint `/servers/<name>/mcp` or `/profiles/<name>/mcp` names as configured now, or why none. */
  readonly targetOf: (kind: "servers" | "profiles", name: string) => Effect.Effect<Target | { readonly notFound: string }>
  readonly readiness: Effect.Effect<Readiness>
  /**
   * Sign-ins the gateway asks its users for (a step-up): a listener says where it is reachable,
   * and hands over the authorization server's redirects (`/oauth/callback`).
   */
  readonly signIns: Pick<SignInsService, "callbacksAt" | "callback">
}

export interface ProtocolService {
  /**
   * Carries the transport's clients to `server` in the current scope. Returns when there is no
   * more to carry (a byte stream's end of input, or `exit`); a listener returns once it serves,
   * and serves until the scope closes.
   */
  readonly run: (server: Server) => Effect.Effect<void, never, Scope.Scope>
}

export class Protocol extends Context.Service<Protocol, ProtocolService>()("mcp-agentify/Protocol") {}
