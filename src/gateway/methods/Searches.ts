/**
 * A session's searches (`agentify_search_tools`), bounded: at most `MAX_SEARCHES_IN_FLIGHT` of one
 * session run at once, the others wait their turn, and each ranks only after a breath of the event
 * loop. Ranking is synchronous work (a few milliseconds at 20,000 tools); fifty searches sent at
 * once would otherwise run back to back within one turn of the event loop and hold every other
 * request behind them, a ping included (2.9 s was measured before the bound).
 */
import { Effect, Semaphore } from "effect"

/**
 * One: ranking cannot run side by side on one thread, and a ping beside a burst then waits for one
 * search at most (with two it waited for two: p50 37 ms against 13 ms, test/bench/search.ts at load
 * 20). The cost: with `embeddings`, a session's search waits while its previous one asks the endpoint.
 */
export const MAX_SEARCHES_IN_FLIGHT = 1

/**
 * A pause that lets the event loop take its I/O (a ping, another client's request) first:
 * `Effect.yieldNow` alone runs on as microtasks, which I/O never gets between.
 */
const breath: Effect.Effect<void> = Effect.callback<void>((resume) => {
  const timer = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(timer))
})

/** One session's bound: `run(search)` waits for a place, breathes, then runs the search. */
export const make = () => {
  const places = Semaphore.makeUnsafe(MAX_SEARCHES_IN_FLIGHT)
  return {
    run: <A, E, R>(search: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      places.withPermits(1)(Effect.andThen(breath, search))
  }
}
