/**
 * Each user's lane to a perUser backend (backend/Lanes), with backends that are plain values: one
 * lane per user, reused; a lane that could not open is tried afresh; one that ended by itself is
 * opened again; closing a backend's lanes closes their connections; a missing sign-in says whose.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import type { Backend } from "../../../src/backend/Contract.js"
import * as Lanes from "../../../src/backend/Lanes.js"
import { BackendError } from "../../../src/protocol/Errors.js"

/** A lane's backend: answers with whose it is; `exit` ends it as a lost connection would. */
const fakeBackend = (subject: string, exit: Deferred.Deferred<void>) =>
  ({
    request: (method: string) => Effect.succeed({ method, subject }),
    exited: Deferred.await(exit).pipe(Effect.as({ code: null, signal: null, description: "lost" }))
  }) as unknown as Backend

const setUp = Effect.gen(function* () {
  const opened: Array<string> = []
  const closed: Array<string> = []
  const exits = new Map<string, Deferred.Deferred<void>>()
  const refuse = new Set<string>()
  const lanes = yield* Lanes.make((backendId, subject) =>
    Effect.gen(function* () {
      opened.push(subject)
      if (refuse.has(subject)) {
        return yield* new BackendError({
          backendId,
          reason: "call_failed",
          method: "initialize",
          summary: "HTTP 401",
          detail: { code: -32603, message: "needs auth", data: { httpStatus: 401, needsAuth: true } }
        })
      }
      const exit = yield* Deferred.make<void>()
      exits.set(subject, exit)
      yield* Effect.addFinalizer(() => Effect.sync(() => closed.push(subject)))
      return fakeBackend(subject, exit)
    })
  )
  return { lanes, opened, closed, exits, refuse }
})

describe("lanes", () => {
  it.effect("one lane per user, reused by their requests, each answering as its own user", () =>
    Effect.gen(function* () {
      const { lanes, opened } = yield* setUp
      expect(yield* lanes.request("crm", "alice", "tools/call", {})).toEqual({ method: "tools/call", subject: "alice" })
      expect(yield* lanes.request("crm", "bob", "tools/call", {})).toEqual({ method: "tools/call", subject: "bob" })
      yield* lanes.request("crm", "alice", "tools/call", {})
      expect(opened).toEqual(["alice", "bob"])
      expect(yield* lanes.users("crm")).toEqual(["alice", "bob"])
      expect(yield* lanes.users("other")).toEqual([])
    })
  )

  it.effect("a subject holding a NUL is its own user: never another's lane (the key is a structure, not a joined string)", () =>
    Effect.gen(function* () {
      const { lanes, opened } = yield* setUp
      yield* lanes.request("crm", "alice", "tools/call", {})
      const forged = yield* lanes.request("crm", "alice\u0000mallory", "tools/call", {})
      expect(forged).toEqual({ method: "tools/call", subject: "alice\u0000mallory" })
      expect(opened).toEqual(["alice", "alice\u0000mallory"])
      // A backend id that ends where another's subject begins is no other backend's lane either.
      yield* lanes.request("crm\u0000alice", "x", "tools/call", {})
      expect(yield* lanes.users("crm")).toEqual(["alice", "alice\u0000mallory"])
    })
  )

  it.effect("a lane that could not open says whose sign-in is missing, and is tried afresh by the next request", () =>
    Effect.gen(function* () {
      const { lanes, opened, refuse } = yield* setUp
      refuse.add("carol")
      const failed = yield* Effect.flip(lanes.request("crm", "carol", "tools/call", {}))
      expect(Lanes.signInNeededBy(failed)).toBe("carol")
      refuse.delete("carol")
      // The failure is forgotten by a fiber of its own: let it run.
      expect(yield* Effect.repeat(lanes.users("crm"), { until: (users) => users.length === 0, times: 1_000 })).toEqual([])
      expect(yield* lanes.request("crm", "carol", "tools/call", {})).toEqual({ method: "tools/call", subject: "carol" })
      expect(opened).toEqual(["carol", "carol"])
    })
  )

  it.effect("a lane that ended by itself is closed and opened again; an idle one closes after its time", () =>
    Effect.gen(function* () {
      const { lanes, opened, closed, exits } = yield* setUp
      yield* lanes.request("crm", "alice", "tools/call", {})
      yield* Deferred.succeed(exits.get("alice")!, undefined)
      expect(yield* Effect.repeat(lanes.users("crm"), { until: (users) => users.length === 0, times: 1_000 })).toEqual([])
      expect(closed).toEqual(["alice"])
      yield* lanes.request("crm", "alice", "tools/call", {})
      expect(opened).toEqual(["alice", "alice"])
      // Idle: open until LANE_IDLE_MS have passed with no request on it.
      yield* TestClock.adjust(Lanes.LANE_IDLE_MS - 1_000)
      expect(closed).toEqual(["alice"])
      yield* TestClock.adjust(2_000)
      expect(closed).toEqual(["alice", "alice"])
    })
  )

  it.effect("closing a backend's lanes closes each user's connection to it, and no other backend's", () =>
    Effect.gen(function* () {
      const { lanes, closed } = yield* setUp
      yield* lanes.request("crm", "alice", "tools/call", {})
      yield* lanes.request("crm", "bob", "tools/call", {})
      yield* lanes.request("wiki", "alice", "tools/call", {})
      const closing = yield* Effect.forkChild(lanes.close("crm"))
      yield* Fiber.join(closing)
      expect([...closed].sort()).toEqual(["alice", "bob"])
      expect(yield* lanes.users("wiki")).toEqual(["alice"])
    })
  )
})
