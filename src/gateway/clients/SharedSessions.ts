/**
 * The sessions of a shared gateway (Streamable HTTP): issued on `initialize`, found by id, target
 * and subject, ended by the client, by `exit`, when idle or when the gateway stops; bounded in
 * number with the listen streams; and the 2026-07-28 requests served beside them. The transport
 * only carries bodies and streams: what a body is, who it reaches and every session's life are
 * decided here.
 */
import * as Replica from "../../store/Replica.js"
import { Deferred, Effect, Result, Exit, type Fiber, Schedule, Scope } from "effect"
import { randomUUID } from "node:crypto"
import { Backends } from "../../backend/Backends.js"
import { GatewayConfig } from "../../config/Config.js"
import { Events } from "../../observability/Events.js"
import { classify, type Id, type Request } from "../../jsonrpc/JsonRpc.js"
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

export { STORE_SILENT } from "./HeldElsewhere.js"
import * as Caller from "../pipeline/Caller.js"

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
export type Kind = "initialize" | "stateless" | "session"

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
    const { id, method, params } = value as { id: Id; method: string; params: unknown }
    const request = { id, method, params } as Request
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
      entry = { session, peer, scope, stream: undefined, closed: false }
      sessions.set(session.id, entry)
      yield* directory.claim(session.id)
      // `exit` from the client ends the session like DELETE. A daemon, not a fiber of a scope:
      // closing the session completes `ended`, so it always finishes, and it must not be
      // interrupted by the scope it closes.
      yield* Deferred.await(session.ended).pipe(
        Effect.andThen(Effect.suspend(() => closeEntry(entry!, "exit"))),
        Effect.forkDetach
      )
      return handleOf(entry)
    })

  const find = (id: string | undefined, target: Target, subject: string | undefined, version: string | undefined) => {
    const found = findIn(sessions, id, target, subject, version)
    return "status" in found ? found : handleOf(found)
  }

  yield* upkeep(sessions, dispatcher, config.sessionIdleMs, closeEntry)

  const admit = admitWith(dispatcher)

  return {
    /** Sessions open now. */
    size: () => sessions.size,
    /** Whether this gateway holds the session `id` (else another of the team may: see `directory`). */
    holds: (id: string) => sessions.has(id),
    /**
     * The gateway of the team that holds what a 2026-07-28 request is about, when not this one: the
     * call it resumes (its `requestState`), or the task it asks after (a task's id names its gateway).
     */
    heldElsewhere: (value: unknown) => Elsewhere.heldElsewhere(config, states, value),
    /** The reply to a 2026-07-28 request about a task whose gateway is gone (see Elsewhere). */
    lostTask: (value: unknown, holder: string, subject: string | undefined) =>
      Elsewhere.lostTask(records, value, holder, subject),
    directory,
    open,
    find,
    kindOf,
    admit,
    /** Serves an admitted request beside the others; its one reply goes to `out`. */
    serve: (
      admitted: Admitted,
      target: Target,
      out: Peer.Outbox,
      identity: Identity | undefined
    ): Fiber.Fiber<unknown, unknown> | undefined => dispatcher.serve(admitted.request, admitted.context, target, out, identity),
    /** A listen stream in the caller's scope, or the refusal of one more. */
    listen: (admitted: Admitted, target: Target, out: Peer.Outbox) => dispatcher.listen(admitted.request, target, out),
    listenRefusal: (): Refused | undefined => dispatcher.listenRefusal(),
    /** The HTTP status a 2026-07-28 reply goes with. */
    statusOf: Era.statusOf
  }
})

export type SharedSessions = Effect.Success<typeof make>
