/**
 * The gateway assembled from its Layers, for the CLI and for Effect apps that embed it.
 *
 * Both variants take the configuration and the LLM as requirements, so a caller chooses them:
 * `GatewayConfig.layer`/`layerFromOptions` and `LlmClient.layerOpenAI`/`layerScripted`.
 */
import { Effect, Layer } from "effect"
import { Backends } from "./Backends.js"
import { GatewayConfig } from "./Config.js"
import type { LlmClient } from "./Llm.js"
import { Orchestrator } from "./Orchestrator.js"
import { Server } from "./Server.js"

/** Backends and Orchestrator; backends start when a client sends `initialize` (the stdio server). */
export const layerCore: Layer.Layer<Orchestrator | Backends, never, GatewayConfig | LlmClient> = Orchestrator.layer.pipe(
  Layer.provideMerge(Backends.layerNode)
)

/** The method table over the core, for a transport to serve (see `Server.serveStdio`). */
export const layerServer: Layer.Layer<Server | Orchestrator | Backends, never, GatewayConfig | LlmClient> =
  Server.layer.pipe(Layer.provideMerge(layerCore))

/**
 * For embedding: the core with every configured backend started while the layer builds (bounded
 * by `startupTimeoutMs`), and stopped when its scope closes. Use `Orchestrator` from it.
 */
export const layer: Layer.Layer<Orchestrator | Backends, never, GatewayConfig | LlmClient> = Layer.effectDiscard(
  Effect.gen(function* () {
    const config = yield* (yield* GatewayConfig).current
    const backends = yield* Backends
    yield* backends.start(config.backends, {
      startupTimeoutMs: config.startupTimeoutMs,
      requestTimeoutMs: config.requestTimeoutMs,
      maxBackendFrameBytes: config.maxBackendFrameBytes
    })
  })
).pipe(Layer.provideMerge(layerCore))
