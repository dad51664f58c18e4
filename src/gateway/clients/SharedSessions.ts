/**
 * The sessions of a shared gateway (Streamable HTTP): issued on `initialize`, found by id, target
 * and subject, ended by the client, by `exit`, when idle or when the gateway stops; bounded in
 * number with the listen streams; and the 2026-07-28 requests served beside them. The transport
 * only carries bodies and streams: what a body is, who it reaches and every session's life are
 * decided here.
 */
import * as Replica from "../../store/Replica.js"
import { Deferred, Effect, Result, Exit, Schedule, Scope } from "effect"
import { randomUUID } from "node:crypto"
import { Backends } from "../../backend/Backends.js"
import { GatewayConfig } from "../../config/Config.js"
import { Events } from "../../observability/Events.js"
import { classify, failure, type Request } from "../../jsonrpc/JsonRpc.js"
import * as Peer from "../../jsonrpc/Peer.js"
import { ErrorCode } from "../../protocol/Errors.js"
import { isSupportedProtocolVersion } from "../../protocol/Mcp.js"
import { Gateway } from "../Gateway.js"
import * as Dispatch from "./Dispatch.js"
import * as Era from "../session/Era.js"
import { type Edge, type Identity, sameTarget, Session, type Target } from "../session/Session.js"
import { SessionDirectory } from "../../store/SessionDirectory.js"
import { TaskRecords } from "../../store/TaskRecords.js"
import { RequestStates } from "../clientRequests/RequestStates.js"
import * as Elsewhere from "./HeldElsewhere.js"

import { STORE_SILENT } from "./HeldElsewhere.js"
import * as Caller from "../pipeline/Caller.js"

/** The header a session's id travels in, and the one that names a request's protocol version. */
export const SESSION_HEADER = "mcp-session-id"
export const VERSION_HEADER = "mcp-protocol-version"

/** A refusal the transport answers with: its HTTP status, and the JSON-RPC error it carries. */
export interface Refused {
  readonly status: number
  readonly message: string
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly code?: ErrorCode | undefined
}

/** Where a session's own messages (those of no request) go while its stream is open. */
export interface Stream {
  readonly send: (message: unknown) => void
  /** The session ended: the stream ends too. */
  readonly end: Effect.Effect<void>
}

/** One session of the session era, as its transport sees it. */
export interface SharedSession {
  readonly id: string
  /** A body's messages; their replies (and the notifications of their requests) go to `out`. */
  readonly receive: (value: unknown, out: Peer.Outbox) => void
  /** Whether its `initialize` succeeded: until then the client does not know the session. */
  readonly ready: () => boolean
  /** Opens its stream; undefined when one is open already. The function returned closes it. */
  readonly attach: (stream: Stream) => (() => void) | undefined
  readonly close: (why: string) => Effect.Effect<void>
}

/** A 2026-07-28 request checked by its era and against its headers, ready to serve. */
export interface Admitted {
  readonly request: Request
  readonly context: Era.Context
}

/** What a body is to the gateway. */
type Kind = "initialize" | "stateless" | "session"

/** What the transport knows of a request, opaque to it: its headers, its endpoint, who sent it. */
export interface Arrival {
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly target: Target
  readonly identity: Identity | undefined
}

/** A body that arrived, parsed, with the text it came as and what its client accepts. */
export interface Body extends Arrival {
  readonly value: unknown
  readonly text: string
  /** The client accepts a stream of messages as the answer. */
  readonly streams: boolean
  /** The client ranks a stream first: even one reply goes as a stream. */
  readonly prefersStream: boolean
  /** Another gateway of the team handed it here: it is not handed on again. */
  readonly forwarded: boolean
}

