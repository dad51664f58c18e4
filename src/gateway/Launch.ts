/**
 * Where the configured backends start, however the gateway runs: a shared gateway's (HTTP, an
 * embedding app) as its layer builds; a stdio client's with its `initialize`, told what that
 * client can answer; a stdio connection's first 2026-07-28 request, which has no `initialize`.
 * Once per gateway: a second start waits for the first, so two ways in cannot start two sets.
 */
import { Context, Effect, Layer } from "effect"
import { Backends, startOptionsOf } from "../backend/Backends.js"
import { GatewayConfig } from "../config/Config.js"

export interface LaunchService {
  /**
   * Starts every configured backend (as configured now), bounded by `startupTimeoutMs`, telling
   * them the client capabilities given; later calls wait for that start.
   */
  readonly start: (clientCapabilities: Readonly<Record<string, unknown>>) => Effect.Effect<void>
}

export class Launch extends Context.Tag("mcp-agentify/Launch")<Launch, LaunchService>() {
  static readonly layer: Layer.Layer<Launch, never, GatewayConfig | Backends> = Layer.effect(
    Launch,
    Effect.gen(function* () {
      const config = yield* GatewayConfig
      const backends = yield* Backends
      // One start at a time; a start that was interrupted (a cancelled initialize) left nothing
      // running, so the next one starts again.
      const lock = yield* Effect.makeSemaphore(1)
      let started = false
      return {
        start: (clientCapabilities) =>
          lock.withPermits(1)(
            Effect.suspend(() =>
              started
                ? Effect.void
                : Effect.flatMap(config.current, (current) =>
                    backends.start(current.backends, startOptionsOf(current, clientCapabilities))
                  ).pipe(Effect.tap(() => Effect.sync(() => (started = true))))
            )
          )
      }
    })
  )
}
