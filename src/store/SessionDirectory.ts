/**
 * Which gateway of a team holds each session, and where it listens: the one piece of shared state
 * every HTTP request may ask about (a request for a session another gateway holds is handed to it,
 * see transport/Forward). `layerLocal` is one gateway alone: it holds every session it knows and
 * none of another's; `layer` keeps the directory in the team's store (see store/Driver): a session
 * is the lease `session:<id>`, kept by its holder's heartbeat, and a gateway's address is what the
 * store knows of it while it lives. A gateway that stops heartbeating (killed, cut off) loses its
 * sessions when their leases run out, and their next requests get 404.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { Health, Owner } from "./Contract.js"
import { StoreDriver, type StoreDriverService } from "./Driver.js"
import { REPLICA_ID } from "./Replica.js"

export interface SessionDirectoryService {
  /** This gateway, among the others (random per process: a restarted one holds nothing of before). */
  readonly replicaId: string
  /** The HTTP listener's address (`http://host:port`): where the others hand this gateway its sessions' requests. */
  readonly listeningAt: (address: string) => Effect.Effect<void>
  /** The session is this gateway's from now on: its heartbeat keeps it. */
  readonly claim: (sessionId: string) => Effect.Effect<void>
  /** The session ended here: no gateway holds it any more. */
  readonly release: (sessionId: string) => Effect.Effect<void>
  /**
   * Who holds `sessionId`, when this gateway does not: another live gateway (its address), none
   * (the session expired, was closed, or its holder died: 404), or "unknown" (the store failed to
   * say: the client may try again).
   */
  readonly ownerOf: (sessionId: string) => Effect.Effect<Owner>
  /** Who holds `sessionId` as the store said a moment ago, without asking it again: undefined when not known. */
  readonly ownerKnown: (sessionId: string) => Owner | undefined
  /** Where another live gateway of the team listens, by its id: none when it is gone, "unknown" when the store cannot say. */
  readonly addressOf: (replicaId: string) => Effect.Effect<Owner>
  /** What /readyz says of the team's store: undefined when there is none. */
  readonly health: Effect.Effect<Health | undefined>
}

/** Holders of other gateways' sessions remembered at most (then forgotten all at once). */
const MAX_KNOWN_OWNERS = 10_000

const leaseOf = (sessionId: string) => `session:${sessionId}`

const make = (driver: StoreDriverService): SessionDirectoryService => {
  const { replicaId, leaseMs } = driver
  const held = new Set<string>()
  /** Other gateways' sessions, as the store named their holders a moment ago. */
  const owners = new Map<string, { readonly owner: Owner; readonly until: number }>()
  const ownerKeptMs = Math.min(1_000, Math.floor(leaseMs / 3))
  // Known a moment ago: a session's holder changes only when it dies (then its address fails,
  // 502, until the lease runs out either way).
  const ownerKnown = (sessionId: string): Owner | undefined => {
    const known = owners.get(sessionId)
    return known !== undefined && known.until > Date.now() ? known.owner : undefined
  }
  return {
    replicaId,
    listeningAt: driver.listeningAt,
    ownerKnown,
    claim: (sessionId) =>
      Effect.suspend(() => {
        held.add(sessionId)
        return Effect.ignore(driver.leases.keep(leaseOf(sessionId)))
      }),
    release: (sessionId) =>
      Effect.suspend(() => {
        held.delete(sessionId)
        return Effect.ignore(driver.leases.release(leaseOf(sessionId)))
      }),
    ownerOf: (sessionId) =>
      Effect.suspend(() => {
        const known = ownerKnown(sessionId)
        if (known !== undefined) return Effect.succeed(known)
        return driver.leases.holderOf(leaseOf(sessionId)).pipe(
          Effect.map((holder): Owner => {
            if (Option.isNone(holder)) return "none"
            const { replicaId: holding, address } = holder.value
            if (holding === replicaId || address === undefined) return "none"
            if (owners.size >= MAX_KNOWN_OWNERS) owners.clear()
            owners.set(sessionId, { owner: { at: address }, until: Date.now() + ownerKeptMs })
            return { at: address }
          }),
          Effect.catchTag("StoreUnavailable", () => Effect.succeed<Owner>("unknown"))
        )
      }),
    addressOf: (other) =>
      driver.addressOf(other).pipe(
        Effect.map(Option.match({ onNone: (): Owner => "none", onSome: (at): Owner => ({ at }) })),
        Effect.catchTag("StoreUnavailable", () => Effect.succeed<Owner>("unknown"))
      ),
    health: Effect.map(driver.health, ({ where, failing }) =>
      failing === undefined
        ? { ok: true, detail: `${where} (${held.size} sessions held here)` }
        : { ok: false, detail: `${where} is failing: ${failing}; sessions held elsewhere cannot be reached` }
    )
  }
}

export class SessionDirectory extends Context.Service<SessionDirectory, SessionDirectoryService>()(
  "mcp-agentify/SessionDirectory"
) {
  /** One gateway alone: every session it knows is its own. */
  static readonly layerLocal: Layer.Layer<SessionDirectory> = Layer.succeed(SessionDirectory, {
    replicaId: REPLICA_ID,
    listeningAt: () => Effect.void,
    claim: () => Effect.void,
    release: () => Effect.void,
    ownerOf: () => Effect.succeed("none"),
    ownerKnown: () => undefined,
    addressOf: () => Effect.succeed("none"),
    health: Effect.succeed(undefined)
  })

  /** In the team's store, through its driver. */
  static readonly layer: Layer.Layer<SessionDirectory, never, StoreDriver> = Layer.effect(
    SessionDirectory,
    Effect.map(StoreDriver, make)
  )
}