/** How the transport answers a body. */
export type Delivery =
  /** Refused before anything is served. */
  | { readonly _tag: "Refused"; readonly refused: Refused }
  /** One message, known already, with its status. */
  | { readonly _tag: "Answer"; readonly status: number; readonly message: unknown }
  /** Nothing to answer: taken. */
  | { readonly _tag: "Accepted" }
  /**
   * Messages sent to `out` until the reply: the first decides the form (JSON, or a stream when
   * `streams` and a message comes before it). `cancel`, when `dispatch` returns it, stops the work
   * if the client goes away before the answer ends; `abandoned` runs if the answer is never made;
   * `settle` runs once the reply is in, and gives the headers it adds.
   */
  | {
      readonly _tag: "Exchange"
      readonly dispatch: (out: Peer.Outbox) => (() => void) | undefined
      readonly streams: boolean
      readonly alwaysStream: boolean
      readonly statusOf: (reply: unknown) => number
      readonly abandoned?: Effect.Effect<void> | undefined
      readonly settle?: Effect.Effect<Readonly<Record<string, string>>> | undefined
    }
  /** A stream of messages as long as the client reads it, fed in the scope of the answer. */
  | { readonly _tag: "Feed"; readonly open: (out: Peer.Outbox) => Effect.Effect<void, never, Scope.Scope> }
  /** Another gateway of the team (`replica`) holds what it is about; `ifGone` answers it when that one is gone. */
  | { readonly _tag: "HeldBy"; readonly replica: string; readonly ifGone: Effect.Effect<Delivery> }

/** What the transport answers when the team's store cannot say where something is: the client tries again. */
export const STORE_SILENT_REFUSAL: Refused = {
  status: 503,
  message: "Service Unavailable: the store of this team's gateways did not answer; try again",
  headers: { "retry-after": "1" }
}

/** How long requests in flight at shutdown may finish on their own before they are cancelled (each still replies). */
export const STOP_GRACE_MS = 1_000

/**
 * What a client of the shared endpoint is: who its token says, else anonymous (never the local
 * user: anyone who reaches the port may connect), with no reply bound of the transport's own.
 */
export const EDGE: Edge = { name: "http", localUser: false, boundsReplies: false }

interface Entry {
  readonly session: Session
  readonly peer: Peer.Peer
  readonly scope: Scope.Closeable
  stream: Stream | undefined
  closed: boolean
}

/** What a body is: a session's `initialize`, a 2026-07-28 request (sent with no session), or a session's messages. */
const kindOf = (value: unknown, sessionId: string | undefined, version: string | undefined): Kind => {
  const items = Array.isArray(value) ? value : [value]
  const initialize = items.some((item) => {
    const incoming = classify(item)
    return incoming._tag === "Request" && incoming.request.method === "initialize" && !Era.isStateless(item)
  })
  if (initialize) return "initialize"
  return sessionId === undefined && Era.eraOf(value, version) === "stateless" ? "stateless" : "session"
}

/** A 2026-07-28 request checked by its era and its SEP-2243 headers, or the reply that refuses it. */
const admitWith =
  (dispatcher: Dispatch.Dispatcher) =>
  (
    value: unknown,
    headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
    version: string | undefined,
    target: Target
  ): Result.Result<Admitted, { readonly status: number; readonly response: unknown }> => {
    const incoming = classify(value)
    // What kindOf called a 2026-07-28 body is one request: anything else is no request at all.
    if (incoming._tag !== "Request") {
      return Result.fail({ status: 400, response: failure(null, { code: ErrorCode.InvalidRequest, message: "Invalid Request" }) })
    }
    const request = incoming.request
    const admitted = dispatcher.admit(request, version === undefined ? undefined : version)
    if (Result.isFailure(admitted)) return Result.fail(admitted.failure)
    const contradicted = dispatcher.checkHeaders(request, headers, target)
    if (contradicted !== undefined) return Result.fail(contradicted)
    return Result.succeed({ request, context: admitted.success })
  }

/** The session `id` names at `target` for `subject`, or why it is not there. */
const findIn = (
  sessions: ReadonlyMap<string, Entry>,
  id: string | undefined,
  target: Target,
  subject: string | undefined,
  version: string | undefined
): Entry | Refused => {
  if (id === undefined || id === "") {
    return { status: 400, message: "Bad Request: Mcp-Session-Id header is required (send initialize first)" }
  }
  const entry = sessions.get(id)
  // A session is its subject's: another's token does not reach it (nor learns it exists).
  if (entry === undefined || !sameTarget(entry.session.target, target) || entry.session.subject !== subject) {
    return { status: 404, message: "Session not found: it expired or was closed; send initialize again" }
  }
  if (version !== undefined && !isSupportedProtocolVersion(version)) {
    return { status: 400, message: `Bad Request: unsupported MCP-Protocol-Version: ${String(version).slice(0, 64)}` }
  }
  entry.session.lastActivity = Date.now()
  return entry
}

