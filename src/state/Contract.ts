/**
 * What shared state is to the rest of the gateway (see SharedState): the interface `Local` and
 * `Redis` implement.
 */
import type { Effect, Queue, Scope } from "effect"

/** The longest a request waits for the store. */
export const STORE_TIMEOUT_MS = 500
/** How long a gateway that stopped heartbeating keeps its sessions, by default. */
export const DEFAULT_LEASE_MS = 10_000

export interface Health {
  readonly ok: boolean
  /** "in this process", "redis://host:6379 (3 sessions held)", or what is wrong. */
  readonly detail: string
}

/** One key a call counts against (see gateway/call/Quotas), with its limits. */
export interface QuotaKey {
  readonly key: string
  readonly callsPerMinute?: number | undefined
  readonly concurrent?: number | undefined
}

/** A call counted team-wide: its places (given back by `release`), or the key that refuses it and when to retry. */
export type QuotaTaken =
  | { readonly _tag: "Taken"; readonly release: Effect.Effect<void> }
  | { readonly _tag: "Refused"; readonly index: number; readonly perMinute: boolean; readonly retryAfterMs: number }

/** A finished task as the store keeps it: whose it is, and what `tasks/get` answers. */
export interface TaskRecord {
  readonly owner: string
  readonly reply: Readonly<Record<string, unknown>>
}

/**
 * Files the team's gateways keep alike (see state/Mirror): sealed OAuth tokens, and pinned tool
 * definitions, each by its name within its kind.
 */
export type FileKind = "tokens" | "pins" | "embeddings"

/** A shared file's content, and when it was written (ms since the epoch). */
export interface SharedFile {
  /** Empty: removed then (a file is never empty). */
  readonly text: string
  readonly at: number
}

/** A shared file another gateway wrote or removed (`name` "*": any may have, while this one was not hearing). */
export interface Announcement {
  readonly kind: FileKind
  readonly name: string
}

/** Who holds a session (see `ownerOf`). */
export type Owner = { readonly at: string } | "none" | "unknown"

export interface SharedStateService {
  /** "local": in this process only; "shared": in a store the team's gateways share. */
  readonly kind: "local" | "shared"
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
  /**
   * A secret every gateway of the team shares (made by the first to ask, 32 bytes), such as the
   * key that seals 2026-07-28 request states; undefined in this process alone, or while the store fails.
   */
  readonly sharedSecret: (name: string) => Effect.Effect<Buffer | undefined>
  /**
   * Counts a call against every key, team-wide, or none (checked, then counted, in one step);
   * undefined when it must be counted here (no store, or the store failed to answer in time).
   */
  readonly takeQuota: (keys: ReadonlyArray<QuotaKey>) => Effect.Effect<QuotaTaken | undefined>
  /**
   * Keeps a finished task's record (its owner, and the reply to `tasks/get`) for `ttlMs`, so that
   * it outlives the gateway that ran it.
   */
  readonly saveTask: (taskId: string, record: TaskRecord, ttlMs: number) => Effect.Effect<void>
  /** A finished task's record, kept by `saveTask`: none when there is none, "unknown" when the store cannot say. */
  readonly taskRecord: (taskId: string) => Effect.Effect<TaskRecord | "none" | "unknown">
  /** Every shared file of a kind: undefined when there is no store, or it cannot say. */
  readonly files: (kind: FileKind) => Effect.Effect<ReadonlyMap<string, SharedFile> | undefined>
  /** One shared file: none when there is none, "unknown" when the store cannot say. */
  readonly file: (kind: FileKind, name: string) => Effect.Effect<SharedFile | "none" | "unknown">
  /** Stores a file (or its removal: `undefined`) and tells the other gateways; false when the store did not take it. */
  readonly putFile: (kind: FileKind, name: string, file: SharedFile | undefined) => Effect.Effect<boolean>
  /**
   * What the other gateways store or remove from now on, as they say it (nothing in this process
   * alone): subscribed when this returns, for the scope, so nothing said after it is missed.
   */
  readonly announcements: Effect.Effect<Queue.Dequeue<Announcement>, never, Scope.Scope>
  /**
   * Whether this gateway has `turn` (for `ttlMs`): no other gateway of the team has it; true with
   * no store, or when the store cannot say (the work is then done as if alone).
   */
  readonly turn: (turn: string, ttlMs: number) => Effect.Effect<boolean>
  /** What /readyz says of the store. */
  readonly health: Effect.Effect<Health>
}
