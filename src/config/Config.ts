/**
 * Gateway configuration, the public interface: the `GatewayConfig` service that holds the
 * configuration in force, over `Schema` (the shapes), `Decode` (readable issues, other clients'
 * shapes), `Files` (`.env`, the config file) and `Resolve` (every source with its precedence).
 *
 * Precedence, highest first: `initializationOptions`, the config file (`--config` or
 * `AGENTIFY_CONFIG`), the environment (with `.env` loaded beneath it), the embedded default.
 * The OpenAI key is the exception the contract names: env `OPENAI_API_KEY` wins over both.
 */
import { Context, Effect, Result, Layer, type Stream, SubscriptionRef } from "effect"
import { InvalidParams } from "../protocol/Errors.js"
import { GatewayOptionsInput } from "./Schema.js"
import { decodeOptions } from "./Decode.js"
import { ConfigSources, type DiskSources, ResolvedConfig, resolve } from "./Resolve.js"
import type { NormalizedOptions } from "./Decode.js"
import { load, profileProblems } from "./Load.js"
export {
  DEFAULT_HEALTH_CHECK,
  MAX_DURATION_MS,
  MAX_FRAME_LIMIT,
  MAX_INSTANCES,
  MAX_STEPS_LIMIT,
  MAX_TOOLS_LIMIT,
  ListedTools,
  MAX_LISTED_LIMIT,
  MIN_LISTED_TOOLS,
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
  ConfirmTools,
  CodeMode,
  EXPOSURE_KEYS,
  type Exposure,
  namespaceOf,
  Profile,
  HttpAuth,
  State,
  OAuthSettings,
  oauthOf
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
  DEFAULT_MAX_LISTED_TOOLS,
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
  type DiskSources,
  type ResolvedConfig,
  type AuditSettings
} from "./Resolve.js"
export { load, profileProblems, type Loaded } from "./Load.js"

/** A configuration read from disk and resolved, with the sources it came from, not yet in force. */
export interface Candidate {
  readonly config: ResolvedConfig
  readonly sources: ConfigSources
}

export class GatewayConfig extends Context.Service<
  GatewayConfig,
  {
    /** The configuration in force now. */
    readonly current: Effect.Effect<ResolvedConfig>
    /**
     * The same, without an effect (the hot paths read it on every call). Kept beside the ref rather
     * than followed through `changes` by each reader: a fiber per reader cost the stdio start about
     * 6 ms for five of them.
     */
    readonly now: () => ResolvedConfig
    /** The configuration in force, then each new one (a client's `initializationOptions`). */
    readonly changes: Stream.Stream<ResolvedConfig>
    /** Validates a client's `initializationOptions` and makes them the configuration in force. */
    readonly applyInitializationOptions: (options: unknown) => Effect.Effect<ResolvedConfig, InvalidParams>
    /** Where the configuration on disk is, when it came from there (the watcher's paths). */
    readonly disk: DiskSources | undefined
    /**
     * The configuration the disk holds now, resolved as at start-up (the same environment and
     * `initializationOptions`), not yet in force; Left is why it cannot be (start-up's messages).
     */
    readonly candidate: Effect.Effect<Result.Result<Candidate, string>>
    /** Makes a candidate the configuration in force. */
    readonly replace: (candidate: Candidate) => Effect.Effect<void>
  }
>()("mcp-agentify/GatewayConfig") {
  /** From start-up sources (the CLI). */
  static layer = (sources: ConfigSources): Layer.Layer<GatewayConfig> =>
    Layer.effect(
      GatewayConfig,
      Effect.gen(function* () {
        let now = resolve(sources)
        const ref = yield* SubscriptionRef.make(now)
        /** In force from now on: read at once by `now`, told to whoever follows `changes`. */
        const set = (config: ResolvedConfig) =>
          Effect.andThen(
            Effect.sync(() => (now = config)),
            SubscriptionRef.set(ref, config)
          )
        // What the latest read of the disk and the client's options were: a reload keeps the one
        // it does not read again.
        let latest = sources
        let init: NormalizedOptions | undefined
        const disk = sources.disk?.configPath === undefined && sources.disk?.serversDir === undefined ? undefined : sources.disk
        return {
          current: SubscriptionRef.get(ref),
          now: () => now,
          changes: SubscriptionRef.changes(ref),
          applyInitializationOptions: (options: unknown) =>
            options === undefined || options === null
              ? SubscriptionRef.get(ref)
              : Result.match(decodeOptions(options, "initializationOptions"), {
                  onFailure: Effect.fail,
                  onSuccess: (decoded) => {
                    const problems = profileProblems(decoded)
                    if (problems.length > 0) {
                      return Effect.fail(
                        new InvalidParams({ message: `Invalid initializationOptions: ${problems.join("; ")}`, issues: problems })
                      )
                    }
                    init = decoded
                    const resolved = resolve(latest, init)
                    return Effect.as(set(resolved), resolved)
                  }
                }),
          disk,
          candidate: Effect.sync(() =>
            disk === undefined
              ? Result.fail("the configuration was not read from a file")
              : Result.map(load(disk, sources.env), (loaded): Candidate => {
                  const next = { ...sources, file: loaded.file, serversDir: loaded.serversDir }
                  return { config: resolve(next, init), sources: next }
                })
          ),
          replace: (candidate: Candidate) =>
            Effect.suspend(() => {
              latest = candidate.sources
              return set(candidate.config)
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
    Layer.unwrap(
      Result.match(decodeOptions(options, "GatewayOptions"), {
        onFailure: Effect.fail,
        onSuccess: (init) => Effect.succeed(GatewayConfig.layer({ env, file: { path: "<options>", options: init } }))
      })
    )
}

/** The configuration in force, at hand without an effect (see GatewayConfig's `now`). */
export const inForce: Effect.Effect<() => ResolvedConfig, never, GatewayConfig> = Effect.map(
  GatewayConfig,
  (config) => config.now
)
