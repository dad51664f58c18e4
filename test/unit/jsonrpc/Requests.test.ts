/**
 * The request engine in process, with a recording peer: the one engine behind the gateway's
 * requests to backends and to clients. Exactly one outcome per id, whatever comes first (reply,
 * timeout, the caller going away, the peer's end); ordered delivery behind notifications; the
 * bound on pending requests; the route a caller chose follows its cancellation.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { Requests } from "../../../src/jsonrpc/Requests.js"

class Failed {
  constructor(readonly why: string) {}
}

const recording = (refuse?: (method: string) => Failed | undefined) => {
  const sent: Array<{ id: number; method: string; params: unknown; route: string | undefined }> = []
  const cancelled: Array<{ id: number; reason: string; route: string | undefined }> = []
  const requests = new Requests<Failed, string>(
    {
      send: (id, method, params, route) => {
        const refused = refuse?.(method)
        if (refused === undefined) sent.push({ id, method, params, route })
        return refused
      },
      cancelled: (id, _method, reason, route) => void cancelled.push({ id, reason, route }),
      timedOut: (method, ms) => new Failed(`${method} timed out after ${ms} ms`),
      failed: (method, error) => new Failed(`${method}: ${(error as { message: string }).message}`),
      full: (method, limit) => new Failed(`${method}: ${limit} wait`)
    },
    { limit: 3, interruptedReason: "caller left" }
  )
  return { requests, sent, cancelled }
}

describe("Requests", () => {
  it.live("a reply settles its request once: a second reply to the same id finds nothing", () =>
    Effect.gen(function* () {
      const { requests, sent } = recording()
      const fiber = yield* Effect.forkChild(requests.request("tools/list", { a: 1 }))
      yield* Effect.yieldNow
      expect(sent).toEqual([{ id: 1, method: "tools/list", params: { a: 1 }, route: undefined }])
      expect(requests.settle(1, { result: { tools: [] } })).toBe(true)
      expect(requests.settle(1, { result: "again" })).toBe(false)
      expect(yield* Fiber.join(fiber)).toEqual({ tools: [] })
      expect(requests.size).toBe(0)
    })
  )

  it.live("an error reply fails the caller in the owner's words; ids are never reused", () =>
    Effect.gen(function* () {
      const { requests, sent } = recording()
      const a = yield* Effect.forkChild(requests.request("a", undefined))
      const b = yield* Effect.forkChild(requests.request("b", undefined))
      yield* Effect.yieldNow
      expect(sent.map((s) => s.id)).toEqual([1, 2])
      requests.settle(2, { error: { code: -1, message: "no" } })
      requests.settle(1, { result: 1 })
      expect(yield* Fiber.join(a)).toBe(1)
      expect(yield* Fiber.await(b)).toEqual(Exit.fail(new Failed("b: no")))
      expect(requests.takeId()).toBe(3)
    })
  )

  it.live("a timeout fails the request and tells the peer; the late reply is then no one's", () =>
    Effect.gen(function* () {
      const { requests, cancelled } = recording()
      const exit = yield* Effect.exit(requests.request("slow", undefined, 20))
      expect(exit).toEqual(Exit.fail(new Failed("slow timed out after 20 ms")))
      expect(cancelled).toEqual([{ id: 1, reason: "timed out after 20 ms", route: undefined }])
      expect(requests.timedOutAt).toBeGreaterThan(0)
      expect(requests.settle(1, { result: "late" })).toBe(false)
    })
  )

  it.live("a caller that goes away cancels its request on the route it chose, once", () =>
    Effect.gen(function* () {
      const { requests, cancelled } = recording()
      const fiber = yield* Effect.forkChild(requests.request("ask", undefined, undefined, false, "post-7"))
      yield* Effect.yieldNow
      yield* Fiber.interrupt(fiber)
      expect(cancelled).toEqual([{ id: 1, reason: "caller left", route: "post-7" }])
      expect(requests.settle(1, { result: "late" })).toBe(false)
      expect(cancelled).toHaveLength(1)
    })
  )

  it.live("a refused send fails at once and leaves nothing pending; the bound refuses the next", () =>
    Effect.gen(function* () {
      const { requests } = recording((method) => (method === "bad" ? new Failed("not sent") : undefined))
      expect(yield* Effect.exit(requests.request("bad", undefined))).toEqual(Exit.fail(new Failed("not sent")))
      expect(requests.size).toBe(0)
      const waiting = yield* Effect.forEach([1, 2, 3], () => Effect.forkChild(requests.request("w", undefined)))
      yield* Effect.yieldNow
      expect(requests.size).toBe(3)
      expect(yield* Effect.exit(requests.request("w4", undefined))).toEqual(Exit.fail(new Failed("w4: 3 wait")))
      requests.failAll((method) => new Failed(`${method}: peer gone`))
      for (const fiber of waiting) expect(yield* Fiber.await(fiber)).toEqual(Exit.fail(new Failed("w: peer gone")))
      expect(requests.size).toBe(0)
    })
  )

  it.live("an ordered request's outcome waits until the notifications before its reply were relayed", () =>
    Effect.gen(function* () {
      const { requests } = recording()
      const ordered = yield* Effect.forkChild(requests.request("call", undefined, undefined, true))
      const plain = yield* Effect.forkChild(requests.request("other", undefined))
      yield* Effect.yieldNow
      requests.noteNotification()
      requests.noteNotification()
      requests.settle(1, { result: "ordered" })
      requests.settle(2, { result: "plain" })
      expect(yield* Fiber.join(plain)).toBe("plain")
      requests.markRelayed()
      yield* Effect.sleep(5)
      expect(ordered.pollUnsafe()).toBeUndefined()
      requests.markRelayed()
      expect(yield* Fiber.join(ordered)).toBe("ordered")
    })
  )

  it.live("a stopped relay releases what waits on it; a reply too large for its frame fails only its own request", () =>
    Effect.gen(function* () {
      const { requests } = recording()
      const ordered = yield* Effect.forkChild(requests.request("call", undefined, undefined, true))
      const other = yield* Effect.forkChild(requests.request("other", undefined))
      yield* Effect.yieldNow
      requests.noteNotification()
      requests.settle(1, { result: "done" })
      requests.stopRelay()
      expect(yield* Fiber.join(ordered)).toBe("done")
      expect(requests.sole()).toBe(2)
      expect(requests.fail(2, (method) => new Failed(`${method}: too large`))).toBe(true)
      expect(yield* Fiber.await(other)).toEqual(Exit.fail(new Failed("other: too large")))
    })
  )
})