/**
 * The sessions' upkeep for the scope: idle ones end (no request for `sessionIdleMs`, nothing in
 * flight, no stream open); at shutdown requests in flight get a grace, then every session closes.
 */
const upkeep = (
  sessions: ReadonlyMap<string, Entry>,
  dispatcher: Dispatch.Dispatcher,
  sessionIdleMs: number,
  closeEntry: (entry: Entry, why: string) => Effect.Effect<void>
) =>
  Effect.gen(function* () {
    // Idle sessions end: no request for sessionIdleMs, nothing in flight, no stream open.
    yield* Effect.suspend(() => {
      const now = Date.now()
      const idle = [...sessions.values()].filter(
        (e) => now - e.session.lastActivity >= sessionIdleMs && e.peer.inFlight() === 0 && e.stream === undefined
      )
      return Effect.forEach(idle, (e) => closeEntry(e, `idle for ${sessionIdleMs} ms`), { discard: true })
    }).pipe(Effect.repeat(Schedule.spaced(Math.max(50, Math.min(60_000, Math.floor(sessionIdleMs / 2))))), Effect.forkScoped)
    yield* Effect.addFinalizer(() =>
      Effect.forEach([...sessions.values()], (e) => closeEntry(e, "gateway stopping"), { discard: true })
    )
    // First at shutdown: requests in flight get a grace to finish, then are cancelled at their
    // backends, and each still gets its reply before the sessions close.
    yield* Effect.addFinalizer(() =>
      Effect.all(
        [
          Effect.forEach([...sessions.values()], (e) => e.peer.drain(STOP_GRACE_MS), { concurrency: "unbounded", discard: true }),
          dispatcher.drain(STOP_GRACE_MS)
        ],
        { concurrency: "unbounded", discard: true }
      )
    )
  })

/** What `deliver` asks of the sessions (see `make`). */
interface Parts {
  readonly open: (target: Target, identity: Identity | undefined) => Effect.Effect<SharedSession | Refused>
  readonly find: (arrival: Arrival) => SharedSession | Refused
  readonly dispatcher: Dispatch.Dispatcher
  readonly heldElsewhere: (value: unknown) => string | undefined
  readonly lostTask: (value: unknown, holder: string, subject: string | undefined) => Effect.Effect<unknown>
}

const refused = (refusal: Refused): Delivery => ({ _tag: "Refused", refused: refusal })

/** A 2026-07-28 request: another gateway's to answer, a listen stream, or served beside the others. */
const statelessDelivery = (parts: Parts, body: Body, handOff: boolean): Effect.Effect<Delivery> => {
  const { value, headers, target, identity } = body
  const holder = handOff && !body.forwarded ? parts.heldElsewhere(value) : undefined
  if (holder !== undefined) {
    // Its gateway gone: a task is what the store kept of it when it finished, else failed.
    const ifGone = Effect.flatMap(parts.lostTask(value, holder, identity?.subject), (lost) =>
      lost === STORE_SILENT
        ? Effect.succeed(refused(STORE_SILENT_REFUSAL))
        : lost === undefined
          ? statelessDelivery(parts, body, false)
          : Effect.succeed<Delivery>({ _tag: "Answer", status: 200, message: lost })
    )
    return Effect.succeed({ _tag: "HeldBy", replica: holder, ifGone })
  }
  const admitted = admitWith(parts.dispatcher)(value, headers, headers[VERSION_HEADER], target)
  if (Result.isFailure(admitted)) {
    return Effect.succeed({ _tag: "Answer", status: admitted.failure.status, message: admitted.failure.response })
  }
  const { request, context } = admitted.success
  if (request.method === "subscriptions/listen") {
    if (!body.streams) {
      return Effect.succeed(
        refused({ status: 406, message: "Not Acceptable: subscriptions/listen answers with a stream: accept text/event-stream" })
      )
    }
    const refusal = parts.dispatcher.listenRefusal()
    if (refusal !== undefined) return Effect.succeed(refused({ ...refusal, code: ErrorCode.InternalError }))
    // The listener lives as long as the stream: a client that goes away ends it.
    return Effect.succeed({
      _tag: "Feed",
      open: (out) => Effect.asVoid(parts.dispatcher.listen(request, target, out))
    })
  }
  return Effect.succeed({
    _tag: "Exchange",
    // A client that goes away mid-call cancels it (the backend hears notifications/cancelled).
    dispatch: (out) => {
      const served = parts.dispatcher.serve(request, context, target, out, identity)
      return served === undefined ? undefined : () => served.interruptUnsafe()
    },
    streams: body.streams,
    alwaysStream: false,
    statusOf: Era.statusOf
  })
}

