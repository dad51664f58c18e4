/**
 * A request on a backend on behalf of a session's request: the last step of every call (see
 * pipeline/stages/Forward) and the way of every other request the aggregate relays. Without a progress
 * token over stdio it is the bare call (the passthrough hot path); otherwise the token is swapped
 * for the gateway's own and the call is recorded on the session while it runs, so the backend's
 * progress, log messages and requests reach the client whose call it is. A stateless (2026-07-28)
 * backend is told what the session's client can answer, and its input-required rounds are answered
 * by asking that client. A backend that acts as each user (`perUser`) gets a signed-in user's
 * requests on that user's own connection (see backend/Lanes).
 *
 * The forwarder alone holds the backend layer's requester: every request the gateway makes of a
 * backend, the pipeline's and its own housekeeping's (as `CurrentCaller.gateway`), passes here.
 */
import { Context, Effect, Layer } from "effect"
import { Backends } from "../../backend/Backends.js"
import { BackendRequester } from "../../backend/Requester.js"
import { BackendError } from "../../protocol/Errors.js"
import { oauthOf } from "../../config/Config.js"
import type { RequestContext } from "../../jsonrpc/Peer.js"
import { Meta as MetaKey } from "../../protocol/Mcp.js"
import * as Meta from "../../json/Meta.js"
import { objectOr } from "../../json/Json.js"
import { ClientAsk, isInputRequired, relayableCapabilities } from "../clientRequests/ClientAsk.js"
import * as Progress from "../routing/Progress.js"
import { Routes } from "../routing/Routes.js"
import { Sessions } from "../session/Sessions.js"
import type { Session } from "../session/Session.js"
import { CurrentCaller } from "./Caller.js"

export interface ForwarderService {
  /**
   * `method` on `backendId` for the current caller (see Caller) and its client's request `context`;
   * for no client (an embedding app's own call), straight on the backend.
   */
  readonly forward: (
    context: RequestContext | undefined,
    backendId: string,
    method: string,
    params: unknown
  ) => Effect.Effect<unknown, BackendError, CurrentCaller>
}

const make = Effect.gen(function* () {
  const backends = yield* Backends
  const requester = yield* BackendRequester
  const routes = yield* Routes
  const { mode } = yield* Sessions
  const clientAsk = yield* ClientAsk

  /**
   * Whose lane a session's request on `backendId` goes on: its user's, for a backend that acts as
   * each user; none (the shared connection) for any other, or for the local user's client (the one
   * user, as whom the gateway itself signed in). Any other session nobody signed in to cannot use one.
   */
  const laneOf = (session: Session, backendId: string, method: string): string | undefined | BackendError => {
    // The local user's client first: the passthrough's hot path looks nothing up.
    if (session.subject === undefined && session.edge.localUser) return undefined
    const config = backends.configOf(backendId)
    if (config === undefined || oauthOf(config)?.perUser !== true) return undefined
    if (session.subject !== undefined) return session.subject
    return new BackendError({
      backendId,
      reason: "not_ready",
      method,
      summary:
        "it acts as each user of the gateway, and this session has none (the gateway's HTTP listener takes no tokens: httpAuth)"
    })
  }

  const stateless = (
    session: Session,
    context: RequestContext,
    backendId: string,
    method: string,
    params: unknown,
    subject: string | undefined
  ): Effect.Effect<unknown, BackendError> => {
    const told = objectOr(
      session.ask !== undefined
        ? params
        : Meta.merge(params, { [MetaKey.clientCapabilities]: relayableCapabilities(session.clientCapabilities) })
    )
    const run = (withParams: unknown) => requester.request(backendId, method, withParams, subject)
    return Effect.flatMap(run(told), (result) =>
      session.ask !== undefined || !isInputRequired(result)
        ? Effect.succeed(result)
        : clientAsk.answerInputRequired(session, context, backendId, method, result, (inputResponses, requestState) =>
            run({ ...told, inputResponses, ...(requestState === undefined ? {} : { requestState }) })
          )
    )
  }

  const forward: ForwarderService["forward"] = (context, backendId, method, params) =>
    Effect.flatMap(CurrentCaller, ({ session }) => forwardFor(session, context, backendId, method, params))

  const forwardFor = (
    session: Session | undefined,
    context: RequestContext | undefined,
    backendId: string,
    method: string,
    params: unknown
  ): Effect.Effect<unknown, BackendError> => {
    if (session === undefined || context === undefined) return requester.request(backendId, method, params)
    const subject = laneOf(session, backendId, method)
    if (subject instanceof BackendError) return Effect.fail(subject)
    const token = Progress.tokenOf(params)
    const isStateless = backends.backend(backendId)?.era === "stateless"
    // A stateless request is tracked even over stdio: a backend's questions during it are its own.
    if (token === undefined && mode === "single" && session.ask === undefined && !isStateless) {
      return requester.request(backendId, method, params, subject)
    }
    return Effect.suspend(() => {
      let key: string | undefined
      let forwarded = params
      if (token !== undefined) {
        key = routes.openClientCall({ backendId, context, token })
        forwarded = Progress.withToken(params, key)
      }
      const untrack = routes.track(session, backendId, context)
      const call = !isStateless
        ? requester.request(backendId, method, forwarded, subject)
        : stateless(session, context, backendId, method, forwarded, subject)
      return Effect.ensuring(
        call,
        Effect.sync(() => {
          untrack()
          if (key !== undefined) routes.close(key)
        })
      )
    })
  }
  return { forward } satisfies ForwarderService
})

export class Forwarder extends Context.Service<Forwarder, ForwarderService>()("mcp-agentify/Forwarder") {
  static readonly layer: Layer.Layer<Forwarder, never, Backends | BackendRequester | Routes | Sessions | ClientAsk> =
    Layer.effect(Forwarder, make)
  /** Straight on the backend whoever calls, for an app that embeds the orchestrator without sessions. */
  static readonly layerDirect: Layer.Layer<Forwarder, never, BackendRequester> = Layer.effect(
    Forwarder,
    Effect.map(BackendRequester, (requester) => ({
      forward: (_context, backendId, method, params) => requester.request(backendId, method, params)
    }))
  )
}
