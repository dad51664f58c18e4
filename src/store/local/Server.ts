/**
 * A store in this process's memory: what a Redis server is to the drivers that share it, for
 * drivers in one process (two gateways embedded in one app, a test). Plain synchronous methods, so
 * each is atomic as a Redis script is: nothing runs between its check and its write. Times to live
 * are real (an entry past its time is gone to every reader), and what has expired is swept once a
 * minute, so nothing grows with what is no longer there.
 */
import type { Announcement, FileKind, SharedFile } from "../Contract.js"
import type { Count, Group, Holder } from "../Driver.js"

const SWEEP_MS = 60_000

/** An answer to a take: counted (the places to give back) or refused by `counts[index]`. */
export type Took =
  | { readonly _tag: "Taken"; readonly atOnce: ReadonlyArray<string> }
  | { readonly _tag: "Refused"; readonly index: number; readonly perWindow: boolean; readonly retryAfterMs: number }

/** Hears what a replica announced (every listener hears it; each leaves its own replica's). */
export type Listener = (from: string, announcement: Announcement) => void

interface Timed<A> {
  readonly value: A
  readonly until: number
}

export class MemoryServer {
  private readonly leases = new Map<string, Timed<Holder>>()
  private readonly presence = new Map<string, Timed<string>>()
  private readonly windows = new Map<string, { readonly times: Array<number>; windowMs: number }>()
  /** Per key, each replica's places taken at once. */
  private readonly inFlight = new Map<string, Map<string, number>>()
  private readonly files = new Map<FileKind, Map<string, SharedFile>>()
  private readonly values = new Map<string, Timed<string>>()
  /** Per group, its values' keys with when they joined and their sizes. */
  private readonly groups = new Map<string, Map<string, { readonly at: number; readonly bytes: number }>>()
  private readonly listeners = new Set<Listener>()
  private swept = 0

  constructor(readonly now: () => number = Date.now) {}

  // Replicas

  /** `replicaId` listens at `address` for `ttlMs` from now. */
  present(replicaId: string, address: string, ttlMs: number): void {
    this.presence.set(replicaId, { value: address, until: this.now() + ttlMs })
  }

  absent(replicaId: string): void {
    this.presence.delete(replicaId)
  }

  addressOf(replicaId: string): string | undefined {
    return this.live(this.presence, replicaId)
  }

  // Leases

  claim(lease: string, holder: Holder, ttlMs: number): boolean {
    const now = this.sweep()
    const held = this.live(this.leases, lease)
    if (held !== undefined && held.replicaId !== holder.replicaId) return false
    this.leases.set(lease, { value: holder, until: now + ttlMs })
    return true
  }

  renew(lease: string, replicaId: string, ttlMs: number): boolean {
    const held = this.live(this.leases, lease)
    if (held?.replicaId !== replicaId) return false
    this.leases.set(lease, { value: held, until: this.now() + ttlMs })
    return true
  }

  release(lease: string, replicaId: string): void {
    if (this.live(this.leases, lease)?.replicaId === replicaId) this.leases.delete(lease)
  }

  holderOf(lease: string): Holder | undefined {
    return this.live(this.leases, lease)
  }

  // Counters

  /** Checks every key, then counts in all of them, or in none. */
  take(replicaId: string, counts: ReadonlyArray<Count>, windowMs: number): Took {
    const now = this.sweep()
    for (const [index, { key, perWindow, atOnce }] of counts.entries()) {
      if (perWindow !== undefined) {
        const times = this.windowOf(key, windowMs, now)
        if (times.length >= perWindow) {
          const retryAfterMs = perWindow === 0 ? windowMs : times[times.length - perWindow]! + windowMs - now
          return { _tag: "Refused", index, perWindow: true, retryAfterMs }
        }
      }
      if (atOnce !== undefined && this.heldAtOnce(key, replicaId) >= atOnce) {
        return { _tag: "Refused", index, perWindow: false, retryAfterMs: 1_000 }
      }
    }
    for (const { key, perWindow, atOnce } of counts) {
      if (perWindow !== undefined) this.windowOf(key, windowMs, now).push(now)
      if (atOnce !== undefined) this.giveBack(key, replicaId, -1)
    }
    return { _tag: "Taken", atOnce: counts.filter((c) => c.atOnce !== undefined).map((c) => c.key) }
  }

  /** Gives back one place at once in each key. */
  releaseAtOnce(replicaId: string, keys: ReadonlyArray<string>): void {
    for (const key of keys) this.giveBack(key, replicaId, 1)
  }

  // Files

