/**
 * Which gateway of a team holds each session, and where it listens: the one piece of shared state
 * every HTTP request may ask about (a request for a session another gateway holds is handed to it,
 * see transport/Forward). `layerLocal` is one gateway alone: it holds every session it knows and
 * none of another's; `store/redis/Sessions` keeps the directory in the team's store, kept alive by
 * each gateway's heartbeat.
 */
import { Context, Effect, Layer } from "effect"
import type { Health, Owner } from "./Contract.js"
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

export class SessionDirectory extends Context.Tag("mcp-agentify/SessionDirectory")<SessionDirectory, SessionDirectoryService>() {
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
}
