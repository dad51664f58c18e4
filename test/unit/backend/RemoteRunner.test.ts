/**
 * Where a remote channel's own work runs (src/backend/remote/RemoteChannel.ts `runner`): in its
 * backend's scope, with the services of that scope, stoppable even when made in an acquire, a
 * fallback's work apart from its parent's, and all of it ended with the scope.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Option, Scope } from "effect"
import { runner } from "../../../src/backend/remote/RemoteChannel.js"

class Marker extends Context.Service<Marker, string>()("test/Marker") {}

describe("a remote channel's runner", () => {
  it.effect("runs with its scope's services, is stopped even when made in an acquire, and a child stops apart", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      // Made as a backend makes it: inside acquireRelease's acquire (uninterruptible).
      const made = yield* Effect.acquireRelease(runner, () => Effect.void).pipe(
        Effect.provideService(Marker, "the backend's"),
        Scope.provide(scope)
      )
      // What the channel runs sees the backend's services (the tracer, the logger), not a bare runtime's.
      const seen = yield* Fiber.join(made.run(Effect.serviceOption(Marker)))
      expect(seen).toEqual(Option.some("the backend's"))

      const parentStarted = yield* Deferred.make<void>()
      const parent = made.run(Effect.andThen(Deferred.succeed(parentStarted, undefined), Effect.never))
      const child = made.child()
      const fallback = child.run(Effect.never)
      yield* Deferred.await(parentStarted)
      child.stop()
      const childExit = yield* Fiber.await(fallback)
      expect(Exit.hasInterrupts(childExit)).toBe(true)
      // The parent's work goes on until its own stop.
      expect(parent.pollUnsafe()).toBeUndefined()
      made.stop()
      expect(Exit.hasInterrupts(yield* Fiber.await(parent))).toBe(true)

      // Whatever still runs ends with the scope.
      const late = made.run(Effect.never)
      yield* Scope.close(scope, Exit.void)
      expect(Exit.hasInterrupts(yield* Fiber.await(late))).toBe(true)
    })
  )
})
