/**
 * Start slots: at most `size` starts at once; a start a request waits for goes before those nobody
 * waits for; a start holds its slot at most `holdMs`; a start given up while it waits leaves no
 * slot taken.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { StartSlots } from "../../../src/backend/StartSlots.js"

/** A start that notes when it runs, then waits for `gate`. */
const startNoting = (order: Array<string>, name: string, gate: Deferred.Deferred<void>) =>
  Effect.andThen(
    Effect.sync(() => order.push(name)),
    Deferred.await(gate)
  )

/** Yields until `check` holds (a bounded number of turns: the slots move in the same fibers). */
const settle = (check: () => boolean) =>
  Effect.gen(function* () {
    for (let i = 0; i < 1_000 && !check(); i++) yield* Effect.yieldNow
    expect(check()).toBe(true)
  })

/**
 * One slot, taken by a start named `name` (holding it at most `holdMs`) until `gate` opens; `open`
 * is a gate already open, for the starts that follow.
 */
const oneSlotTaken = (name: string, holdMs = 60_000) =>
  Effect.gen(function* () {
    const slots = new StartSlots(1)
    const order: Array<string> = []
    const gate = yield* Deferred.make<void>()
    const open = yield* Deferred.make<void>()
    yield* Deferred.succeed(open, undefined)
    const first = yield* Effect.forkChild(slots.with(false, holdMs, startNoting(order, name, gate)))
    yield* settle(() => order.length === 1)
    return { slots, order, gate, open, first }
  })

describe("StartSlots", () => {
  it.effect("at most `size` starts run at once; the next runs when one ends", () =>
    Effect.gen(function* () {
      const slots = new StartSlots(2)
      const order: Array<string> = []
      const gates = yield* Effect.forEach([0, 1, 2, 3], () => Deferred.make<void>())
      const fibers = yield* Effect.forEach(gates, (gate, i) =>
        Effect.forkChild(slots.with(false, 60_000, startNoting(order, `s${i}`, gate)))
      )
      yield* settle(() => order.length === 2 && slots.waiting() === 2)
      yield* Deferred.succeed(gates[0]!, undefined)
      yield* settle(() => order.length === 3)
      expect(order).toEqual(["s0", "s1", "s2"])
      for (const gate of gates) yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll(fibers)
      expect(order).toEqual(["s0", "s1", "s2", "s3"])
    })
  )

  it.effect("a start a request waits for goes before those that were waiting longer", () =>
    Effect.gen(function* () {
      const { slots, order, gate, open, first } = yield* oneSlotTaken("first")
      const background = yield* Effect.forkChild(slots.with(false, 60_000, startNoting(order, "background", open)))
      yield* settle(() => slots.waiting() === 1)
      const waitedFor = yield* Effect.forkChild(slots.with(true, 60_000, startNoting(order, "waited for", open)))
      yield* settle(() => slots.waiting() === 2)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll([first, background, waitedFor])
      expect(order).toEqual(["first", "waited for", "background"])
    })
  )

  it.effect("a start nobody waited for goes first once a request waits for it (hurry)", () =>
    Effect.gen(function* () {
      const { slots, order, gate, open, first } = yield* oneSlotTaken("first")
      const [a, b] = [{ id: "a" }, { id: "b" }]
      const queued = yield* Effect.forEach([a, b], (owner) =>
        Effect.forkChild(slots.with(false, 60_000, startNoting(order, owner.id, open), owner))
      )
      yield* settle(() => slots.waiting() === 2)
      slots.hurry(b)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll([first, ...queued])
      expect(order).toEqual(["first", "b", "a"])
    })
  )

  it.live("a start that hangs gives its slot back after `holdMs`", () =>
    Effect.gen(function* () {
      // Its gate never opens.
      const { slots, order, open, first: hung } = yield* oneSlotTaken("hung", 50)
      // Waits for the hung one's hold to end, not for the hung one.
      yield* slots.with(true, 50, startNoting(order, "next", open))
      expect(order).toEqual(["hung", "next"])
      yield* Fiber.interrupt(hung)
      // Its end gives back nothing twice: one slot, free.
      yield* slots.with(false, 50, startNoting(order, "after", open))
      expect(slots.waiting()).toBe(0)
    })
  )

  it.effect("a start given up while it waits leaves the queue; the slot goes to the next", () =>
    Effect.gen(function* () {
      const { slots, order, gate, open, first } = yield* oneSlotTaken("first")
      const givenUp = yield* Effect.forkChild(slots.with(true, 60_000, startNoting(order, "given up", open)))
      const next = yield* Effect.forkChild(slots.with(false, 60_000, startNoting(order, "next", open)))
      yield* settle(() => slots.waiting() === 2)
      yield* Fiber.interrupt(givenUp)
      expect(slots.waiting()).toBe(1)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll([first, next])
      expect(order).toEqual(["first", "next"])
      // Every slot back: a start now runs at once.
      yield* slots.with(false, 60_000, startNoting(order, "last", open))
      expect(order).toEqual(["first", "next", "last"])
    })
  )
})
