/**
 * The gateway's routing tables, in one service: what comes back from one peer finds the other
 * through them.
 *
 * - Progress tokens, both ways: a client's call on a backend goes with a token of the gateway's
 *   (the backend's progress finds the client's request), and so does a backend's request to a
 *   client (the client's progress finds the backend).
 * - Resource subscriptions: which sessions hold each backend's URI.
 * - URL elicitations: which session was asked, for the backend's completion notice.
 * - Calls in flight: which sessions have a request running on each backend, for what a backend
 *   sends that names no request (its log messages, its own requests).
 * - Tasks: the id a client of the aggregate knows each backend task by, and whose task it is.
 *
 * Plain maps behind a Tag: every change is synchronous and made on the fiber that owns it, so a
 * route is in place before the message that needs it can arrive. A test swaps it by layer.
 */
import { Context, Layer } from "effect"
import { randomBytes } from "node:crypto"
import type { RequestContext } from "../../jsonrpc/Peer.js"
import type { Session } from "../session/Session.js"

/** A client's call on a backend: the backend's progress goes to `context` under the client's `token`. */
export interface ClientCallRoute {
  readonly backendId: string
  readonly context: RequestContext
  readonly token: unknown
}

/** A backend's request to a client: the client's progress goes back to the backend under `token`. */
export interface BackendAskRoute {
  readonly session: Session
  readonly backendId: string
  readonly token: unknown
}

/** URL elicitations remembered for their `notifications/elicitation/complete`. */
export const MAX_ELICITATIONS = 1_000

/**
 * A backend's task as one session of the aggregate knows it: by an id of the gateway's that names
 * the backend (`<backend>.<128 random bits>`: not guessable), valid for that session only.
 */
export interface TaskRoute {
  readonly id: string
  /** Who may use the id: a session-era client's session, or a stateless client's OAuth subject. */
  readonly owner: TaskOwner
  readonly backendId: string
  readonly backendTaskId: string
  /** When the gateway forgets it: the task's own ttl from its creation (else an hour), or the session's end. */
  readonly expiresAt: number
}

/**
 * Whose a task is. A session-era client's: its session (which also hears the task's status). A
 * 2026-07-28 client has no session: its OAuth subject's (anyone without one: the unguessable id).
 */
export interface TaskOwner {
  readonly key: string
  readonly session?: Session | undefined
}

/** Tasks remembered per owner, at most (the oldest forgotten past it). */
export const MAX_TASKS_PER_SESSION = 1_000
/** How long a task with no ttl of its own is remembered. */
export const DEFAULT_TASK_TTL_MS = 60 * 60_000

export interface RoutesService {
  /** Routes a client call's progress; returns the gateway's token, to be closed when the call ends. */
  readonly openClientCall: (route: ClientCallRoute) => string
  readonly clientCall: (token: string) => ClientCallRoute | undefined
  /** Routes a client's progress on a backend's request; returns the gateway's token. */
  readonly openBackendAsk: (route: BackendAskRoute) => string
  readonly backendAsk: (token: string) => BackendAskRoute | undefined
  /** Forgets a token of either kind. */
  readonly close: (token: string) => void

  /** Records `session` holding `uri` of `backendId`; true when it is the first holder. */
  readonly subscribe: (session: Session, backendId: string, uri: string) => boolean
  /** Forgets it; true when nobody holds the URI any more. */
  readonly unsubscribe: (session: Session, backendId: string, uri: string) => boolean
  /** Whether anybody holds the URI (a subscribe is passed on only for the first holder). */
  readonly held: (backendId: string, uri: string) => boolean
  /** The sessions holding a URI. */
  readonly holders: (backendId: string, uri: string) => ReadonlySet<Session>
  /** Drops every subscription of a closed session: the URIs nobody holds any more, by backend. */
  readonly dropSession: (session: Session) => ReadonlyArray<{ readonly backendId: string; readonly uri: string }>
  /** The URIs sessions hold on a backend (made again after it restarts). */
  readonly subscribedOn: (backendId: string) => ReadonlyArray<string>

