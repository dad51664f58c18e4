/**
 * Lanes: a remote backend that acts as each user (`auth: {type: "oauth", perUser: true}`) has a
 * connection of its own per user of the gateway, beside the shared one that lists its tools with
 * the gateway's own sign-in. A user's lane is opened by their first request with their tokens
 * only (a Backend made with `subject`: see auth/Client `BackendTokens`), shared by all their
 * requests, and closed when it has been idle `LANE_IDLE_MS`, when it ends by itself (a refused
 * token, a lost connection: the next request opens another) or when the backend stops.
 *
 * A lane that cannot open because its user has no usable token fails saying so (`needsAuth` and
 * `subject` in the error's data): the call pipeline's `credentials` stage asks that user to sign
 * in, and the call is made again. A failure is not kept: the next request tries afresh.
 *
 * On `RcMap`: reference-counted per user, idle time to live, closed with the Backends' scope.
 */
import { Effect, RcMap, type Scope } from "effect"
import { BackendError } from "../protocol/Errors.js"
import { field, isObject } from "../json/Json.js"
import type { Backend } from "./Contract.js"
import { needsAuthOf } from "./Channel.js"

/** How long a user's lane stays open with no request on it. */
export const LANE_IDLE_MS = 10 * 60_000

export interface LanesService {
  /** `method` on `subject`'s own connection to `backendId`, opened when it is not. */
  readonly request: (backendId: string, subject: string, method: string, params: unknown) => Effect.Effect<unknown, BackendError>
  /** The users with a lane open to `backendId` now. */
  readonly users: (backendId: string) => Effect.Effect<ReadonlyArray<string>>
  /** Closes `backendId`'s lanes (it stopped, or a reload changed it); requests on them finish first. */
  readonly close: (backendId: string) => Effect.Effect<void>
}

/** Whether a backend's failure is its user's missing or refused sign-in, and whose (see `make`). */
export const signInNeededBy = (error: unknown): string | undefined => {
  if (!(error instanceof BackendError) || !needsAuthOf(error.detail)) return undefined
  const subject = field(field(error.detail, "data"), "subject")
  return typeof subject === "string" ? subject : undefined
}

/**
 * A lane's key: a structure compared field by field (Effect's `Equal`/`Hash` compare plain objects
 * by value), never a joined string a subject could forge.
 */
interface LaneKey {
  readonly backendId: string
  readonly subject: string
}
const laneKey = (backendId: string, subject: string): LaneKey => ({ backendId, subject })

/** The error of a lane whose user must sign in, saying whose; every other failure as it is. */
const ownedBy = (error: BackendError, subject: string): BackendError => {
  if (!needsAuthOf(error.detail) || !isObject(error.detail)) return error
  const data = { ...(field(error.detail, "data") as object), subject }
  return new BackendError({ ...error, detail: { ...error.detail, data } })
}

export const make = (
  open: (backendId: string, subject: string) => Effect.Effect<Backend, BackendError, Scope.Scope>,
  idleMs: number = LANE_IDLE_MS
): Effect.Effect<LanesService, never, Scope.Scope> =>
  Effect.gen(function* () {
    const outer = yield* Effect.scope
    const lanes: RcMap.RcMap<LaneKey, Backend, BackendError> = yield* RcMap.make({
      lookup: (key: LaneKey) =>
        Effect.gen(function* () {
          // A lane that could not open is not kept for its idle time: the next request (after a
          // sign-in, say) opens it afresh.
          const backend = yield* Effect.tapError(open(key.backendId, key.subject), () =>
            Effect.forkIn(RcMap.invalidate(lanes, key), outer)
          )
          // Ended by itself: forgotten, from outside its own scope (which the forgetting closes).
          // Closed as idle or stopped, this watcher goes first (finalizers run in reverse order).
          yield* Effect.forkScoped(Effect.andThen(backend.exited, Effect.forkIn(RcMap.invalidate(lanes, key), outer)))
          return backend
        }),
      idleTimeToLive: idleMs
    })
    const keysOf = (backendId: string) =>
      Effect.map(RcMap.keys(lanes), (keys) => Array.from(keys).filter((key) => key.backendId === backendId))
    return {
      request: (backendId, subject, method, params) =>
        Effect.scoped(
          Effect.flatMap(RcMap.get(lanes, laneKey(backendId, subject)), (backend) => backend.request(method, params))
        ).pipe(Effect.mapError((error) => ownedBy(error, subject))),
      users: (backendId) => Effect.map(keysOf(backendId), (keys) => keys.map((key) => key.subject)),
      close: (backendId) =>
        Effect.flatMap(keysOf(backendId), (keys) =>
          Effect.forEach(keys, (key) => RcMap.invalidate(lanes, key), { discard: true })
        )
    } satisfies LanesService
  })
