/**
 * What a backend asks of its client (`roots/list`, `sampling/createMessage`, `elicitation/create`):
 * the request as the gateway relays it, what a backend is told the client can answer, and the
 * answer when no gateway relays (a backends service used on its own).
 */
import { Effect } from "effect"
import type { BackendConfig } from "../config/Config.js"
import { type AskError, MethodNotFound } from "../protocol/Errors.js"

/** A request a backend sent (`roots/list`, `sampling/createMessage`, `elicitation/create`). */
export interface BackendRequest {
  readonly backendId: string
  readonly method: string
  readonly params: unknown
  /** The backend's configured roots, as `roots/list` gives them. */
  readonly roots: ReadonlyArray<{ readonly uri: string; readonly name?: string }>
}

export type BackendRequestHandler = (request: BackendRequest) => Effect.Effect<unknown, AskError>

/** What a backend is told the client can do: the base, and `roots` when it has configured roots. */
export const capabilitiesFor = (
  config: BackendConfig,
  base: Readonly<Record<string, unknown>> = {}
): Readonly<Record<string, unknown>> => (config.roots === undefined || base.roots !== undefined ? base : { ...base, roots: {} })

/** A backend's request with no gateway to relay it: its configured roots, and nothing else. */
export const answerAlone = (request: BackendRequest): Effect.Effect<unknown, AskError> =>
  request.method === "roots/list"
    ? Effect.succeed({ roots: request.roots })
    : Effect.fail(new MethodNotFound({ message: `Method not found: ${request.method} (no client is connected to relay it to)` }))
