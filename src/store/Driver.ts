/**
 * The store's driver: the few primitives the team's store services are written on (see Store), so
 * that a new kind of store is one driver, not six services. Its implementations: `local/Driver`
 * (in this process, over a `MemoryServer` that drivers in one process share) and `redis/Driver`
 * (Redis or Valkey); `test/unit/store/Driver.contract.test.ts` holds every driver to what is said
 * here.
 *
 * Each driver speaks for one replica (a gateway of the team, `replicaId`): what it holds is that
 * replica's, and what it announces is heard by the others' drivers, never by its own. Every
 * primitive either answers or fails with `StoreUnavailable` (the store is down, slow, or refused),
 * within `STORE_TIMEOUT_MS`: the services decide what "not known" means to their callers.
 */
import { Context, Data, type Effect, type Option, type PubSub, type Scope } from "effect"
import type { Announcement, FileKind, SharedFile } from "./Contract.js"

/** The store did not answer (in time): nothing can be said of what it holds. */
export class StoreUnavailable extends Data.TaggedError("StoreUnavailable")<{ readonly why: string }> {}

/** Who holds a lease: a replica, and where it listened when it claimed it (undefined: it had not said). */
export interface Holder {
  readonly replicaId: string
  readonly address: string | undefined
}

/**
 * Named leases, each held by one replica at most for a time to live. Every operation on one lease
 * is atomic in the store: two replicas claiming one lease at once, one gets it.
 */
export interface Leases {
  /** Takes the lease for `ttlMs` when it is free (never taken, released, expired) or already this replica's: whether it is now. */
  readonly claim: (lease: string, ttlMs: number) => Effect.Effect<boolean, StoreUnavailable>
  /** Extends the lease by `ttlMs` from now when it is still this replica's; false when it expired or another holds it. */
  readonly renew: (lease: string, ttlMs: number) => Effect.Effect<boolean, StoreUnavailable>
  /** Frees the lease when it is this replica's (another's is left alone), and stops keeping it. */
  readonly release: (lease: string) => Effect.Effect<void, StoreUnavailable>
  /** Who holds the lease now: none when it is free. */
  readonly holderOf: (lease: string) => Effect.Effect<Option.Option<Holder>, StoreUnavailable>
  /**
   * Holds the lease for as long as this replica lives: claimed now for `leaseMs`, then claimed again
   * at each heartbeat (so a store that restarted empty has it back at the next one) until it is
   * released, or the driver stops (then released at once). A replica that dies loses it when
   * `leaseMs` runs out.
   */
  readonly keep: (lease: string) => Effect.Effect<void, StoreUnavailable>
}

/** One key a take counts in, with its limits (absent: none of that kind). */
export interface Count {
  readonly key: string
  /** At most this many takes within the window (the last `windowMs`). */
  readonly perWindow?: number | undefined
  /** At most this many taken and not yet released, across the live replicas. */
  readonly atOnce?: number | undefined
}

export type CountTaken =
  /** Counted in every key; `release` gives back its places at once (once: again does nothing). */
  | { readonly _tag: "Taken"; readonly release: Effect.Effect<void> }
  /** Counted in none: `counts[index]` refuses it, by its window's limit or its at-once one, until `retryAfterMs`. */
  | { readonly _tag: "Refused"; readonly index: number; readonly perWindow: boolean; readonly retryAfterMs: number }

/**
 * Counters within a window and at once. A take checks every key and, when none refuses, counts in
 * all of them, atomically across the team: no other replica's take comes between (50 takes at once
 * against a limit of 10: exactly 10 are taken). The places a replica holds at once are its own:
 * written again at each heartbeat (a lost release heals), and counted for nothing once it stopped
 * heartbeating (a replica that died does not hold them for ever).
 */
export interface Counters {
  readonly take: (counts: ReadonlyArray<Count>, windowMs: number) => Effect.Effect<CountTaken, StoreUnavailable>
}

/**
 * Small files (`{text, at}`) by kind and name, each change announced to the other replicas in the
 * same step as it is stored: a replica that hears an announcement and reads the file finds that
 * change or a later one.
 */
export interface Blobs {
  /** Every file of a kind, removals (`text` "") included. */
  readonly list: (kind: FileKind) => Effect.Effect<ReadonlyMap<string, SharedFile>, StoreUnavailable>
  readonly get: (kind: FileKind, name: string) => Effect.Effect<Option.Option<SharedFile>, StoreUnavailable>
  /** Stores the file (replacing any) and announces it. */
  readonly put: (kind: FileKind, name: string, file: SharedFile) => Effect.Effect<void, StoreUnavailable>
  /**
   * Removes the file and announces it: kept as a removal (`{text: "", at: now}`), so that a
   * replica that was away does not bring the file back.
   */
  readonly remove: (kind: FileKind, name: string) => Effect.Effect<void, StoreUnavailable>
  /**
   * What the other replicas put or remove from now on, as they announce it (never this replica's
   * own): subscribed when this returns, for the scope. After the driver lost the store for a
   * while, `{kind, name: "*"}` for every kind: any file may have changed meanwhile.
   */
  readonly announcements: Effect.Effect<PubSub.Subscription<Announcement>, never, Scope.Scope>
}

/**
 * A group of values bounded together (a task owner's records): when a value joins it, the group's
 * values older than its time to live leave, then its oldest go while it holds more than
 * `maxEntries` or `maxBytes` (never the one that joined), in the same atomic step as the write.
 */
export interface Group {
  readonly name: string
  readonly maxEntries: number
  readonly maxBytes: number
}

/** Strings by key, each for a time to live (or for ever). */
export interface Values {
  readonly get: (key: string) => Effect.Effect<Option.Option<string>, StoreUnavailable>
  /** Stores `value` for `ttlMs`, in `group` when one is given. */
  readonly set: (key: string, value: string, ttlMs: number, group?: Group) => Effect.Effect<void, StoreUnavailable>
  /**
   * Stores `value` (for `ttlMs`, else for ever) only when the key holds none, atomically: of
   * several replicas asking at once one sets it, and every one is told the value that is now there.
   */
  readonly setIfAbsent: (
    key: string,
    value: string,
    ttlMs?: number
  ) => Effect.Effect<{ readonly set: boolean; readonly value: string }, StoreUnavailable>
}

export interface StoreDriverService {
  /** The replica this driver speaks for. */
  readonly replicaId: string
  /** How long a replica that stopped heartbeating keeps what it keeps (leases, places at once). */
  readonly leaseMs: number
  /**
   * Where this replica listens (the first address said stays): from now on the store knows it for
   * the other replicas (`addressOf`), and the heartbeat (every third of `leaseMs`) starts, at once.
   */
  readonly listeningAt: (address: string) => Effect.Effect<void>
  /** Where a live replica listens: none when it is gone (or never said). */
  readonly addressOf: (replicaId: string) => Effect.Effect<Option.Option<string>, StoreUnavailable>
  /** The store as shown ("redis://host:6379", "in this process"), and what is wrong with it now. */
  readonly health: Effect.Effect<{ readonly where: string; readonly failing: string | undefined }>
  readonly leases: Leases
  readonly counters: Counters
  readonly blobs: Blobs
  readonly values: Values
}

export class StoreDriver extends Context.Service<StoreDriver, StoreDriverService>()("mcp-agentify/StoreDriver") {}
