/**
 * A circuit breaker for an endpoint the gateway asks on the side (the embeddings'): once it fails,
 * it is not asked for a while (open), then one request tries it (half-open) while the others go
 * without it; that one's success closes the circuit, its failure opens it for longer. The delays
 * are a Schedule's (exponential from a second, capped at five minutes). The states are a small
 * synchronous machine here: the embeddings ask it outside any Effect, and Effect 4's own
 * (`effect/persistence/CircuitBreaker`) is an effectful keyed service whose backoff resets on
 * other terms.
 */
import { Duration, Effect, Schedule } from "effect"

export type State = "closed" | "open" | "half-open"

/** How long the circuit stays open after the n-th failure in a row (n from 1). */
const BACKOFF = Schedule.min([Schedule.exponential("1 second", 2), Schedule.spaced("5 minutes")])
const DELAYS_MS: ReadonlyArray<number> = Effect.runSync(
  Effect.gen(function* () {
    // The schedule's first 12 delays, read step by step (it never ends: no `Done` to meet).
    const step = yield* Schedule.toStep(BACKOFF)
    const delays: Array<number> = []
    for (let i = 0; i < 12; i++) delays.push(Duration.toMillis((yield* step(0, undefined))[1]))
    return delays
  })
)
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
