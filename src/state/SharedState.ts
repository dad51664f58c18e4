/**
 * What the gateways of a team share, so that any of them serves any client: which gateway holds
 * each session (and how to reach it), kept alive by that gateway's heartbeat. The public interface;
 * `Local` keeps it in this process (one gateway: nothing to share, nothing to install), `Redis` in
 * a store the team runs (Redis or Valkey), chosen by the configuration's `state`.
 *
 * A request for a session another gateway holds is handed to it (see transport/Forward); a gateway
 * that stops heartbeating loses its sessions after `leaseMs`, and their next request gets 404.
 * Nothing here may stop a request: a store that fails or is slow answers "not known" within
 * `STORE_TIMEOUT_MS`, and /readyz says the store is degraded.
 */
import { Context, Effect, Layer, type Scope } from "effect"
import { GatewayConfig, type State } from "../config/Config.js"
import type { SharedStateService } from "./Contract.js"
import { REPLICA_ID } from "./Replica.js"
import * as Local from "./Local.js"

export {
  type Announcement,
  DEFAULT_LEASE_MS,
  type FileKind,
  type SharedFile,
  type Health,
  type Owner,
  type QuotaKey,
  type QuotaTaken,
  type SharedStateService,
  type TaskRecord,
  STORE_TIMEOUT_MS
} from "./Contract.js"

/**
 * As the configuration says: `state.url` a Redis store shared with the other gateways (its client
 * loaded only then), else this process. Lives as long as the current scope.
 */
export const make: Effect.Effect<SharedStateService, never, GatewayConfig | Scope.Scope> = Effect.flatMap(
  Effect.flatMap(GatewayConfig, (c) => c.current),
  (config) => makeFor(config.state)
)

/** The same, for the configuration's `state` as given (a one-off command's). */
export const makeFor = (state: State | undefined): Effect.Effect<SharedStateService, never, Scope.Scope> =>
  state === undefined
    ? Effect.succeed(Local.make(REPLICA_ID))
    : Effect.flatMap(
        Effect.promise(() => import("./Redis.js")),
        (Redis) => Redis.make(state, REPLICA_ID)
      )

export class SharedState extends Context.Tag("mcp-agentify/SharedState")<SharedState, SharedStateService>() {
  /** As the configuration says (see `make`). */
  static readonly layer: Layer.Layer<SharedState, never, GatewayConfig> = Layer.scoped(SharedState, make)
  /** This process alone, whatever the configuration says (stdio, the subcommands, an embedding app). */
  static readonly layerLocal: Layer.Layer<SharedState> = Layer.sync(SharedState, () => Local.make(REPLICA_ID))
}
