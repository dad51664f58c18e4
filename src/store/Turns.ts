/**
 * Work one gateway of a team does alone for a while (renewing a token the team shares): whoever
 * takes the turn first does it. `layerLocal`: one gateway alone always has it.
 */
import { Context, Effect, Layer } from "effect"

export interface TurnsService {
  /**
   * Whether this gateway has `turn` (for `ttlMs`): no other gateway of the team has it; true when
   * the store cannot say (the work is then done as if alone).
   */
  readonly take: (turn: string, ttlMs: number) => Effect.Effect<boolean>
}

export class Turns extends Context.Tag("mcp-agentify/Turns")<Turns, TurnsService>() {
  static readonly layerLocal: Layer.Layer<Turns> = Layer.succeed(Turns, { take: () => Effect.succeed(true) })
}
