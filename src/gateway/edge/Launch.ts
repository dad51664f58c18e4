/**
 * Where the configured backends start, however the gateway runs: a shared gateway's (HTTP, an
 * embedding app) as its layer builds; a stdio client's with its `initialize`, told what that
 * client can answer; a stdio connection's first 2026-07-28 request, which has no `initialize`.
 * Once per gateway: a second start waits for the first, so two ways in cannot start two sets.
 */
import { Context, Deferred, Effect, Layer } from "effect"
import { Backends, startOptionsOf } from "../../backend/Backends.js"
import { GatewayConfig } from "../../config/Config.js"

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
      const started = yield* Deferred.make<void>()
      let first = true
      return {
        start: (clientCapabilities) =>
          Effect.suspend(() => {
            if (!first) return Deferred.await(started)
            first = false
            return Effect.flatMap(config.current, (current) =>
              backends.start(current.backends, startOptionsOf(current, clientCapabilities))
            ).pipe(Effect.ensuring(Deferred.succeed(started, undefined)))
          })
      }
    })
  )
}
