/**
 * `limits` counted for the gateway's call pipeline (its `count` stage): one interface, whether the
 * counts are this gateway's own (`layerLocal`, on LocalQuotas) or the team's, in its store
 * (`store/redis/Quotas`, falling back to this gateway's own while the store fails to answer).
 */
import { Context, Effect, Layer } from "effect"
import { type Counted, Quotas, type Taken } from "./LocalQuotas.js"

export { type Counted, limitWords, Quotas, type Taken } from "./LocalQuotas.js"

export interface TeamQuotasService {
  /** Takes a place for a call in every key, or says which limit refuses it and when to retry. */
  readonly take: (counted: ReadonlyArray<Counted>) => Effect.Effect<Taken>
}

/** Counting on `quotas` alone (this process). */
export const local = (quotas: Quotas = new Quotas()): TeamQuotasService => ({
  take: (counted) => Effect.sync(() => quotas.take(counted))
})

export class TeamQuotas extends Context.Tag("mcp-agentify/TeamQuotas")<TeamQuotas, TeamQuotasService>() {
  static readonly layerLocal: Layer.Layer<TeamQuotas> = Layer.sync(TeamQuotas, () => local())
}