  filesOf(kind: FileKind): ReadonlyMap<string, SharedFile> {
    return new Map(this.files.get(kind))
  }

  file(kind: FileKind, name: string): SharedFile | undefined {
    return this.files.get(kind)?.get(name)
  }

  /** Stores the file and tells every listener, in one step. */
  putFile(from: string, kind: FileKind, name: string, file: SharedFile): void {
    let files = this.files.get(kind)
    if (files === undefined) this.files.set(kind, (files = new Map()))
    files.set(name, file)
    for (const listener of this.listeners) listener(from, { kind, name })
  }

  /** Hears every announcement until the returned function is called. */
  listen(listener: Listener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  // Values

  get(key: string): string | undefined {
    return this.live(this.values, key)
  }

  set(key: string, value: string, ttlMs: number, group?: Group): void {
    const now = this.sweep()
    this.values.set(key, { value, until: now + ttlMs })
    if (group !== undefined) this.join(group, key, Buffer.byteLength(value), ttlMs, now)
  }

  setIfAbsent(key: string, value: string, ttlMs: number | undefined): { readonly set: boolean; readonly value: string } {
    const now = this.sweep()
    const there = this.live(this.values, key)
    if (there !== undefined) return { set: false, value: there }
    this.values.set(key, { value, until: ttlMs === undefined ? Infinity : now + ttlMs })
    return { set: true, value }
  }

  // Within

  /** The entry while it lives (an expired one is gone). */
  private live<A>(map: Map<string, Timed<A>>, key: string): A | undefined {
    const entry = map.get(key)
    if (entry === undefined) return undefined
    if (entry.until > this.now()) return entry.value
    map.delete(key)
    return undefined
  }

  /** The key's takes within the window (older ones dropped). */
  private windowOf(key: string, windowMs: number, now: number): Array<number> {
    let window = this.windows.get(key)
    if (window === undefined) this.windows.set(key, (window = { times: [], windowMs }))
    window.windowMs = windowMs
    let old = 0
    while (old < window.times.length && window.times[old]! <= now - windowMs) old++
    if (old > 0) window.times.splice(0, old)
    return window.times
  }

  /** The key's places taken at once by live replicas (`replicaId`, asking, is live); a dead one's are dropped. */
  private heldAtOnce(key: string, replicaId: string): number {
    const byReplica = this.inFlight.get(key)
    let sum = 0
    for (const [replica, n] of byReplica ?? []) {
      if (replica === replicaId || this.addressOf(replica) !== undefined) sum += n
      else byReplica!.delete(replica)
    }
    return sum
  }

  /** Gives `n` places back (negative: takes them). */
  private giveBack(key: string, replicaId: string, n: number): void {
    let byReplica = this.inFlight.get(key)
    if (byReplica === undefined) this.inFlight.set(key, (byReplica = new Map()))
    const left = (byReplica.get(replicaId) ?? 0) - n
    if (left > 0) byReplica.set(replicaId, left)
    else byReplica.delete(replicaId)
    if (byReplica.size === 0) this.inFlight.delete(key)
  }

  /** `key` joins `group`: its values older than `ttlMs` leave, then its oldest while it is over its bounds (never `key`). */
  private join(group: Group, key: string, bytes: number, ttlMs: number, now: number): void {
    let members = this.groups.get(group.name)
    if (members === undefined) this.groups.set(group.name, (members = new Map()))
    members.delete(key)
    members.set(key, { at: now, bytes })
    let total = 0
    for (const [member, { at, bytes }] of members) {
      if (at <= now - ttlMs) members.delete(member)
      else total += bytes
    }
    // Oldest first: a Map keeps the order of insertion, and a member that joins again moves last.
    for (const [member, { bytes }] of members) {
      if (members.size <= 1 || (members.size <= group.maxEntries && total <= group.maxBytes)) break
      if (member === key) continue
      members.delete(member)
      this.values.delete(member)
      total -= bytes
    }
  }

  /** Once a minute, what has expired goes; the current time. */
  private sweep(): number {
    const now = this.now()
    if (now - this.swept < SWEEP_MS) return now
    this.swept = now
    for (const map of [this.leases, this.presence, this.values] as Array<Map<string, Timed<unknown>>>)
      for (const [key, { until }] of map) if (until <= now) map.delete(key)
    for (const [key, { times, windowMs }] of this.windows)
      if (times.length === 0 || times[times.length - 1]! <= now - windowMs) this.windows.delete(key)
    for (const [name, members] of this.groups) {
      for (const key of members.keys()) if (!this.values.has(key)) members.delete(key)
      if (members.size === 0) this.groups.delete(name)
    }
    return now
  }
}
