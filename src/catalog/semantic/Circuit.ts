/**
 * A circuit breaker for an endpoint the gateway asks on the side (the embeddings'): once it fails,
 * it is not asked for a while (open), then one request tries it (half-open) while the others go
 * without it; that one's success closes the circuit, its failure opens it for longer. The delays
 * are a Schedule's (exponential from a second, capped at five minutes); Effect 3 has no circuit of
 * its own, so the states are a small machine here.
 */
import { Chunk, Duration, Effect, Schedule } from "effect"

export type State = "closed" | "open" | "half-open"

/** How long the circuit stays open after the n-th failure in a row (n from 1). */
const BACKOFF = Schedule.delays(Schedule.union(Schedule.exponential("1 second", 2), Schedule.spaced("5 minutes")))
const DELAYS_MS: ReadonlyArray<number> = Chunk.toReadonlyArray(
  Effect.runSync(
    Schedule.run(
      BACKOFF,
      0,
      Array.from({ length: 12 }, () => undefined)
    )
  )
).map(Duration.toMillis)
export const delayAfter = (failures: number): number =>
  DELAYS_MS[Math.min(Math.max(failures, 1), DELAYS_MS.length) - 1] ?? 300_000

export interface Circuit {
  readonly state: () => State
  /**
   * Whether a request may go now: always when closed, never when open, and when half-open only
   * the one trial (until its outcome is told).
   */
  readonly admit: () => boolean
  readonly succeeded: () => void
  readonly failed: () => void
}

/** A closed circuit; `now` is the clock (a test's own). */
export const make = (now: () => number = Date.now): Circuit => {
  let failures = 0
  let openUntil = 0
  let trial = false
  const state = (): State => (failures === 0 ? "closed" : now() < openUntil ? "open" : "half-open")
  return {
    state,
    admit: () => {
      switch (state()) {
        case "closed":
          return true
        case "open":
          return false
        case "half-open":
          if (trial) return false
          trial = true
          return true
      }
    },
    succeeded: () => {
      failures = 0
      trial = false
    },
    failed: () => {
      // Requests that were in flight when it opened fail too: one outage, one step of backoff.
      if (state() === "open") return
      failures++
      trial = false
      openUntil = now() + delayAfter(failures)
    }
  }
}
