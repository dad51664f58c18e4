/**
 * `limits` counted for the gateway's call pipeline (its `count` stage): one interface, whether the
 * counts are this gateway's own (`layerLocal`, on LocalQuotas) or the team's (`layer`: the store's
 * counters, see store/Driver, under `quota:<key>`; this gateway's own while the store fails to
 * answer).
 */
import { Context, Effect, Layer } from "effect"
import { StoreDriver, type StoreDriverService } from "./Driver.js"
import { type Counted, limitWords, Quotas, type Taken } from "./LocalQuotas.js"

export { type Counted, limitWords, Quotas, type Taken } from "./LocalQuotas.js"

export interface TeamQuotasService {
  /** Takes a place for a call in every key, or says which limit refuses it and when to retry. */
  readonly take: (counted: ReadonlyArray<Counted>) => Effect.Effect<Taken>
}

/** Counting on `quotas` alone (this process). */
export const local = (quotas: Quotas = new Quotas()): TeamQuotasService => ({
  take: (counted) => Effect.sync(() => quotas.take(counted))
})

const MINUTE_MS = 60_000

/** A counted key as the store names it (its parts joined by `:`). */
const storeKey = (counted: Counted): string => `quota:${counted.key.replace("\u0000", ":")}`

/** Counting in the team's store, and on this gateway's own counters while the store fails to answer. */
const team = (driver: StoreDriverService): TeamQuotasService => {
  const own = local(new Quotas())
  return {
    take: (counted) =>
      driver.counters
        .take(
          counted.map((c) => ({ key: storeKey(c), perWindow: c.limit.callsPerMinute, atOnce: c.limit.concurrent })),
          MINUTE_MS
        )
        .pipe(
          Effect.map((took): Taken => {
            if (took._tag === "Taken") return { _tag: "Taken", release: () => void Effect.runFork(took.release) }
            const refusing = counted[took.index]!
            return {
              _tag: "Refused",
              named: refusing.named,
              why: limitWords(refusing.limit, took.perWindow),
              retryAfterMs: Math.max(1, took.retryAfterMs)
            }
          }),
          Effect.catchTag("StoreUnavailable", () => own.take(counted))
        )
  }
}

export class TeamQuotas extends Context.Service<TeamQuotas, TeamQuotasService>()("mcp-agentify/TeamQuotas") {
  static readonly layerLocal: Layer.Layer<TeamQuotas> = Layer.sync(TeamQuotas, () => local())
  /** Counted across the team, through its store's driver. */
  static readonly layer: Layer.Layer<TeamQuotas, never, StoreDriver> = Layer.effect(TeamQuotas, Effect.map(StoreDriver, team))
}
