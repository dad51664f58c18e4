/**
 * Gateway configuration, the public interface: the `GatewayConfig` service that holds the
 * configuration in force, over `Schema` (the shapes), `Decode` (readable issues, other clients'
 * shapes), `Files` (`.env`, the config file) and `Resolve` (every source with its precedence).
 *
 * Precedence, highest first: `initializationOptions`, the config file (`--config` or
 * `AGENTIFY_CONFIG`), the environment (with `.env` loaded beneath it), the embedded default.
 * The OpenAI key is the exception the contract names: env `OPENAI_API_KEY` wins over both.
 */
import { Context, Effect, Either, Layer, type Stream, SubscriptionRef } from "effect"
import { InvalidParams } from "../protocol/Errors.js"
import { GatewayOptionsInput } from "./Schema.js"
import { decodeOptions } from "./Decode.js"
import { ConfigSources, ResolvedConfig, resolve } from "./Resolve.js"

export {
  DEFAULT_HEALTH_CHECK,
  MAX_DURATION_MS,
  MAX_FRAME_LIMIT,
  MAX_INSTANCES,
  MAX_STEPS_LIMIT,
  MAX_TOOLS_LIMIT,
  healthCheckOf,
  rootsOf,
  transportOf,
  BackendConfig,
  type BackendConfigInput,
  BackendType,
  GatewayOptions,
  type GatewayOptionsInput,
  type HealthCheck,
  LogLevelName,
  Routing,
  ConfirmTools
} from "./Schema.js"
export { BACKEND_KEYS, OPTION_KEYS, decodeOptions, formatIssues, idsOf, type NormalizedOptions } from "./Decode.js"
export {
  ConfigFileError,
  DOTENV_SETTINGS,
  MAX_CONFIG_FILE_BYTES,
  backendEnv,
  readConfigFile,
  readDotEnv,
  readRegularFile,
  type ConfigFile,
  type DotEnv,
  type DotEnvSetting
} from "./Files.js"
export {
  DEFAULT_MAX_BACKEND_FRAME_BYTES,
  DEFAULT_MAX_FRAME_BYTES,
  DEFAULT_MAX_SESSIONS,
  DEFAULT_MAX_STEPS,
  DEFAULT_MAX_TOOLS,
  DEFAULT_MODEL,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_SESSION_IDLE_MS,
  DEFAULT_STARTUP_TIMEOUT_MS,
  defaultRootRefusal,
  describeBackend,
  embeddedDefault,
  resolve,
  serverFilesystemEntry,
  type ConfigNote,
  type ConfigSources,
  type ResolvedConfig
} from "./Resolve.js"

export class GatewayConfig extends Context.Tag("mcp-agentify/GatewayConfig")<
  GatewayConfig,
  {
    /** The configuration in force now. */
    readonly current: Effect.Effect<ResolvedConfig>
    /** The configuration in force, then each new one (a client's `initializationOptions`). */
    readonly changes: Stream.Stream<ResolvedConfig>
    /** Validates a client's `initializationOptions` and makes them the configuration in force. */
    readonly applyInitializationOptions: (options: unknown) => Effect.Effect<ResolvedConfig, InvalidParams>
  }
>() {
  /** From start-up sources (the CLI). */
  static layer = (sources: ConfigSources): Layer.Layer<GatewayConfig> =>
    Layer.effect(
      GatewayConfig,
      Effect.gen(function* () {
        const ref = yield* SubscriptionRef.make(resolve(sources))
        return {
          current: SubscriptionRef.get(ref),
          changes: ref.changes,
          applyInitializationOptions: (options: unknown) =>
            options === undefined || options === null
              ? SubscriptionRef.get(ref)
              : Either.match(decodeOptions(options, "initializationOptions"), {
                  onLeft: Effect.fail,
                  onRight: (init) => {
                    const resolved = resolve(sources, init)
                    return Effect.as(SubscriptionRef.set(ref, resolved), resolved)
                  }
                })
        }
      })
    )

  /**
   * From GatewayOptions given in code, for apps that embed the gateway. The environment still
   * supplies `OPENAI_API_KEY` and the other variables, as it does for the CLI.
   */
  static layerFromOptions = (
    options: GatewayOptionsInput,
    env: ConfigSources["env"] = process.env
  ): Layer.Layer<GatewayConfig, InvalidParams> =>
    Layer.unwrapEffect(
      Either.match(decodeOptions(options, "GatewayOptions"), {
        onLeft: Effect.fail,
        onRight: (init) => Effect.succeed(GatewayConfig.layer({ env, file: { path: "<options>", options: init } }))
      })
    )
}
