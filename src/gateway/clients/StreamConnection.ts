/**
 * One client on a byte stream (stdio, a pipe, a socket): the client that owns the gateway. Its
 * first message decides the connection's era: a 2026-07-28 request sends every message after it
 * to that era's dispatcher (the backends start with it, told what any request may relay);
 * anything else makes it a session of the session era (the backends start with its `initialize`).
 * When the connection ends, the backends stop. The transport only frames and carries.
 */
import { Deferred, Effect, Result, Exit, FiberSet, Scope } from "effect"
import { Backends } from "../../backend/Backends.js"
import { Events } from "../../observability/Events.js"
import { classify, failure } from "../../jsonrpc/JsonRpc.js"
import * as Peer from "../../jsonrpc/Peer.js"
import { ErrorCode } from "../../protocol/Errors.js"
import { STATELESS_PROTOCOL_VERSION } from "../../protocol/Mcp.js"
import { field } from "../../json/Json.js"
import { SHARED_CLIENT_CAPABILITIES } from "../clientRequests/ClientAsk.js"
import { Gateway } from "../Gateway.js"
import * as Dispatch from "./Dispatch.js"
import * as Era from "../session/Era.js"
import { Launch } from "../Launch.js"
import { type Edge, Session, type Target } from "../session/Session.js"
import * as Caller from "../pipeline/Caller.js"
import * as Depth from "../../json/Depth.js"

/** `subscriptions/listen` streams one connection may hold. */
const MAX_LISTENERS = 64

/**
 * What a client on the gateway's own stream is: the person who started the gateway (its calls are
 * "local"), and a reply over `maxReplyBytes` cannot be carried (see transport/ReplyBound).
 */
export const EDGE: Edge = { name: "stdio", localUser: true, boundsReplies: true }

/** What the transport hands a connection's frames to. */
export interface StreamConnection {
  /** One frame's text; its replies, and everything else the client is sent, go to the connection's outbox. */
  readonly receive: (text: string) => void
  /** Requests in flight get `graceMs` to finish after end of input, then are cancelled (each still replies). */
  readonly drain: (graceMs: number) => Effect.Effect<void>
  /** Completes when the client ends the connection itself (`exit`). */
  readonly ended: Effect.Effect<void>
}

export interface Options {
  /** A profile's view of the aggregate (`--profile`); the whole aggregate without. */
  readonly profile?: string | undefined
  /** Where everything the client is sent goes, in its framing. */
  readonly out: Peer.Outbox
}

/**
 * The 2026-07-28 era on this connection, once its first message says so: each message after it is
 * checked and served by the era's dispatcher. Returns whether it took the message.
 */
const statelessEra = (target: Target, out: Peer.Outbox) =>
  Effect.gen(function* () {
    const gateway = yield* Gateway
    const backends = yield* Backends
    const launch = yield* Launch
    const dispatcher: Dispatch.Dispatcher = yield* Dispatch.make(gateway, backends, {
      edge: EDGE,
      ready: launch.start(SHARED_CLIENT_CAPABILITIES),
      // They last as long as the connection: a client that keeps opening them is refused past a bound.
      listenRefusal: () =>
        dispatcher.listening() >= MAX_LISTENERS
          ? { status: 503, message: `${MAX_LISTENERS} listen streams are open on this connection` }
          : undefined
    })
    const runFork = yield* FiberSet.runtime(yield* FiberSet.make<unknown, never>())<never>()
    const listeners = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(listeners, Exit.void))
    let era: "undecided" | "session" | "stateless" = "undecided"
    const take = (text: string): boolean => {
      if (era === "session") return false
      let value: unknown
      try {
        value = Depth.parse(text)
      } catch {
        return era === "stateless"
          ? (out.send(failure(null, { code: ErrorCode.ParseError, message: "Parse error" })), true)
          : false
      }
      if (era === "undecided") era = Era.isStateless(value) ? "stateless" : "session"
      if (era === "session") return false
      const incoming = classify(value)
      if (incoming._tag === "Invalid") {
        out.send(failure(incoming.id, { code: ErrorCode.InvalidRequest, message: `Invalid Request: ${incoming.reason}` }))
        return true
      }
      if (incoming._tag === "Notification") {
        const { method, params } = incoming.notification
        if (method === "notifications/cancelled") dispatcher.cancel(field(params, "requestId"))
        return true
      }
      if (incoming._tag !== "Request") return true
      const request = incoming.request
      // The era is this connection's: a session-era handshake on it is a removed method, not bad _meta.
      if (request.method === "initialize") {
        out.send(
          failure(request.id, {
            code: ErrorCode.MethodNotFound,
            message: `Method not found: initialize (this connection speaks ${STATELESS_PROTOCOL_VERSION})`
          })
        )
        return true
      }
      const admitted = dispatcher.admit(request, null)
      if (Result.isFailure(admitted)) {
        out.send(admitted.failure.response)
        return true
      }
      if (request.method === "subscriptions/listen") {
        runFork(
          Scope.provide(dispatcher.listen(request, target, out), listeners).pipe(
            Effect.map((refusal) => {
              if (refusal !== undefined)
                out.send(failure(request.id, { code: ErrorCode.InternalError, message: refusal.message }))
            })
          )
        )
        return true
      }
      dispatcher.serve(request, admitted.success, target, out)
      return true
    }
    return take
  })

/** Opens the connection for the current scope; closing the scope stops the backends. */
export const open = (options: Options) =>
  Effect.gen(function* () {
    const gateway = yield* Gateway
    const backends = yield* Backends
    const events = yield* Events
    const { out } = options
    const target: Target = { _tag: "Aggregate", profile: options.profile }
    const session = new Session({
      id: "stdio",
      edge: EDGE,
      target,
      send: (message) => {
        out.send(message)
        return true
      }
    })
    // Added first, run last: after the transport drained the requests and flushed their replies.
    yield* Effect.addFinalizer(() => Effect.andThen(Effect.logInfo("client disconnected: stopping backends"), backends.stopAll))
    const stateless = yield* statelessEra(target, out)
    const handlers = yield* gateway.open(session)
    // Made for the session's caller: each request's fiber inherits it (see pipeline/Caller).
    const peer = yield* Caller.as({ session })(Peer.make(handlers, { sessionId: session.id, events }))
    const connection: StreamConnection = {
      receive: (text) => {
        if (!stateless(text)) peer.receive(text, out)
      },
      drain: peer.drain,
      ended: Deferred.await(session.ended)
    }
    return connection
  })
