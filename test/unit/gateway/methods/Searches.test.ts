/**
 * Searches: one session's searches in flight are bounded; the one past the bound waits for a place
 * and runs when one ends.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Ref, Schedule } from "effect"
import * as Searches from "../../../../src/gateway/methods/Searches.js"

describe("Searches", () => {
  it.live(`runs ${Searches.MAX_SEARCHES_IN_FLIGHT} of a session's searches at once; the next waits until one ends`, () =>
    Effect.gen(function* () {
      const searches = Searches.make()
      const started = yield* Ref.make(0)
      const ends = yield* Effect.all(Array.from({ length: Searches.MAX_SEARCHES_IN_FLIGHT + 1 }, () => Deferred.make<void>()))
      const fibers = yield* Effect.forEach(ends, (end) =>
        Effect.forkChild(
          searches.run(
            Effect.andThen(
              Ref.update(started, (n) => n + 1),
              Deferred.await(end)
            )
          )
        )
      )
      const startedNow = () => Ref.get(started)
      // Polled on a timer: a loop of microtasks would never let the searches' breath (a macrotask) in.
      const poll = (until: (n: number) => boolean) =>
        Effect.repeat(startedNow(), { until, schedule: Schedule.spaced("5 millis") })
      // Every place taken: each running search has started (polled, each search breathes first).
      yield* poll((n) => n >= Searches.MAX_SEARCHES_IN_FLIGHT)
      // Many turns of the event loop later, the next still waits.
      for (let i = 0; i < 20; i++) yield* Effect.callback<void>((resume) => void setImmediate(() => resume(Effect.void)))
      expect(yield* startedNow()).toBe(Searches.MAX_SEARCHES_IN_FLIGHT)
      yield* Deferred.succeed(ends[0]!, undefined)
      yield* poll((n) => n === Searches.MAX_SEARCHES_IN_FLIGHT + 1)
      for (const end of ends) yield* Deferred.succeed(end, undefined)
      yield* Fiber.joinAll(fibers)
    })
  )

  it.live("a search that is interrupted while it waits or runs gives its place back", () =>
    Effect.gen(function* () {
      const searches = Searches.make()
      const running = yield* Effect.forEach(Array.from({ length: Searches.MAX_SEARCHES_IN_FLIGHT }), () =>
        Effect.forkChild(searches.run(Effect.never))
      )
      const waiting = yield* Effect.forkChild(searches.run(Effect.never))
      yield* Fiber.interrupt(waiting)
      yield* Fiber.interruptAll(running)
      expect(yield* searches.run(Effect.succeed("ran"))).toBe("ran")
    })
  )
})