  /** Remembers which session a URL elicitation went to (the oldest forgotten past the bound). */
  readonly elicited: (elicitationId: string, session: Session) => void
  /** The session a URL elicitation went to, once. */
  readonly takeElicitation: (elicitationId: string) => Session | undefined

  /** Marks a call of `session` in flight on `backendId` until the returned function is called. */
  readonly track: (session: Session, backendId: string, context: RequestContext) => () => void
  /** The sessions with calls in flight on a backend. */
  readonly busyOn: (backendId: string) => ReadonlyArray<Session>
  /**
   * One of the session's requests in flight on the backend, if any: where what the backend sends
   * during it goes (over HTTP, that request's stream).
   */
  readonly callOf: (session: Session, backendId: string) => RequestContext | undefined

  /**
   * Gives a backend's new task the id its owner will know it by, after `prefix` (the gateway's
   * `sessionIdPrefix`: behind a proxy a task's requests find their gateway as a session's do).
   */
  readonly adoptTask: (
    owner: TaskOwner,
    backendId: string,
    backendTaskId: string,
    ttlMs: number | undefined,
    prefix?: string
  ) => TaskRoute
  /** The task `owner` knows as `id`; another's, an expired or unknown one: undefined. */
  readonly task: (owner: TaskOwner, id: string) => TaskRoute | undefined
  /** The route of a backend's task, by the backend's own id (its status notifications). */
  readonly taskOf: (backendId: string, backendTaskId: string) => TaskRoute | undefined
  /** The tasks an owner knows, oldest first. */
  readonly tasksOf: (owner: TaskOwner) => ReadonlyArray<TaskRoute>
  /** Forgets one task (the backend no longer has it), or every task of an owner (a session that ended). */
  /** Forgets a task its backend no longer has. */
  readonly forgetTask: (route: TaskRoute) => void
  /** Forgets an owner's tasks (its session ended): each is evicted. */
  readonly forgetTasks: (owner: TaskOwner) => void
  /**
   * What happens to a task the gateway forgets while its backend may still run it (past its ttl,
   * past the owner's cap, its session ended): nobody could reach it again, so the gateway cancels it.
   */
  readonly onEvicted: (handler: (route: TaskRoute) => void) => void
}

