/**
 * What a team's gateways keep alike through their store besides sessions (see store/Mirror):
 *
 * - OAuth tokens (the gateway's own and each user's): kept in the store as sealed as on disk, so
 *   every gateway must seal with one key (`AGENTIFY_TOKEN_KEY`, the same everywhere). Without one,
 *   each gateway's key is its own and its tokens stay on its disk (said once at start). A token
 *   due is renewed by one gateway, the others taking what it got (see auth/Renewals, whose
 *   layer the gateway's is built with).
 * - Pinned tool definitions: the team's first pin of a tool is every gateway's, and a `trust` made
 *   anywhere (a one-off command with the same `state`) reaches every gateway at once: each holds its
 *   backends' tools against the pins again, and its sessions hear `tools/list_changed`.
 *
 * - Tool vectors (`embeddings`): a tool embedded by one gateway is not embedded again by another.
 * - Backends' remembered lists (`known`, see backend/Known): a backend one gateway ran waits for
 *   its first use on every other, which knows its tools without starting it.
 *
 * Nothing happens without a store (`state` not configured): `layer` is then empty.
 */
import { Effect, Layer, type Scope } from "effect"
import { RenewalTurns } from "../auth/Renewals.js"
import * as Store from "../auth/Store.js"
import { Backends } from "../backend/Backends.js"
import * as Pins from "../backend/Pins.js"
import { type ConfigSources, GatewayConfig, resolve, type ResolvedConfig } from "../config/Config.js"
import * as Logging from "../observability/Logging.js"
import * as Mirror from "../store/Mirror.js"
import * as Embeddings from "../catalog/semantic/Embeddings.js"
import * as TeamStore from "../store/Store.js"
import { TeamFiles } from "../store/TeamFiles.js"
import * as path from "node:path"

export interface Options {
  readonly env: Readonly<Record<string, string | undefined>>
  readonly stateDir: string
  /** Whether any backend signs in with OAuth (else nothing is said of the token key). */
  readonly oauth: boolean
  /** What to do when another gateway's pins arrive. */
  readonly reviewPins?: Effect.Effect<void> | undefined
  /** `embeddings` is configured: tool vectors are kept alike too. */
  readonly embeddings?: boolean | undefined
}

/** Both mirrors started (while the scope is open); completes when what this process wrote is in the store. */
export const start = (options: Options): Effect.Effect<Effect.Effect<void>, never, Scope.Scope | TeamFiles> =>
  Effect.gen(function* () {
    const state = yield* TeamFiles
    const pins = yield* Mirror.make(state, {
      kind: "pins",
      dir: path.join(options.stateDir, "pins"),
      merge: Pins.merge,
      arrived: () => options.reviewPins ?? Effect.void
    })
    // Remembered lists: taken before the backends start (this runs first), so that one another
    // gateway ran waits for its first use here too. The newer file wins: each is one whole listing.
    const known = yield* Mirror.make(state, { kind: "known", dir: path.join(options.stateDir, "known") })
    const shared = (others: Effect.Effect<void>) => Effect.andThen(others, known.settled)
    // Tool vectors (`embeddings`): one gateway embeds a tool, every gateway has its vector (an
    // embedder reads its file again when it changed).
    const vectors = options.embeddings
      ? yield* Mirror.make(state, { kind: "embeddings", dir: path.join(options.stateDir, "embeddings"), merge: Embeddings.merge })
      : undefined
    const settledAll = (others: Effect.Effect<void>) =>
      shared(vectors === undefined ? others : Effect.andThen(others, vectors.settled))
    if (options.env.AGENTIFY_TOKEN_KEY?.trim()) {
      const tokens = yield* Mirror.make(state, { kind: "tokens", dir: Store.directory(options.env) })
      return settledAll(Effect.andThen(pins.settled, tokens.settled))
    }
    if (options.oauth) {
      yield* Effect.logWarning(
        "shared state: OAuth tokens stay in this gateway's own directory: set AGENTIFY_TOKEN_KEY (the same key on every gateway) to keep them in the store, where every gateway finds them"
      )
    }
    return settledAll(pins.settled)
  })

const optionsOf = (config: ResolvedConfig, env: Options["env"]): Options => ({
  env,
  stateDir: config.stateDir,
  oauth: config.backends.some((b) => b.url !== undefined && b.auth !== undefined),
  embeddings: config.embeddings !== undefined
})

/**
 * The gateway's, when the configuration names a store (else nothing): started before its backends
 * (their first review reads the team's pins).
 */
export const layer: Layer.Layer<never, never, TeamFiles | GatewayConfig | Backends> = Layer.unwrap(
  Effect.map(
    Effect.flatMap(GatewayConfig, (config) => config.current),
    (config) =>
      config.state === undefined
        ? Layer.empty
        : Layer.effectDiscard(
            Effect.flatMap(Backends, (backends) => start({ ...optionsOf(config, process.env), reviewPins: backends.reviewPins }))
          )
  )
)

/**
 * A one-off command (`auth`, `trust`) run with the team's files, when the configuration names a
 * store: what the store holds first, what the command wrote in the store before it ends.
 */
export const around =
  (sources: ConfigSources) =>
  <A, E, R>(command: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      let config: ResolvedConfig
      try {
        config = resolve(sources)
      } catch {
        // The command says what is wrong with the configuration.
        return command
      }
      const state = config.state
      if (state === undefined) return command
      return Effect.scoped(
        Effect.gen(function* () {
          // Its own logs to stderr, at the configured level, as the command's.
          yield* Logging.applyLevel(config.logLevel)
          // The store for as long as the command runs (its mirrors use it until then), with what
          // the command writes heard by its mirrors and its renewals the team's turns.
          const store = yield* Layer.build(RenewalTurns.layerFor(sources.env).pipe(Layer.provideMerge(TeamStore.layerFor(state))))
          const settled = yield* start(optionsOf(config, sources.env)).pipe(Effect.provide(store))
          const result = yield* Effect.provide(command, store)
          yield* settled
          return result
        }).pipe(Effect.provide(Logging.layer()))
      )
    })
