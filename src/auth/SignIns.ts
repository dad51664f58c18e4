/**
 * Sign-ins the running gateway asks a user for (a step-up to more scope, or a user's first call
 * to a backend that acts as each user, `perUser`): the authorization code
 * flow of `mcp-agentify auth` (see SignIn). Its redirect comes back to the gateway's HTTP listener
 * (`/oauth/callback`, when it serves HTTP: the user's browser may be on another machine), else to
 * a loopback listener of this process, started for the sign-in and closed with it. One sign-in at
 * a time per backend and user: a second call that needs the same one waits for it. The user is asked by
 * the caller (URL-mode elicitation); here is only the flow and its end.
 */
import { Context, Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import type { OAuthSettings } from "../config/Config.js"
import * as Secrets from "../observability/Secrets.js"
import { messageOf } from "../json/Json.js"
import * as Store from "./Store.js"
import { REPLICA_ID } from "../store/Replica.js"
import { nobody, type Told, WrittenFiles } from "../store/WrittenFiles.js"

/** How long a sign-in waits for its user. */
export const SIGN_IN_TIMEOUT_MS = 5 * 60_000

export interface Backend {
  readonly id: string
  readonly url: string
  readonly settings: OAuthSettings | undefined
  /** A user signing in for themselves (a `perUser` backend); absent: the gateway's own sign-in. */
  readonly subject?: string | undefined
}

/** A sign-in under way: the page its user opens, and when it is done (the tokens stored). */
export interface Started {
  readonly elicitationId: string
  readonly url: string
  readonly done: Promise<void>
}

/** Where the HTTP listener takes sign-ins' redirects. */
export const CALLBACK_PATH = "/oauth/callback"

export interface SignInsService {
  /** The HTTP listener's public address (`https://host`): sign-ins return to its `/oauth/callback` from now on. */
  readonly callbacksAt: (base: string) => void
  /**
   * A redirect that reached the HTTP listener (its path and query): the backend whose sign-in
   * waited for it (by its `state`), else undefined. Read against the public address, as the token
   * request must repeat the redirect URI exactly.
   */
  readonly callback: (pathAndQuery: string) => string | undefined
  /** Starts a sign-in to `backend` for `scopes` (else those configured or asked for), or joins the one under way. */
  readonly start: (backend: Backend, scopes: ReadonlyArray<string> | undefined) => Effect.Effect<Started, Error>
  /** The scopes of the tokens stored for a backend, or a user's of it (what a step-up adds to). */
  readonly grantedScopes: (backendId: string, subject?: string | undefined) => ReadonlyArray<string>
}

export const make = (dir: string, timeoutMs = SIGN_IN_TIMEOUT_MS, told: Told = nobody): SignInsService => {
  const underway = new Map<string, Promise<Started>>()
  /** Sign-ins waiting for their redirect at the HTTP listener, by `state`. */
  const waiting = new Map<string, { readonly what: string; readonly deliver: (url: URL) => void }>()
  let base: string | undefined
  /** The HTTP listener's callback, else a loopback listener of the sign-in's own. */
  const listen = async (
    what: string
  ): Promise<{ redirectUri: string; returned: (state: string) => Promise<URL>; close: () => void }> => {
    if (base === undefined) {
      const listener = await (await import("./SignIn.js")).loopback(what)
      return { redirectUri: listener.redirectUri, returned: () => listener.returned, close: listener.close }
    }
    let state: string | undefined
    return {
      redirectUri: `${base}${CALLBACK_PATH}`,
      returned: (s) => new Promise<URL>((resolve) => waiting.set((state = s), { what, deliver: resolve })),
      close: () => {
        if (state !== undefined) waiting.delete(state)
      }
    }
  }
  const begin = async (backend: Backend, scopes: ReadonlyArray<string> | undefined): Promise<Started> => {
    // The OAuth client (openid-client) loads with the first sign-in: a gateway that asks for none never reads it.
    const { prepare, within } = await import("./SignIn.js")
    const listener = await listen(backend.id)
    try {
      // The `state` names this gateway: a redirect that reaches another of its team is handed here.
      const prepared = await prepare(backend, listener.redirectUri, {
        dir,
        told,
        scopes,
        subject: backend.subject,
        statePrefix: `${REPLICA_ID}.`
      })
      const done = within(listener.returned(prepared.state), timeoutMs, `no sign-in to ${backend.id}`)
        .then((returned) => prepared.finish(returned))
        .then(() => undefined)
        .finally(() => {
          listener.close()
          underway.delete(Store.entryOf(backend.id, backend.subject))
        })
      // Nobody may wait for it (the client was told to open the page later): never unhandled.
      done.catch(() => {})
      return { elicitationId: randomUUID(), url: prepared.url.href, done }
    } catch (error) {
      listener.close()
      underway.delete(Store.entryOf(backend.id, backend.subject))
      throw error
    }
  }
  return {
    callbacksAt: (at) => {
      base = at.replace(/\/+$/, "")
    },
    callback: (pathAndQuery) => {
      if (base === undefined) return undefined
      const url = new URL(pathAndQuery, base)
      const waiter = waiting.get(url.searchParams.get("state") ?? "")
      waiter?.deliver(url)
      return waiter?.what
    },
    start: (backend, scopes) =>
      Effect.tryPromise({
        try: () => {
          const entry = Store.entryOf(backend.id, backend.subject)
          let started = underway.get(entry)
          if (started === undefined) underway.set(entry, (started = begin(backend, scopes)))
          return started
        },
        catch: (error) => new Error(`the sign-in to ${backend.id} could not start: ${Secrets.scrub(messageOf(error))}`)
      }),
    grantedScopes: (backendId, subject) =>
      (Store.read(dir, Store.entryOf(backendId, subject))?.tokens?.scope ?? "")
        .split(" ")
        .filter((s) => s !== "" && s !== "offline_access")
  }
}

export class SignIns extends Context.Service<SignIns, SignInsService>()("mcp-agentify/SignIns") {
  /** Tokens in the token store's directory (`AGENTIFY_TOKEN_DIR`, else the user's config directory). */
  static readonly layer: Layer.Layer<SignIns> = Layer.effect(
    SignIns,
    Effect.map(WrittenFiles, (written) => make(Store.directory(), SIGN_IN_TIMEOUT_MS, written.wrote))
  )
}
