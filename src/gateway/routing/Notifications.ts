/**
 * What each notification of a backend's is to the sessions, as a table, one row per method: a
 * call's progress to the request that carries its token (only from the backend running it), a
 * log message with the calls in flight on that backend (else to every session it concerns), a
 * resource's update to the sessions holding it, the aggregate's lists changed with the backend's,
 * a task's status and a URL elicitation's completion to their owner only, and anything else to
 * the sessions at the backend's own endpoint.
 */
import type { BackendNotification } from "../../backend/Backends.js"
import * as Secrets from "../../observability/Secrets.js"
import { field, objectOr, stringField } from "../../json/Json.js"
import type { Session } from "../session/Session.js"
import type { RoutesService } from "./Routes.js"
import * as Tasks from "./Tasks.js"

export interface Options {
  /** The sessions open now (a live view). */
  readonly sessions: Iterable<Session>
  readonly routes: RoutesService
  /** The aggregate's lists of a backend's resources or prompts are stale (see methods/ContentLists). */
  readonly invalidate: (backendId: string, kind: "prompts" | "resources") => void
}

/** The router of backends' notifications: synchronous, it never blocks the backend's later replies. */
export const make = ({ sessions, routes, invalidate }: Options): ((notification: BackendNotification) => void) => {
  /** A backend's log message: with the calls in flight on it, else to every session it concerns. */
  const routeMessage = (backendId: string, params: unknown) => {
    const p = objectOr(params)
    const withCalls = routes.busyOn(backendId).length > 0
    for (const session of sessions) {
      if (session.phase !== "ready" || !session.serves(backendId) || !session.admits(p.level)) continue
      // Tagged with its backend on the aggregate; as the backend sent it on its own endpoint.
      const message = Secrets.scrubDeep(session.target._tag === "Aggregate" ? { ...p, logger: p.logger ?? backendId } : p)
      const call = routes.callOf(session, backendId)
      if (call !== undefined) call.notifyUnsafe("notifications/message", message)
      else if (!withCalls) session.notify("notifications/message", message)
    }
  }

  /** The aggregate's lists changed with the backend's; its own endpoint's sessions hear it as sent. */
  const listChangedOf =
    (kind: "prompts" | "resources") =>
    (backendId: string, method: string, params: unknown): void => {
      invalidate(backendId, kind)
      for (const session of sessions) {
        if (session.phase === "ready" && session.serves(backendId)) {
          session.notify(method, session.target._tag === "Backend" ? params : {})
        }
      }
    }

  /** What each notification of a backend's is to the sessions: a table, one row per method. */
  const notificationRoutes = new Map<string, (backendId: string, method: string, params: unknown) => void>([
    [
      "notifications/progress",
      (backendId, method, params) => {
        const token = stringField(params, "progressToken")
        const target = token === undefined ? undefined : routes.clientCall(token)
        // Only the backend running the call may report its progress: another cannot reach into it.
        if (target !== undefined && target.backendId === backendId) {
          target.context.notifyUnsafe(method, { ...objectOr(params), progressToken: target.token })
        }
      }
    ],
    ["notifications/message", (backendId, _method, params) => routeMessage(backendId, params)],
    [
      "notifications/resources/updated",
      (backendId, method, params) => {
        const uri = field(params, "uri")
        const holders = typeof uri === "string" ? routes.holders(backendId, uri) : undefined
        for (const session of holders ?? []) if (session.phase === "ready") session.notify(method, params)
      }
    ],
    ["notifications/resources/list_changed", listChangedOf("resources")],
    ["notifications/prompts/list_changed", listChangedOf("prompts")],
    [
      "notifications/tasks/status",
      (backendId, method, params) => {
        // To the session whose task it is (at /mcp or at the backend's own endpoint), by the id it
        // knows; never to every client of the backend, whose ids are not theirs.
        const taskId = stringField(params, "taskId")
        const task = taskId === undefined ? undefined : routes.taskOf(backendId, taskId)
        const owner = task?.owner.session
        if (task !== undefined && owner !== undefined && owner.phase === "ready")
          owner.notify(method, Tasks.toClient(task, params))
      }
    ],
    [
      "notifications/elicitation/complete",
      (backendId, method, params) => {
        // Only to the client that was asked.
        const elicitationId = field(params, "elicitationId")
        const owner = typeof elicitationId === "string" ? routes.takeElicitation(elicitationId) : undefined
        if (owner === undefined || owner.phase !== "ready" || !owner.serves(backendId)) return
        const call = routes.callOf(owner, backendId)
        if (call !== undefined) call.notifyUnsafe(method, params)
        else owner.notify(method, params)
      }
    ]
  ])

  /** Anything else names what only the backend's own endpoint offers: its sessions hear it. */
  const toOwnEndpoint = (backendId: string, method: string, params: unknown): void => {
    for (const session of sessions) {
      if (session.phase === "ready" && session.target._tag === "Backend" && session.target.backendId === backendId) {
        session.notify(method, params)
      }
    }
  }

  return ({ backendId, method, params }: BackendNotification): void =>
    (notificationRoutes.get(method) ?? toOwnEndpoint)(backendId, method, params)
}
