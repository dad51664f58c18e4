/**
 * The counters behind `limits` in this process: for each key (a subject, a tool, a backend) the
 * start times of its calls in the last minute and its calls in flight. A call takes every key it
 * counts against or none (checked, then counted, with nothing between), and gives back its places
 * in flight when it ends. One gateway alone counts here (TeamQuotas.layerLocal); a team counts in
 * its store, and here only while the store fails to answer (TeamQuotas.layer).
 */
import type { Limit } from "../config/Limits.js"

const MINUTE_MS = 60_000

const calls = (n: number) => `${n} call${n === 1 ? "" : "s"}`

/** What a limit that refuses a call is, in words: "5 calls per minute", "3 calls at once". */
export const limitWords = (limit: Limit, perMinute: boolean): string =>
  perMinute ? `${calls(limit.callsPerMinute ?? 0)} per minute` : `${calls(limit.concurrent ?? 0)} at once`

/** One key a call counts against, and its limit, named as the configuration names it. */
export interface Counted {
  readonly key: string
  /** `limits.subject`, `limits.tools["fs__*"]`... */
  readonly named: string
  readonly limit: Limit
}

export type Taken =
  | { readonly _tag: "Taken"; readonly release: () => void }
  | { readonly _tag: "Refused"; readonly named: string; readonly why: string; readonly retryAfterMs: number }

export class Quotas {
  private readonly recent = new Map<string, Array<number>>()
  private readonly inFlight = new Map<string, number>()
  private swept = 0

  constructor(private readonly now: () => number = Date.now) {}

  /** How many keys are counted now (each subject, tool or backend with a call in the last minute or in flight). */
  get keys(): number {
    return new Set([...this.recent.keys(), ...this.inFlight.keys()]).size
  }

  /** Takes a place for a call in every key, or says which limit refuses it and when to retry. */
  take(counted: ReadonlyArray<Counted>): Taken {
    const now = this.now()
    this.sweep(now)
    for (const { key, named, limit } of counted) {
      if (limit.callsPerMinute !== undefined) {
        const times = this.recentOf(key, now)
        if (times.length >= limit.callsPerMinute) {
          const retryAfterMs = Math.max(1, times[times.length - limit.callsPerMinute]! + MINUTE_MS - now)
          return { _tag: "Refused", named, why: limitWords(limit, true), retryAfterMs }
        }
      }
      if (limit.concurrent !== undefined && (this.inFlight.get(key) ?? 0) >= limit.concurrent) {
        // A place frees when a call ends: a second is a fair first wait.
        return { _tag: "Refused", named, why: limitWords(limit, false), retryAfterMs: 1_000 }
      }
    }
    for (const { key, limit } of counted) {
      if (limit.callsPerMinute !== undefined) this.recentOf(key, now).push(now)
      if (limit.concurrent !== undefined) this.inFlight.set(key, (this.inFlight.get(key) ?? 0) + 1)
    }
    let released = false
    return {
      _tag: "Taken",
      release: () => {
        if (released) return
        released = true
        for (const { key, limit } of counted) {
          if (limit.concurrent === undefined) continue
          const left = (this.inFlight.get(key) ?? 1) - 1
          if (left === 0) this.inFlight.delete(key)
          else this.inFlight.set(key, left)
        }
      }
    }
  }

  /**
   * Forgets the keys with no call in the last minute, once a minute: a subject seen once is not
   * kept for the life of the process (a million of them held 269 MB an hour on). A key with calls
   * in flight stays in `inFlight` until they end.
   */
  private sweep(now: number): void {
    if (now - this.swept < MINUTE_MS) return
    this.swept = now
    for (const [key, times] of this.recent)
      if (times.length === 0 || times[times.length - 1]! <= now - MINUTE_MS) this.recent.delete(key)
  }

  /** The key's calls in the last minute (older ones dropped). */
  private recentOf(key: string, now: number): Array<number> {
    let times = this.recent.get(key)
    if (times === undefined) this.recent.set(key, (times = []))
    let old = 0
    while (old < times.length && times[old]! <= now - MINUTE_MS) old++
    if (old > 0) times.splice(0, old)
    return times
  }
}