/** A session's `initialize`: the session opens, and lives on only if it succeeded. */
const initializeDelivery = (parts: Parts, body: Body, items: ReadonlyArray<unknown>): Effect.Effect<Delivery> =>
  Effect.gen(function* () {
    if (items.length > 1) return refused({ status: 400, message: "Bad Request: initialize must be sent alone, not in a batch" })
    if (body.headers[SESSION_HEADER] !== undefined) {
      return refused({ status: 400, message: "Bad Request: initialize starts a session: send it without Mcp-Session-Id" })
    }
    const opened = yield* parts.open(body.target, body.identity)
    if ("status" in opened) return refused(opened)
    const delivery: Delivery = {
      _tag: "Exchange",
      dispatch: (out) => {
        opened.receive(body.value, out)
        return undefined
      },
      // Always JSON: the session exists only if initialize succeeded, known once it replied.
      streams: false,
      alwaysStream: false,
      statusOf: () => 200,
      // The client went away before it learned the session's id: nobody can use it.
      abandoned: opened.close("initialize abandoned"),
      settle: Effect.suspend(() =>
        opened.ready() ? Effect.succeed({ [SESSION_HEADER]: opened.id }) : Effect.as(opened.close("initialize failed"), {})
      )
    }
    return delivery
  })

/** How a body is answered: what it is decides who serves it. */
const deliverWith =
  (parts: Parts) =>
  (body: Body): Effect.Effect<Delivery> => {
    const { value, headers } = body
    const items = Array.isArray(value) ? value : [value]
    const kind = kindOf(value, headers[SESSION_HEADER], headers[VERSION_HEADER])
    if (kind === "initialize") return initializeDelivery(parts, body, items)
    if (kind === "stateless") return statelessDelivery(parts, body, true)
    const found = parts.find(body)
    if ("status" in found) return Effect.succeed(refused(found))
    const expectsReply =
      items.length === 0 ||
      items.some((item) => {
        const tag = classify(item)._tag
        return tag === "Request" || tag === "Invalid"
      })
    if (!expectsReply) {
      found.receive(value, { send: () => {} })
      return Effect.succeed({ _tag: "Accepted" })
    }
    return Effect.succeed({
      _tag: "Exchange",
      dispatch: (out) => {
        found.receive(value, out)
        return undefined
      },
      streams: body.streams,
      alwaysStream: body.prefersStream,
      statusOf: () => 200
    })
  }

