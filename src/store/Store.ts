/**
 * What the gateways of a team share, so that any of them serves any client: a service per concern,
 * each a Tag written once on the store's driver (`layer`, see Driver: leases, counters, blobs with
 * announcements, values with a time to live), and with this process's stand-in (`layerLocal`: one
 * gateway, nothing to share, nothing to install). The driver is chosen once, here, from the
 * configuration's `state`, as `@effect/sql` chooses one: Redis (or Valkey) today (`redis/Driver`);
 * `local/Driver` keeps a store in this process's memory that several gateways in one process (or a
 * test) share (`layerInProcess`).
 *
 * - SessionDirectory: which gateway holds each session, and where it listens;
 * - TeamQuotas: `limits` counted across the team;
 * - TaskRecords: finished tasks that outlive their gateway;
 * - TeamFiles: tokens, pins and tool vectors kept alike (see Mirror);
 * - SharedSecrets: the key that seals request states;
 * - Turns: who renews a token the team shares;
 *
 * With a team's store comes this gateway's `WrittenFiles` (what it writes of those files, heard by
 * its mirrors); alone, nobody listens and the default tells no one.
 *
 * Alone (`layerLocal`) is not the in-process driver: with nobody to share with, a store would only
 * cost (a heartbeat, every token and pin copied into memory, tasks kept twice), and what the
 * services answer alone says so to their callers (no store for /readyz, no files to mirror).
 *
 * Nothing here may stop a request: a store that fails or is slow answers "not known" within
 * `STORE_TIMEOUT_MS`, and /readyz says the store is degraded.
 */
import { Effect, Layer } from "effect"
import { GatewayConfig, type State } from "../config/Config.js"
import type { StoreDriver } from "./Driver.js"
import * as Local from "./local/Driver.js"
import { SessionDirectory } from "./SessionDirectory.js"
import { SharedSecrets } from "./SharedSecrets.js"
import { TaskRecords } from "./TaskRecords.js"
import { TeamFiles } from "./TeamFiles.js"
import { TeamQuotas } from "./TeamQuotas.js"
import { Turns } from "./Turns.js"
import { WrittenFiles } from "./WrittenFiles.js"

export {
  type Announcement,
  DEFAULT_LEASE_MS,
  type FileKind,
  type Health,
  type Owner,
  type SharedFile,
  STORE_TIMEOUT_MS,
  type TaskRecord
} from "./Contract.js"
export { SessionDirectory, SharedSecrets, TaskRecords, TeamFiles, TeamQuotas, Turns }

/** Every service of the store. */
export type Store = SessionDirectory | TeamQuotas | TaskRecords | TeamFiles | SharedSecrets | Turns

/** This process alone, whatever the configuration says (stdio, the subcommands, an embedding app). */
export const layerLocal: Layer.Layer<Store> = Layer.mergeAll(
  SessionDirectory.layerLocal,
  TeamQuotas.layerLocal,
  TaskRecords.layerLocal,
  TeamFiles.layerLocal,
  SharedSecrets.layerLocal,
  Turns.layerLocal
)

/** Every service on the team's store that `driver` reaches, with this gateway's `WrittenFiles`. */
export const layerOn = (driver: Layer.Layer<StoreDriver>): Layer.Layer<Store> =>
  Layer.mergeAll(
    SessionDirectory.layer,
    TeamQuotas.layer,
    TaskRecords.layer,
    TeamFiles.layer,
    SharedSecrets.layer,
    Turns.layer
  ).pipe(Layer.provide(driver), Layer.merge(WrittenFiles.layer))

/** Every service on a store in this process's memory (`options.server`, shared by the gateways given it). */
export const layerInProcess = (options: Local.Options = {}): Layer.Layer<Store> => layerOn(Local.layerLocal(options))

/** The configuration's `state` as given: a Redis store (its client loaded only then), else this process alone. */
export const layerFor = (state: State | undefined): Layer.Layer<Store> =>
  state === undefined
    ? layerLocal
    : Layer.unwrap(
        Effect.map(
          Effect.promise(() => import("./redis/Driver.js")),
          (Redis) => layerOn(Redis.layer(state))
        )
      )

/** As the configuration says, read once when the layer is built. */
export const layer: Layer.Layer<Store, never, GatewayConfig> = Layer.unwrap(
  Effect.map(
    Effect.flatMap(GatewayConfig, (config) => config.current),
    (config) => layerFor(config.state)
  )
)
