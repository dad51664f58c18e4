/**
 * The store's driver on Redis (or Valkey; see store/Driver): its parts on one connection
 * (`Connection`, with the heartbeat each part adds its keys to): `Leases`, `Counters`, `Blobs`,
 * `Values`. Loaded only when the configuration names a store: a gateway alone never loads the client.
 */
import { Effect, Layer, Option } from "effect"
import type { State } from "../../config/Config.js"
import { StoreDriver } from "../Driver.js"
import * as Blobs from "./Blobs.js"
import { PREFIX, RedisConnection } from "./Connection.js"
import * as Counters from "./Counters.js"
import * as Leases from "./Leases.js"
import * as Values from "./Values.js"

/** The driver over the connection: `replica:<id>` = where a live replica listens (see Connection's heartbeat). */
export const layerRedis: Layer.Layer<StoreDriver, never, RedisConnection> = Layer.effect(
  StoreDriver,
  Effect.gen(function* () {
    const connection = yield* RedisConnection
    const { client, run, replicaId, leaseMs, where, failing, listeningAt } = connection
    return {
      replicaId,
      leaseMs,
      listeningAt,
      addressOf: (other) =>
        Effect.map(
          run(() => client.get(`${PREFIX}replica:${other}`)),
          (at) => Option.fromNullishOr(typeof at === "string" && at !== "" ? at : undefined)
        ),
      health: Effect.sync(() => {
        const failed = failing()
        return { where, failing: failed === undefined && client.isReady ? undefined : (failed ?? "not connected") }
      }),
      leases: yield* Leases.make(connection),
      counters: Counters.make(connection),
      blobs: yield* Blobs.make(connection),
      values: Values.make(connection)
    }
  })
)

/** The driver on its own connection to the store `settings` names, speaking for `replicaId`. */
export const layer = (settings: State, replicaId?: string): Layer.Layer<StoreDriver> =>
  layerRedis.pipe(Layer.provide(RedisConnection.layer(settings, replicaId)))