const make = (): RoutesService => {
  const tokens = new Map<string, ClientCallRoute | BackendAskRoute>()
  let nextToken = 0
  const open = (prefix: string, route: ClientCallRoute | BackendAskRoute) => {
    const token = `${prefix}${++nextToken}`
    tokens.set(token, route)
    return token
  }

  const subscribers = new Map<string, Set<Session>>()
  const keyOf = (backendId: string, uri: string) => `${backendId}\u0000${uri}`
  const elicitations = new Map<string, Session>()
  /** Calls in flight: by backend, each busy session's requests there (a session leaves with its last). */
  const busy = new Map<string, Map<Session, Set<RequestContext>>>()
  const tasks = new Map<string, TaskRoute>()
  const tasksByBackend = new Map<string, TaskRoute>()
  const ownerTasks = new Map<string, Set<TaskRoute>>()
  let evicted: (route: TaskRoute) => void = () => {}
  const evict = (route: TaskRoute) => {
    forgetTask(route)
    evicted(route)
  }
  const forgetTask = (route: TaskRoute) => {
    tasks.delete(route.id)
    tasksByBackend.delete(keyOf(route.backendId, route.backendTaskId))
    const own = ownerTasks.get(route.owner.key)
    own?.delete(route)
    if (own?.size === 0) ownerTasks.delete(route.owner.key)
  }
  const live = (route: TaskRoute | undefined) => {
    if (route === undefined || route.expiresAt > Date.now()) return route
    evict(route)
    return undefined
  }

  return {
    openClientCall: (route) => open("agentify-", route),
    clientCall: (token) => {
      const route = tokens.get(token)
      return route !== undefined && "context" in route ? route : undefined
    },
    openBackendAsk: (route) => open("agentify-b", route),
    backendAsk: (token) => {
      const route = tokens.get(token)
      return route !== undefined && "session" in route ? route : undefined
    },
    close: (token) => void tokens.delete(token),

    subscribe: (session, backendId, uri) => {
      const key = keyOf(backendId, uri)
      const holders = subscribers.get(key) ?? new Set<Session>()
      const first = holders.size === 0
      holders.add(session)
      subscribers.set(key, holders)
      return first
    },
    unsubscribe: (session, backendId, uri) => {
      const key = keyOf(backendId, uri)
      const holders = subscribers.get(key)
      if (holders === undefined) return true
      holders.delete(session)
      if (holders.size > 0) return false
      subscribers.delete(key)
      return true
    },
    held: (backendId, uri) => (subscribers.get(keyOf(backendId, uri))?.size ?? 0) > 0,
    holders: (backendId, uri) => subscribers.get(keyOf(backendId, uri)) ?? new Set(),
    dropSession: (session) => {
      const released: Array<{ backendId: string; uri: string }> = []
      for (const [key, holders] of subscribers) {
        if (!holders.delete(session) || holders.size > 0) continue
        subscribers.delete(key)
        const at = key.indexOf("\u0000")
        released.push({ backendId: key.slice(0, at), uri: key.slice(at + 1) })
      }
      return released
    },
    subscribedOn: (backendId) =>
      [...subscribers.keys()].filter((key) => key.startsWith(`${backendId}\u0000`)).map((key) => key.slice(backendId.length + 1)),

    elicited: (elicitationId, session) => {
      if (elicitations.size >= MAX_ELICITATIONS) {
        const oldest = elicitations.keys().next()
        if (oldest.done !== true) elicitations.delete(oldest.value)
      }
      elicitations.set(elicitationId, session)
    },
    takeElicitation: (elicitationId) => {
      const session = elicitations.get(elicitationId)
      elicitations.delete(elicitationId)
      return session
    },

    track: (session, backendId, context) => {
      let sessions = busy.get(backendId)
      if (sessions === undefined) busy.set(backendId, (sessions = new Map()))
      let calls = sessions.get(session)
      if (calls === undefined) sessions.set(session, (calls = new Set()))
      calls.add(context)
      return () => {
        calls.delete(context)
        if (calls.size > 0 || sessions.get(session) !== calls) return
        sessions.delete(session)
        if (sessions.size === 0 && busy.get(backendId) === sessions) busy.delete(backendId)
      }
    },
    busyOn: (backendId) => [...(busy.get(backendId)?.keys() ?? [])],
    callOf: (session, backendId) => {
      const calls = busy.get(backendId)?.get(session)
      if (calls === undefined) return undefined
      for (const context of calls) return context
      return undefined
    },

    adoptTask: (owner, backendId, backendTaskId, ttlMs, prefix = "") => {
      const route: TaskRoute = {
        id: `${prefix}${backendId}.${randomBytes(16).toString("base64url")}`,
        owner,
        backendId,
        backendTaskId,
        expiresAt: Date.now() + (ttlMs ?? DEFAULT_TASK_TTL_MS)
      }
      let own = ownerTasks.get(owner.key)
      if (own === undefined) ownerTasks.set(owner.key, (own = new Set()))
      if (own.size >= MAX_TASKS_PER_SESSION) evict(own.values().next().value!)
      own.add(route)
      tasks.set(route.id, route)
      tasksByBackend.set(keyOf(backendId, backendTaskId), route)
      return route
    },
    task: (owner, id) => {
      const route = live(tasks.get(id))
      return route?.owner.key === owner.key ? route : undefined
    },
    taskOf: (backendId, backendTaskId) => live(tasksByBackend.get(keyOf(backendId, backendTaskId))),
    tasksOf: (owner) => [...(ownerTasks.get(owner.key) ?? [])].filter((route) => live(route) !== undefined),
    forgetTask,
    forgetTasks: (owner) => {
      for (const route of [...(ownerTasks.get(owner.key) ?? [])]) evict(route)
    },
    onEvicted: (handler) => {
      evicted = handler
    }
  }
}

export class Routes extends Context.Service<Routes, RoutesService>()("mcp-agentify/Routes") {
  /** Fresh tables: one per gateway. */
  static readonly layer: Layer.Layer<Routes> = Layer.sync(Routes, make)
}
