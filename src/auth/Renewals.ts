/**
 * One renewal of a token at a time across a team's gateways. Servers rotate refresh tokens and,
 * seeing a spent one used again, revoke the whole grant: two gateways sharing tokens (see
 * gateway/SharedFiles) that both renew at the moment a token is due would sign every gateway out.
 * So a gateway renews only when it has the turn for that refresh token (one per refresh token: the
 * next one is a new turn); the others wait for the new tokens to reach their disk.
 *
 * A service, chosen where the gateway's layer is built: the team's turns when its tokens are the
 * team's (a store, and `AGENTIFY_TOKEN_KEY` to seal them alike), else every renewal is this
 * process's own (one gateway, a one-off command, an app that embeds the backends alone).
 */
import { Context, Effect, Layer } from "effect"
import { Turns } from "../store/Turns.js"

/** Whether this process renews (`turn`: the tokens' entry and their refresh token's hash) now; asked from promise code. */
export type MayRenew = (turn: string) => Promise<boolean>

/** Every renewal is this process's own. */
export const alone: MayRenew = () => Promise.resolve(true)

/** How long a gateway has the turn to renew a token (after that, another may). */
export const RENEW_TURN_MS = 30_000

export class RenewalTurns extends Context.Reference<MayRenew>("mcp-agentify/RenewalTurns", {
  defaultValue: (): MayRenew => alone
}) {
  /** The team's turns (its `Turns`) when its tokens are shared (`AGENTIFY_TOKEN_KEY` set in `env`), else alone. */
  static readonly layerFor = (env: Readonly<Record<string, string | undefined>>): Layer.Layer<never, never, Turns> =>
    Layer.effect(
      RenewalTurns,
      Effect.map(Turns, (turns): MayRenew =>
        env.AGENTIFY_TOKEN_KEY?.trim() ? (turn) => Effect.runPromise(turns.take(`renew:${turn}`, RENEW_TURN_MS)) : alone
      )
    )
}
