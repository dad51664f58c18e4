/**
 * The one engine for requests that arrive, in process: every request's exit becomes exactly one
 * reply (or none where the policy says so), ids in flight are refused or tolerated as configured,
 * a cancellation and a stop end a request differently, and the drain waits before it stops.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Scope } from "effect"
import * as Inbound from "../../../src/jsonrpc/Inbound.js"
import { failure, type Id, type Response, success } from "../../../src/jsonrpc/JsonRpc.js"

/** A reply that names how the request ended, so each ending can be told apart. */
const naming = (id: Id, exit: Exit.Exit<string, string>, ending: Inbound.Ending): Response =>
  Exit.isSuccess(exit) ? success(id, exit.value) : failure(id, { code: -32000, message: failedWith(exit.cause) ?? ending })

/** The error of a cause that is one failure and nothing else (Effect 4's causes are flat: a list of reasons). */
const failedWith = (cause: Cause.Cause<string>): string | undefined => {
  const [only, ...more] = cause.reasons
  return only !== undefined && more.length === 0 && Cause.isFailReason(only) ? only.error : undefined
}

const engine = (duplicates: "refuse" | "allow", reply: Inbound.Options<string, string>["reply"] = naming) =>
  Effect.gen(function* () {
    const sent: Array<Response> = []
    const inbound = yield* Inbound.make<Id, string, string>({ duplicates, reply })
    const send = (response: Response) => void sent.push(response)
    return { inbound, sent, send }
  })

describe("Inbound", () => {
  it.live("a result, a failure and a cancellation each become one reply with the request's id", () =>
    Effect.gen(function* () {
      const { inbound, sent, send } = yield* engine("refuse")
      const held = yield* Deferred.make<string>()
      inbound.run(1, 1, Effect.succeed("one"), send)
      inbound.run("two", "two", Effect.fail("refused"), send)
      inbound.run(3, 3, Deferred.await(held), send)
      expect(inbound.size()).toBe(1)
      expect(inbound.cancel(3)).toBe(true)
      expect(inbound.cancel(4)).toBe(false)
      yield* Effect.yieldNow
      yield* inbound.drain(1_000)
      expect(sent).toEqual([
        success(1, "one"),
        failure("two", { code: -32000, message: "refused" }),
        failure(3, { code: -32000, message: "cancelled" })
      ])
      expect(inbound.size()).toBe(0)
    })
  )

  it.live("an id in flight is refused (-32600) when duplicates are refused, and free again once replied to", () =>
    Effect.gen(function* () {
      const { inbound, sent, send } = yield* engine("refuse")
      const held = yield* Deferred.make<string>()
      inbound.run(5, 5, Deferred.await(held), send)
      expect(inbound.run(5, 5, Effect.succeed("again"), send)).toBeUndefined()
      expect(sent).toEqual([Inbound.idInUse(5)])
      expect(sent[0]).toMatchObject({ error: { code: -32600 } })
      yield* Deferred.succeed(held, "first")
      yield* inbound.drain(1_000)
      inbound.run(5, 5, Effect.succeed("reused"), send)
      yield* inbound.drain(1_000)
      expect(sent.slice(1)).toEqual([success(5, "first"), success(5, "reused")])
    })
  )

  it.live("tolerated duplicates both run and reply; cancelling by id reaches the first", () =>
    Effect.gen(function* () {
      const { inbound, sent, send } = yield* engine("allow")
      const first = yield* Deferred.make<string>()
      const second = yield* Deferred.make<string>()
      inbound.run(1, 1, Deferred.await(first), send)
      inbound.run(1, 1, Deferred.await(second), send)
      expect(inbound.size()).toBe(2)
      inbound.cancel(1)
      yield* Deferred.succeed(second, "second")
      yield* inbound.drain(1_000)
      expect(sent).toHaveLength(2)
      expect(sent).toContainEqual(failure(1, { code: -32000, message: "cancelled" }))
      expect(sent).toContainEqual(success(1, "second"))
    })
  )

  it.live("the drain lets requests finish within its grace, then stops the rest, each still replying", () =>
    Effect.gen(function* () {
      const { inbound, sent, send } = yield* engine("refuse")
      const quick = yield* Deferred.make<string>()
      inbound.run(1, 1, Deferred.await(quick), send)
      inbound.run(2, 2, Effect.never, send)
      yield* Effect.forkChild(Effect.andThen(Effect.yieldNow, Deferred.succeed(quick, "in time")))
      yield* inbound.drain(50)
      expect(sent).toEqual([success(1, "in time"), failure(2, { code: -32000, message: "stopped" })])
    })
  )

  it.live("closing the engine's scope stops what is in flight, and each request still gets its one reply", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const { inbound, sent, send } = yield* Scope.provide(engine("refuse"), scope)
      inbound.run(1, 1, Effect.never, send)
      inbound.run(2, 2, Effect.never, send)
      yield* Scope.close(scope, Exit.void)
      expect(sent).toEqual([failure(1, { code: -32000, message: "stopped" }), failure(2, { code: -32000, message: "stopped" })])
    })
  )

  it.live("a policy that sends nothing for an ending sends nothing; `reply` still ends", () =>
    Effect.gen(function* () {
      const { inbound, sent, send } = yield* engine("refuse", (id, exit, ending) =>
        ending === "cancelled" ? undefined : naming(id, exit, ending)
      )
      const held = yield* Deferred.make<string>()
      const waiting = yield* Effect.forkChild(inbound.reply(9, 9, Deferred.await(held)))
      yield* Effect.yieldNow
      inbound.cancel(9)
      expect(yield* Fiber.await(waiting)).toEqual(Exit.succeed(undefined))
      inbound.run(10, 10, Effect.succeed("ten"), send)
      yield* inbound.drain(1_000)
      expect(sent).toEqual([success(10, "ten")])
    })
  )
})
