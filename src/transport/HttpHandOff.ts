/**
 * A team's gateways behind any load balancer, as middleware in front of the endpoints: a request
 * that another gateway of the team must serve is handed to it (see Forward) before this one reads
 * it: a session it holds, a stateless round or task it holds, a sign-in that waits there. Where
 * the team's store cannot say who holds it, 503 (the client tries again: nothing is lost); a
 * task whose gateway is gone answers with what the store kept of it.
 */
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import { Effect } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import type { ResolvedConfig } from "../config/Config.js"
import { type SharedSessions, STORE_SILENT } from "../gateway/clients/Protocol.js"
import { failure, stringify } from "../jsonrpc/JsonRpc.js"
import { ErrorCode } from "../protocol/Errors.js"
import * as Replica from "../store/Replica.js"
import * as Forward from "./Forward.js"
import type { Access } from "./HttpAccess.js"
import { json, reject, SESSION_HEADER } from "./HttpWire.js"

type Response = HttpServerResponse.HttpServerResponse

export const make = (sessions: SharedSessions, guards: Access["guards"], config: ResolvedConfig) => {
  const { directory } = sessions

  /** Where something is, the team's store could not say: the client tries again (nothing is lost). */
  const storeSilent = () =>
    reject(503, "Service Unavailable: the store of this team's gateways did not answer; try again", { "retry-after": "1" })

  /** To the gateway `replica`, when it lives; undefined when it is gone. */
  const toReplica = (request: HttpServerRequest.HttpServerRequest, replica: string, body?: string) =>
    Effect.flatMap(directory.addressOf(replica), (at) =>
      at === "unknown"
        ? Effect.succeed(storeSilent())
        : at === "none"
          ? Effect.succeed(undefined)
          : Forward.forward(request, at.at, directory.replicaId, reject, body)
    )

  /** A request naming a session another gateway holds: handed to it; undefined: this one serves it. */
  const session = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<Response | undefined> => {
    const named = request.headers[SESSION_HEADER]
    if (typeof named !== "string" || sessions.holds(named) || Forward.wasForwarded(request)) return Effect.succeed(undefined)
    return Effect.flatMap(directory.ownerOf(named), (holder) =>
      holder === "unknown"
        ? Effect.succeed(storeSilent())
        : holder === "none"
          ? Effect.succeed(undefined)
          : Forward.forward(request, holder.at, directory.replicaId, reject)
    )
  }

  /**
   * A 2026-07-28 round's answers for a call, or a request about a task, another gateway holds:
   * handed to it; its gateway gone, a task is what the store kept of it when it finished, else failed.
   */
  const stateless = (
    request: HttpServerRequest.HttpServerRequest,
    value: unknown,
    body: string,
    subject: string | undefined
  ): Effect.Effect<Response | undefined> => {
    const holder = sessions.heldElsewhere(value)
    if (holder === undefined || Forward.wasForwarded(request)) return Effect.succeed(undefined)
    return Effect.flatMap(toReplica(request, holder, body), (handed) =>
      handed !== undefined
        ? Effect.succeed(handed)
        : Effect.map(sessions.lostTask(value, holder, subject), (lost) =>
            lost === STORE_SILENT ? storeSilent() : lost === undefined ? undefined : json(200, lost)
          )
    )
  }

  /** A sign-in's redirect whose `state` names another gateway of the team: handed to the one that waits for it. */
  const signIn = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<Response | undefined> => {
    const waiting = Replica.givenElsewhere(
      { sessionIdPrefix: "", state: config.state },
      new URL(request.url, "http://gateway").searchParams.get("state")
    )
    return waiting === undefined || Forward.wasForwarded(request) ? Effect.succeed(undefined) : toReplica(request, waiting)
  }

  /**
   * A request for a session another gateway holds, as the store named it a moment ago: handed on
   * at the listener, before anything here parses it. What only this gateway can check (the
   * Host the client named, its Origin) is checked here; its holder checks the rest (the
   * token, the body) as for a request of its own. Else false: the app serves it.
   */
  const handOn = (incoming: IncomingMessage, response: ServerResponse): boolean => {
    const named = incoming.headers[SESSION_HEADER]
    if (typeof named !== "string" || incoming.headers[Forward.FORWARDED_HEADER] !== undefined || sessions.holds(named)) {
      return false
    }
    const holder = directory.ownerKnown(named)
    if (holder === undefined || typeof holder === "string") return false
    if (!guards.hostAllowed(incoming.headers.host) || !guards.originAllowed(incoming.headers.origin)) return false
    Forward.handOn(incoming, response, holder.at, directory.replicaId, (message) =>
      stringify(failure(null, { code: ErrorCode.InvalidRequest, message }))
    )
    return true
  }

  return { session, stateless, signIn, handOn }
}

export type HandOff = ReturnType<typeof make>
