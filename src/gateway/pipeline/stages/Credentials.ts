/**
 * `credentials`: a remote backend that answers a call 403 `insufficient_scope` (its token lacks a
 * scope this call needs) gets a token with more; a backend that acts as each user (`perUser`)
 * gets the caller's own token when they have none yet (or theirs was refused). The user is asked
 * to sign in (again, for the scopes held so far and those the backend named), through URL-mode
 * elicitation (the client shows the authorization server's page;
 * `notifications/elicitation/complete` tells it the sign-in is done); then the call is tried once
 * more. A client without URL elicitation gets -32042
 * URLElicitationRequired with the page to open; the sign-in waits for its user, so the next try
 * goes through. Declined, or failed again: the backend's refusal stands. It needs the tool `find`
 * found (its backend); it fails with the backend's BackendError, UrlElicitationRequired (-32042),
 * or SignInFailed (a sign-in that could not start or finish).
 */
import { Effect } from "effect"
import { oauthOf, type BackendConfig } from "../../../config/Config.js"
import { field, isObject, messageOf } from "../../../json/Json.js"
import * as Secrets from "../../../observability/Secrets.js"
import { type AskError, BackendError, SignInFailed, UrlElicitationRequired } from "../../../protocol/Errors.js"
import { insufficientScopeOf } from "../../../backend/Channel.js"
import { signInNeededBy } from "../../../backend/Lanes.js"
import { SIGN_IN_TIMEOUT_MS, SignIns, type SignInsService } from "../../../auth/SignIns.js"
import { Backends } from "../../../backend/Backends.js"
import type { ToolCall } from "../Call.js"
import { type Found, type Nothing, row, type Stage } from "../Stage.js"
import type { Page } from "../Trail.js"

export interface Deps {
  readonly signIns: Pick<SignInsService, "start" | "grantedScopes">
  readonly configOf: (backendId: string) => BackendConfig | undefined
}

/** The scopes a backend's 403 asked for, when the failure is one. */
const wantedOf = (error: unknown): ReadonlyArray<string> | undefined => {
  if (!(error instanceof BackendError) || error.reason !== "call_failed") return undefined
  return insufficientScopeOf(error.detail)
}

/** Whether the client takes `elicitation/create` in URL mode (2025-11-25: `elicitation: {url: {}}`). */
const takesUrls = (capabilities: Readonly<Record<string, unknown>>): boolean =>
  isObject(field(capabilities, "elicitation")) && isObject(field(field(capabilities, "elicitation"), "url"))

export const make = (deps: Deps): Stage<Found, Nothing, BackendError | UrlElicitationRequired | SignInFailed | AskError> => {
  /** `wanted`: the scopes a 403 named (a step-up); undefined: the user's first sign-in (or a refused one's). */
  const signIn = (call: ToolCall & Found, trail: Page, refused: BackendError, wanted: ReadonlyArray<string> | undefined) =>
    Effect.gen(function* () {
      const backendId = call.target.backendId
      const config = deps.configOf(backendId)
      if (config?.url === undefined) return yield* refused
      const settings = oauthOf(config)
      // A backend that acts as each user: the caller's own tokens (a lane's failure names its user).
      const subject = settings?.perUser === true ? call.session?.subject : undefined
      if (wanted === undefined && (subject === undefined || signInNeededBy(refused) !== subject)) return yield* refused
      // A step-up: what was held, and what the backend asks for now (a new sign-in replaces the token).
      const scopes =
        wanted === undefined
          ? settings?.scopes
          : [...new Set([...deps.signIns.grantedScopes(backendId, subject), ...(settings?.scopes ?? []), ...wanted])]
      const started = yield* Effect.mapError(
        deps.signIns.start({ id: backendId, url: config.url, settings, subject }, scopes),
        (error) => new SignInFailed({ backendId, summary: error.message })
      )
      const message =
        wanted === undefined
          ? `${backendId} acts as each of its users: sign in to it as yourself (${subject}).`
          : `${backendId} needs you to sign in again to allow ${wanted.join(" ") || "this call"}.`
      const what = scopes === undefined ? "" : ` for ${scopes.join(" ")}`
      const elicitation = { mode: "url", elicitationId: started.elicitationId, url: started.url, message }
      const session = call.session
      if (session === undefined || !takesUrls(session.clientCapabilities)) {
        trail.note({ said: `a sign-in${what} is needed: the client was given its URL` })
        return yield* new UrlElicitationRequired({
          message: `${message} Open ${started.url} and try again.`,
          elicitations: [elicitation]
        })
      }
      trail.note({ said: `asked the user to sign in${what}` })
      const answer = yield* session.request("elicitation/create", elicitation, call.context)
      if (field(answer, "action") !== "accept") return yield* refused
      yield* Effect.tryPromise({
        try: () => started.done,
        catch: (error) => new SignInFailed({ backendId, summary: Secrets.scrub(messageOf(error)) })
      }).pipe(Effect.timeoutOrElse({ duration: SIGN_IN_TIMEOUT_MS, orElse: () => Effect.fail(refused) }))
      const complete = { elicitationId: started.elicitationId }
      if (call.context !== undefined) yield* call.context.notify("notifications/elicitation/complete", complete)
      else session.notify("notifications/elicitation/complete", complete)
    })

  return {
    name: "credentials",
    run: (call, next, trail) =>
      // Only a remote backend asks for a sign-in: a local one's call goes on untouched.
      deps.configOf(call.target.backendId)?.url === undefined
        ? next(call)
        : Effect.catch(next(call), (error) => {
            if (!(error instanceof BackendError)) return Effect.fail(error)
            const wanted = wantedOf(error)
            if (wanted === undefined && signInNeededBy(error) === undefined) return Effect.fail(error)
            // Once: a second refusal is the backend's answer.
            return Effect.andThen(signIn(call, trail, error, wanted), next(call))
          })
  }
}

export const stage = row("credentials", () =>
  Effect.map(Effect.all([SignIns, Backends]), ([signIns, backends]) => make({ signIns, configOf: backends.configOf }))
)
