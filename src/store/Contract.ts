/** The store's vocabulary, beneath its services and its driver (see Store, Driver). */

/** The longest a request waits for the store. */
export const STORE_TIMEOUT_MS = 500
/** How long a gateway that stopped heartbeating keeps its sessions, by default. */
export const DEFAULT_LEASE_MS = 10_000

export interface Health {
  readonly ok: boolean
  /** "in this process", "redis://host:6379 (3 sessions held)", or what is wrong. */
  readonly detail: string
}

/** A finished task as the store keeps it: whose it is, and what `tasks/get` answers. */
export interface TaskRecord {
  readonly owner: string
  readonly reply: Readonly<Record<string, unknown>>
}

/**
 * Files the team's gateways keep alike (see store/Mirror): sealed OAuth tokens, pinned tool
 * definitions, tool vectors and backends' remembered lists, each by its name within its kind.
 */
export type FileKind = "tokens" | "pins" | "embeddings" | "known"

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
