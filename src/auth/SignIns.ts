/**
 * Sign-ins the running gateway asks a user for (a step-up to more scope, a user's own sign-in):
 * the authorization code flow of `mcp-agentify auth` (see SignIn), its redirect received on a
 * loopback listener of this process, started for the sign-in and closed with it. One sign-in at a
 * time per backend: a second call that needs the same one waits for it. The user is asked by the
 * caller (URL-mode elicitation); here is only the flow and its end.
 */
import { Context, Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import type { OAuthSettings } from "../config/Config.js"
import * as Secrets from "../observability/Secrets.js"
import { messageOf } from "../data/Json.js"
import { loopback, prepare, within } from "./SignIn.js"
import * as Store from "./Store.js"

/** How long a sign-in waits for its user. */
export const SIGN_IN_TIMEOUT_MS = 5 * 60_000

export interface Backend {
  readonly id: string
  readonly url: string
  readonly settings: OAuthSettings | undefined
}

/** A sign-in under way: the page its user opens, and when it is done (the tokens stored). */
export interface Started {
  readonly elicitationId: string
  readonly url: string
  readonly done: Promise<void>
}

export interface SignInsService {
  /** Starts a sign-in to `backend` for `scopes` (or joins the one under way). */
  readonly start: (backend: Backend, scopes: ReadonlyArray<string>) => Effect.Effect<Started, Error>
  /** The scopes of the tokens stored for a backend (what a step-up adds to). */
  readonly grantedScopes: (backendId: string) => ReadonlyArray<string>
}

export const make = (dir: string, timeoutMs = SIGN_IN_TIMEOUT_MS): SignInsService => {
  const underway = new Map<string, Promise<Started>>()
  const begin = async (backend: Backend, scopes: ReadonlyArray<string>): Promise<Started> => {
    const listener = await loopback(backend.id)
    try {
      const prepared = await prepare(backend, listener.redirectUri, { dir, scopes })
      const done = within(listener.returned, timeoutMs, `no sign-in to ${backend.id}`)
        .then((returned) => prepared.finish(returned))
        .then(() => undefined)
        .finally(() => {
          listener.close()
          underway.delete(backend.id)
        })
      // Nobody may wait for it (the client was told to open the page later): never unhandled.
      done.catch(() => {})
      return { elicitationId: randomUUID(), url: prepared.url.href, done }
    } catch (error) {
      listener.close()
      underway.delete(backend.id)
      throw error
    }
  }
  return {
    start: (backend, scopes) =>
      Effect.tryPromise({
        try: () => {
          let started = underway.get(backend.id)
          if (started === undefined) underway.set(backend.id, (started = begin(backend, scopes)))
          return started
        },
        catch: (error) => new Error(`the sign-in to ${backend.id} could not start: ${Secrets.scrub(messageOf(error))}`)
      }),
    grantedScopes: (backendId) =>
      (Store.read(dir, backendId)?.tokens?.scope ?? "").split(" ").filter((s) => s !== "" && s !== "offline_access")
  }
}

export class SignIns extends Context.Tag("mcp-agentify/SignIns")<SignIns, SignInsService>() {
  /** Tokens in the token store's directory (`AGENTIFY_TOKEN_DIR`, else the user's config directory). */
  static readonly layer: Layer.Layer<SignIns> = Layer.sync(SignIns, () => make(Store.directory()))
}
