/**
 * Where the configured backends start, however the gateway runs: a shared gateway's (HTTP, an
 * embedding app) as its layer builds; a stdio client's with its `initialize`, told what that
 * client can answer; a stdio connection's first 2026-07-28 request, which has no `initialize`.
 * Once per gateway: a second start waits for the first, so two ways in cannot start two sets.
 *
 * Nobody waits for the backends here: `initialize` is answered and the HTTP port listens at once,
 * whatever the backends are doing. What needs their tools waits for them itself, within
 * `startupTimeoutMs` (a session's first request, a search: see Backends' `settle`).
 */
import { Context, Effect, Layer, Semaphore } from "effect"
import { Backends, startOptionsOf } from "../backend/Backends.js"
import { GatewayConfig } from "../config/Config.js"

export interface LaunchService {
  /**
   * Starts every configured backend (as configured now), telling them the client capabilities
   * given, and returns once they are on their way; later calls wait for that.
   */
  readonly start: (clientCapabilities: Readonly<Record<string, unknown>>) => Effect.Effect<void>
}

export class Launch extends Context.Service<Launch, LaunchService>()("mcp-agentify/Launch") {
  static readonly layer: Layer.Layer<Launch, never, GatewayConfig | Backends> = Layer.effect(
    Launch,
    Effect.gen(function* () {
      const config = yield* GatewayConfig
      const backends = yield* Backends
      // One start at a time; a start that was interrupted (a cancelled initialize) left nothing
      // running, so the next one starts again.
      const lock = yield* Semaphore.make(1)
      const scope = yield* Effect.scope
      let started = false
      /** Said once the start-up timeout has passed, of the backends still starting then. */
      const sayStillStarting = Effect.flatMap(config.current, (current) =>
        Effect.flatMap(backends.settle, (pending) =>
          pending.length === 0
            ? Effect.void
            : Effect.logWarning(
                `still starting after ${current.startupTimeoutMs} ms: ${pending.join(", ")}; ` +
                  "their tools appear when they are ready"
              )
        )
      )
      return {
        start: (clientCapabilities) =>
          lock.withPermits(1)(
            Effect.suspend(() =>
              started
                ? Effect.void
                : Effect.flatMap(config.current, (current) =>
                    backends.begin(current.backends, startOptionsOf(current, clientCapabilities))
                  ).pipe(
                    Effect.tap(() => Effect.sync(() => (started = true))),
                    Effect.andThen(Effect.forkIn(sayStillStarting, scope))
                  )
            )
          )
      }
    })
  )
}
