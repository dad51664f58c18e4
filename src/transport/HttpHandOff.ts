/**
 * A team's gateways behind any load balancer, as middleware in front of the endpoints: a request
 * that another gateway of the team must serve is handed to it (see Forward) before this one reads
 * it: what its headers name that another gateway holds (the sessions say what that is: a lease of
 * the team's directory), a body the sessions say another gateway holds, a sign-in that waits
 * there. Where the team's store cannot say who holds it, 503 (the client tries again: nothing is
 * lost).
 */
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import { Effect } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import type { ResolvedConfig } from "../config/Config.js"
import { type SharedSessions, STORE_SILENT_REFUSAL } from "../gateway/clients/Protocol.js"
import { failure, stringify } from "../jsonrpc/JsonRpc.js"
import { ErrorCode } from "../protocol/Errors.js"
import * as Replica from "../store/Replica.js"
import * as Forward from "./Forward.js"
import type { Access } from "./HttpAccess.js"
import { reject } from "./HttpWire.js"

type Response = HttpServerResponse.HttpServerResponse

export const make = (sessions: SharedSessions, guards: Access["guards"], config: ResolvedConfig) => {
  const { directory } = sessions

  /** Where something is, the team's store could not say: the client tries again (nothing is lost). */
  const storeSilent = () => reject(STORE_SILENT_REFUSAL.status, STORE_SILENT_REFUSAL.message, STORE_SILENT_REFUSAL.headers)

  /** To the gateway `replica`, when it lives; undefined when it is gone. */
  const toHolder = (request: HttpServerRequest.HttpServerRequest, replica: string, body?: string) =>
    Effect.flatMap(directory.addressOf(replica), (at) =>
      at === "unknown"
        ? Effect.succeed(storeSilent())
        : at === "none"
          ? Effect.succeed(undefined)
          : Forward.forward(request, at.at, directory.replicaId, reject, body)
    )

  /** A request naming what another gateway holds (a lease of the directory): handed to it; undefined: this one serves it. */
  const session = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<Response | undefined> => {
    const named = sessions.leaseNamed(request.headers)
    if (named === undefined || Forward.wasForwarded(request)) return Effect.succeed(undefined)
    return Effect.flatMap(directory.ownerOf(named), (holder) =>
      holder === "unknown"
        ? Effect.succeed(storeSilent())
        : holder === "none"
          ? Effect.succeed(undefined)
          : Forward.forward(request, holder.at, directory.replicaId, reject)
    )
  }

  /** A sign-in's redirect whose `state` names another gateway of the team: handed to the one that waits for it. */
  const signIn = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<Response | undefined> => {
    const waiting = Replica.givenElsewhere(
      { sessionIdPrefix: "", state: config.state },
      new URL(request.url, "http://gateway").searchParams.get("state")
    )
    return waiting === undefined || Forward.wasForwarded(request) ? Effect.succeed(undefined) : toHolder(request, waiting)
  }

  /**
   * A request for a session another gateway holds, as the store named it a moment ago: handed on
   * at the listener, before anything here parses it. What only this gateway can check (the
   * Host the client named, its Origin) is checked here; its holder checks the rest (the
   * token, the body) as for a request of its own. Else false: the app serves it.
   */
  const handOn = (incoming: IncomingMessage, response: ServerResponse): boolean => {
    const named = sessions.leaseNamed(incoming.headers)
    if (named === undefined || incoming.headers[Forward.FORWARDED_HEADER] !== undefined) return false
    const holder = directory.ownerKnown(named)
    if (holder === undefined || typeof holder === "string") return false
    if (!guards.hostAllowed(incoming.headers.host) || !guards.originAllowed(incoming.headers.origin)) return false
    Forward.handOn(incoming, response, holder.at, directory.replicaId, (message) =>
      stringify(failure(null, { code: ErrorCode.InvalidRequest, message }))
    )
    return true
  }

  return { session, toHolder, signIn, handOn }
}

export type HandOff = ReturnType<typeof make>
