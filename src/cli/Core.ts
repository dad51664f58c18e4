/**
 * The gateway's core for a one-off command (`check`, `trust`, `policy schema`): backends, the
 * orchestrator and the call pipeline on the configuration read from `sources`, logs to stderr;
 * nothing started until the command starts it.
 */
import { Effect, Layer } from "effect"
import { type ConfigSources, GatewayConfig } from "../config/Config.js"
import * as Gateway from "../gateway/Gateway.js"
import * as Logging from "../observability/Logging.js"
import { LlmClient } from "../orchestration/model/Llm.js"

type Core = Layer.Success<typeof Gateway.layerCore> | GatewayConfig

/** Runs a command's effect on the core it needs. */
export const withCore =
  (sources: ConfigSources) =>
  <A, E>(command: Effect.Effect<A, E, Core>): Effect.Effect<A, E> =>
    command.pipe(
      Effect.provide(
        Gateway.layerCore.pipe(Layer.provide(LlmClient.layerOpenAI), Layer.provideMerge(GatewayConfig.layer(sources)))
      ),
      // A person reads what the gateway says here: sentences, not JSON lines.
      Effect.provide(Logging.layer(Logging.personSink))
    )
