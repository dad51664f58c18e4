/**
 * The debug UI as a layer: recording and, once a debug port is configured, the server. Apart from
 * the server itself so that a gateway that never serves the page never loads an HTTP server: the
 * server's module is imported when a port is set.
 */
import { Effect, Filter, Layer, Option, PubSub, Stream } from "effect"
import type { Backends } from "../backend/Backends.js"
import { GatewayConfig } from "../config/Config.js"
import { Events } from "../observability/Events.js"
import type { Options } from "./DebugServer.js"
import { Recorder } from "./Recorder.js"

/** Feeds `recorder` from the events hub until the scope closes (subscribed when this returns). */
export const record = (recorder: Recorder) =>
  Effect.gen(function* () {
    const subscription = yield* (yield* Events).subscribe
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.map(PubSub.takeBetween(subscription, 1, 1_024), (batch) => {
          for (const event of batch) {
            try {
              recorder.record(event)
            } catch {
              // An event that cannot be recorded is skipped; the recording goes on.
            }
          }
        })
      )
    )
  })

/**
 * Starts the debug server once a debug port is configured: at start-up (`--debug-port`,
 * `DEBUG_PORT`, the file), or when a client's `initializationOptions` set `DEBUG_PORT`.
 * `host` and `token` come from the command line; the port from the configuration. Configured at
 * start-up, recording begins while this layer builds, so a gateway that starts its backends after
 * it (the shared gateway) has their start-up on record.
 */
export const layer = (base: Omit<Options, "port"> = { host: "127.0.0.1" }): Layer.Layer<never, never, GatewayConfig | Backends> =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const config = yield* GatewayConfig
      const recorder = new Recorder()
      const serveOn = (port: number) =>
        Effect.promise(() => import("./DebugServer.js")).pipe(
          Effect.flatMap((server) => server.make({ ...base, port }, recorder)),
          Effect.catchCause((cause) => Effect.logError("cannot serve the debug UI", cause)),
          // Forked while the layer builds (uninterruptible): it must still stop with the gateway.
          Effect.interruptible
        )
      const now = (yield* config.current).debugPort
      if (Option.isSome(now)) {
        yield* record(recorder)
        yield* Effect.forkScoped(serveOn(now.value))
        return
      }
      yield* Effect.forkScoped(
        config.changes.pipe(
          Stream.filterMap(Filter.fromPredicateOption((c) => c.debugPort)),
          Stream.runHead,
          Effect.flatMap(
            Option.match({
              onNone: () => Effect.void,
              onSome: (port) => Effect.andThen(record(recorder), serveOn(port))
            })
          ),
          Effect.scoped
        )
      )
    })
  )
