/**
 * Work one gateway of a team does alone for a while (renewing a token the team shares): whoever
 * takes the turn first does it. `layer`: the team's store's `turn:<name>` = the gateway that has
 * it, for its ttl, set only where none is (taking it again before it ends is refused too).
 * `layerLocal`: one gateway alone always has it.
 */
import { Context, Effect, Layer } from "effect"
import { StoreDriver, type StoreDriverService } from "./Driver.js"

export interface TurnsService {
  /**
   * Whether this gateway has `turn` (for `ttlMs`): no other gateway of the team has it; true when
   * the store cannot say (the work is then done as if alone).
   */
  readonly take: (turn: string, ttlMs: number) => Effect.Effect<boolean>
}

const team = ({ values, replicaId }: StoreDriverService): TurnsService => ({
  take: (turn, ttlMs) =>
    values.setIfAbsent(`turn:${turn}`, replicaId, ttlMs).pipe(
      Effect.map(({ set }) => set),
      Effect.orElseSucceed(() => true)
    )
})

export class Turns extends Context.Service<Turns, TurnsService>()("mcp-agentify/Turns") {
  static readonly layerLocal: Layer.Layer<Turns> = Layer.succeed(Turns, { take: () => Effect.succeed(true) })
  /** In the team's store, through its driver. */
  static readonly layer: Layer.Layer<Turns, never, StoreDriver> = Layer.effect(Turns, Effect.map(StoreDriver, team))
}