/** The sessions of one shared endpoint, living in the current scope (closing it ends them all). */
export const make = Effect.gen(function* () {
  const gateway = yield* Gateway
  const backends = yield* Backends
  const events = yield* Events
  const gatewayConfig = yield* GatewayConfig
  // The endpoint's own settings (bounds, idle time, the ids' prefix) are read once.
  const config = yield* gatewayConfig.current
  const sessions = new Map<string, Entry>()
  // Which gateway of a team holds each session (see store/): this one claims its own. The
  // gateway's store when it was built with one (its call pipeline counts quotas there too).
  const directory = yield* SessionDirectory
  const records = yield* TaskRecords
  // The calls 2026-07-28 request states resume, and which gateway of the team holds each.
  const states = yield* RequestStates
  // Stateless requests run beside the exchange that answers them (their calls may outlive it).
  const dispatcher: Dispatch.Dispatcher = yield* Dispatch.make(gateway, backends, {
    edge: EDGE,
    // Listen streams count against maxSessions with the sessions: each holds a listener.
    listenRefusal: () =>
      sessions.size + dispatcher.listening() >= config.maxSessions
        ? {
            status: 503,
            message: `Service Unavailable: ${config.maxSessions} sessions and listen streams are open (maxSessions)`,
            headers: { "retry-after": "5" }
          }
        : undefined
  })

  const closeEntry = (entry: Entry, why: string) =>
    Effect.suspend(() => {
      if (entry.closed) return Effect.void
      entry.closed = true
      sessions.delete(entry.session.id)
      const stream = entry.stream
      entry.stream = undefined
      return Effect.all(
        [
          Effect.logInfo("session closed", { session: entry.session.id, why }),
          directory.release(entry.session.id),
          stream === undefined ? Effect.void : stream.end,
          Deferred.succeed(entry.session.ended, undefined),
          Scope.close(entry.scope, Exit.void)
        ],
        { discard: true }
      )
    })

  const handleOf = (entry: Entry): SharedSession => ({
    id: entry.session.id,
    receive: (value, out) => entry.peer.receiveValue(value, out),
    ready: () => entry.session.phase === "ready",
    attach: (stream) => {
      if (entry.stream !== undefined) return undefined
      entry.stream = stream
      return () => {
        if (entry.stream === stream) entry.stream = undefined
        entry.session.lastActivity = Date.now()
      }
    },
    close: (why) => closeEntry(entry, why)
  })

  const open = (target: Target, identity: Identity | undefined): Effect.Effect<SharedSession | Refused> =>
    Effect.gen(function* () {
      if (sessions.size + dispatcher.listening() >= config.maxSessions) {
        return {
          status: 503,
          message: `Service Unavailable: ${config.maxSessions} sessions are open (maxSessions)`,
          headers: { "retry-after": "5" },
          code: ErrorCode.InternalError
        }
      }
      const scope = yield* Scope.make()
      let entry: Entry | undefined
      const session = new Session({
        id: `${Replica.idPrefixOf(config)}${randomUUID()}`,
        edge: EDGE,
        target,
        identity,
        send: (message) => {
          const stream = entry?.stream
          // With no stream open, a message that belongs to no request has nowhere to go.
          if (stream === undefined) return false
          stream.send(message)
          return true
        }
      })
      const handlers = yield* Scope.provide(gateway.open(session), scope)
      // Made for the session's caller: each request's fiber inherits it (see pipeline/Caller).
      const peer = yield* Scope.provide(Caller.as({ session })(Peer.make(handlers, { sessionId: session.id, events })), scope)
      const made: Entry = { session, peer, scope, stream: undefined, closed: false }
      entry = made
      sessions.set(session.id, made)
      yield* directory.claim(session.id)
      // `exit` from the client ends the session like DELETE. A daemon, not a fiber of a scope:
      // closing the session completes `ended`, so it always finishes, and it must not be
      // interrupted by the scope it closes.
      yield* Deferred.await(session.ended).pipe(Effect.andThen(Effect.suspend(() => closeEntry(made, "exit"))), Effect.forkDetach)
      return handleOf(made)
    })

  const find = (arrival: Arrival): SharedSession | Refused => {
    const { headers } = arrival
    const found = findIn(sessions, headers[SESSION_HEADER], arrival.target, arrival.identity?.subject, headers[VERSION_HEADER])
    return "status" in found ? found : handleOf(found)
  }

  yield* upkeep(sessions, dispatcher, config.sessionIdleMs, closeEntry)

  const heldElsewhere = (value: unknown) => Elsewhere.heldElsewhere(config, states, value)
  const lostTask = (value: unknown, holder: string, subject: string | undefined) =>
    Elsewhere.lostTask(records, value, holder, subject)

  return {
    /** Sessions open now. */
    size: () => sessions.size,
    /**
     * What a request names that another gateway of the team may hold (its lease in `directory`),
     * when this one does not hold it: the session its headers name.
     */
    leaseNamed: (headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>): string | undefined => {
      const named = headers[SESSION_HEADER]
      return typeof named !== "string" || sessions.has(named) ? undefined : named
    },
    directory,
    /** How a body is answered (see `Delivery`). */
    deliver: deliverWith({ open, find, dispatcher, heldElsewhere, lostTask }),
    /**
     * Opens the stream of the session a request names, for what it is sent outside any request;
     * the function returned closes it. Refused when there is none, or one is open already.
     */
    watch: (arrival: Arrival, stream: Stream): Refused | (() => void) => {
      const found = find(arrival)
      if ("status" in found) return found
      return found.attach(stream) ?? { status: 409, message: "Conflict: this session already has a GET stream open" }
    },
    /** Ends the session a request names, or why there is none. */
    end: (arrival: Arrival, why: string): Effect.Effect<Refused | undefined> => {
      const found = find(arrival)
      return "status" in found ? Effect.succeed(found) : Effect.as(found.close(why), undefined)
    }
  }
})

export type SharedSessions = Effect.Success<typeof make>
