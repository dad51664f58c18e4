/**
 * The gateway served from an Effect app, as Layers: `layerStdio` on streams the app gives (its
 * own stdin/stdout, or a child's pipes), `layerHttp` on the app's own `HttpRouter`. Each brings
 * the gateway with it (the backends, the orchestrator, the events hub); the app provides the
 * configuration and the model (`GatewayConfig`, `LlmClient`).
 */
import { Effect, Layer, Logger } from "effect"
import type * as HttpRouter from "effect/http/HttpRouter"
import type { Backends } from "../backend/Backends.js"
import type { GatewayConfig } from "../config/Config.js"
import * as Gateway from "../gateway/Gateway.js"
import * as Clients from "../gateway/clients/Clients.js"
import type { LlmClient } from "../orchestration/model/Llm.js"
import type { Orchestrator } from "../orchestration/Orchestrator.js"
import * as Http from "./Http.js"
import * as Stdio from "./Stdio.js"

export type { MountOptions } from "./Http.js"

/** The streams a stdio client speaks on, and the view it is served. */
export interface StreamsOptions extends Stdio.StreamsOptions {
  /** A profile's view of the aggregate (`--profile`); the whole aggregate without. */
  readonly profile?: string | undefined
}

/**
 * One MCP client on `stdin`/`stdout` while the layer lives. As the CLI does, the backends start
 * with the client's `initialize` and stop when its input ends (or it sends `exit`). Effect's own
 * loggers, if the app keeps them, write what the gateway logs to stderr: stdout carries frames.
 */
export const layerStdio = (
  options: StreamsOptions
): Layer.Layer<Gateway.Gateway | Orchestrator | Backends, never, GatewayConfig | LlmClient> =>
  Layer.effectDiscard(Effect.forkScoped(Clients.run({ profile: options.profile }))).pipe(
    Layer.provide(Stdio.layerStreams(options)),
    Layer.provideMerge(Gateway.layerStdio),
    Layer.provide(Layer.succeed(Logger.LogToStderr, true))
  )

/**
 * Streamable HTTP for many clients under `path` on the app's `HttpRouter` (both eras, `/mcp`,
 * `/servers/<id>/mcp`, `/profiles/<name>/mcp`, `/healthz`, `/readyz`). The backends start with
 * the layer and serve every session; the app serves the router with its own server
 * (`HttpRouter.serve(layer, { disableListenLog: true })`).
 */
export const layerHttp = (
  options: Http.MountOptions = {}
): Layer.Layer<Gateway.Gateway | Orchestrator | Backends, never, GatewayConfig | LlmClient | HttpRouter.HttpRouter> =>
  Clients.layer().pipe(Layer.provide(Http.layerRouter(options)), Layer.provideMerge(Gateway.layerShared))
