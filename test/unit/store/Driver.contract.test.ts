/**
 * What every store driver guarantees (see src/store/Driver.ts), asked of each the same way: the one
 * in this process (two drivers on one MemoryServer) and Redis (two drivers on a real redis-server,
 * skipped only where none is installed outside CI). Each test has a store of its own and two
 * replicas, "a" and "b", on it (or "gw1" and "gw10": an id that begins another's owns nothing of it).
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Option, PubSub, type Scope } from "effect"
import { StoreDriver, type StoreDriverService } from "../../../src/store/Driver.js"
import { layerLocal, MemoryServer } from "../../../src/store/local/Driver.js"
import * as RedisDriver from "../../../src/store/redis/Driver.js"
import { REDIS_SERVER, startRedis } from "../../support/redis.js"

const SKIP_REDIS = REDIS_SERVER === undefined && process.env.CI !== "true"

/** A store of the test's own: a replica's driver on it, for `leaseMs`. */
type Store = (replicaId: string, leaseMs?: number) => Layer.Layer<StoreDriver>

interface Kind {
  readonly name: string
  readonly skip: boolean
  readonly store: Effect.Effect<Store, never, Scope.Scope>
}

const KINDS: ReadonlyArray<Kind> = [
  {
    name: "in this process",
    skip: false,
    store: Effect.sync(() => {
      const server = new MemoryServer()
      return (replicaId, leaseMs) => layerLocal({ server, replicaId, leaseMs })
    })
  },
  {
    name: "Redis",
    skip: SKIP_REDIS,
    store: Effect.map(
      Effect.acquireRelease(
        Effect.promise(() => startRedis()),
        (redis) => Effect.promise(() => redis.close())
      ),
      (redis) => (replicaId, leaseMs) => RedisDriver.layer({ url: redis.url, leaseMs }, replicaId)
    )
  }
]

/** A replica's driver, for the scope. */
const driverOf = (layer: Layer.Layer<StoreDriver>): Effect.Effect<StoreDriverService, never, Scope.Scope> =>
  Effect.map(Layer.build(layer), Context.get(StoreDriver))

/** Two replicas on one store, both listening (so that each is live to the other). */
const pair = (kind: Kind, leaseMs?: number) =>
  Effect.gen(function* () {
    const store = yield* kind.store
    const a = yield* driverOf(store("aaaaaaaaaaaa", leaseMs))
    const b = yield* driverOf(store("bbbbbbbbbbbb", leaseMs))
    yield* a.listeningAt("http://10.0.0.1:8080")
    yield* b.listeningAt("http://10.0.0.2:8080")
    return { store, a, b }
  })

const sleep = (ms: number) => Effect.sleep(Duration.millis(ms))
const within = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.timeout(effect, Duration.seconds(10))

/** Asks `check` every 50 ms until it holds, failing after 10 s: a time to live ends when it ends on a busy machine. */
const eventually = <E, R>(what: string, check: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function* () {
    const deadline = Date.now() + 10_000
    while (!(yield* check)) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`still not ${what} after 10 s`))
      yield* sleep(50)
    }
  })

/** Runs `look` every 100 ms until `until` (a time the test is about: a lease outlived, heartbeats gone by). */
const throughout = <E, R>(until: number, look: Effect.Effect<unknown, E, R>) =>
  Effect.gen(function* () {
    do {
      yield* look
      yield* sleep(100)
    } while (Date.now() < until)
    yield* look
  })

const leases = (kind: Kind) => {
  it.live("a lease is one replica's until it is released or its time runs out; renewing keeps it", () =>
    Effect.gen(function* () {
      const { a, b } = yield* pair(kind)
      expect(yield* a.leases.claim("job", 5_000)).toBe(true)
      expect(yield* b.leases.claim("job", 5_000)).toBe(false)
      // Claiming one's own again is taking it again.
      expect(yield* a.leases.claim("job", 5_000)).toBe(true)
      expect(yield* b.leases.holderOf("job")).toEqual(Option.some({ replicaId: "aaaaaaaaaaaa", address: "http://10.0.0.1:8080" }))
      expect(yield* b.leases.renew("job", 5_000)).toBe(false)
      // Released by another: left alone.
      yield* b.leases.release("job")
      expect(Option.map(yield* b.leases.holderOf("job"), (h) => h.replicaId)).toEqual(Option.some("aaaaaaaaaaaa"))

      // Renewed before it runs out, it stays past its first time; not renewed, it goes and another may take it.
      expect(yield* a.leases.claim("job", 1_000)).toBe(true)
      const renewedUntil = Date.now() + 1_500
      while (Date.now() < renewedUntil) {
        yield* sleep(100)
        expect(yield* a.leases.renew("job", 1_000)).toBe(true)
      }
      expect(yield* b.leases.claim("job", 1_000)).toBe(false)
      yield* eventually("expired", Effect.map(a.leases.holderOf("job"), Option.isNone))
      expect(yield* a.leases.renew("job", 300)).toBe(false)
      expect(yield* b.leases.claim("job", 5_000)).toBe(true)

      yield* b.leases.release("job")
      expect(yield* a.leases.holderOf("job")).toEqual(Option.none())
      expect(yield* a.leases.claim("job", 5_000)).toBe(true)
    }).pipe(Effect.scoped)
  )

  it.live("a replica whose id begins another's (gw1, gw10) cannot claim, renew, release or keep what the other holds", () =>
    Effect.gen(function* () {
      const store = yield* kind.store
      const gw1 = yield* driverOf(store("gw1"))
      const gw10 = yield* driverOf(store("gw10"))
      yield* gw10.listeningAt("http://10.0.0.10:8080")
      const heldByGw10 = Effect.map(
        gw1.leases.holderOf("job"),
        Option.map((h) => h.replicaId)
      )
      expect(yield* gw10.leases.claim("job", 5_000)).toBe(true)
      expect(yield* gw1.leases.claim("job", 5_000)).toBe(false)
      expect(yield* heldByGw10).toEqual(Option.some("gw10"))
      expect(yield* gw1.leases.renew("job", 5_000)).toBe(false)
      yield* gw1.leases.release("job")
      expect(yield* heldByGw10).toEqual(Option.some("gw10"))
      // Kept (claimed again at each heartbeat): still not taken from its holder.
      yield* gw1.leases.keep("job")
      expect(yield* heldByGw10).toEqual(Option.some("gw10"))
      // And the other way round.
      expect(yield* gw1.leases.claim("other", 5_000)).toBe(true)
      expect(yield* gw10.leases.claim("other", 5_000)).toBe(false)
      expect(yield* gw10.leases.renew("other", 5_000)).toBe(false)
    }).pipe(Effect.scoped)
  )

  it.live("a kept lease lives with its replica's heartbeat, and goes when the replica stops", () =>
    Effect.gen(function* () {
      const store = yield* kind.store
      // A heartbeat every third of the lease: a busy machine may hold one back for most of a lease.
      const leaseMs = 1_500
      const b = yield* driverOf(store("bbbbbbbbbbbb", leaseMs))
      const holder = Option.some({ replicaId: "aaaaaaaaaaaa", address: "http://10.0.0.1:8080" })
      yield* Effect.scoped(
        Effect.gen(function* () {
          const a = yield* driverOf(store("aaaaaaaaaaaa", leaseMs))
          yield* a.listeningAt("http://10.0.0.1:8080")
          const keptAt = Date.now()
          yield* a.leases.keep("session:1")
          // Held at every look for two leases' time: kept by the heartbeat past its first.
          yield* throughout(
            keptAt + 2 * leaseMs,
            Effect.map(b.leases.holderOf("session:1"), (h) => expect(h).toEqual(holder))
          )
          expect(yield* b.leases.claim("session:1", 5_000)).toBe(false)
          expect(yield* b.addressOf("aaaaaaaaaaaa")).toEqual(Option.some("http://10.0.0.1:8080"))
          // Released: no longer kept either (the heartbeats of a lease's time claim it not again).
          yield* a.leases.keep("session:2")
          yield* a.leases.release("session:2")
          yield* throughout(
            Date.now() + leaseMs,
            Effect.map(b.leases.holderOf("session:2"), (h) => expect(h).toEqual(Option.none()))
          )
        })
      )
      // The replica stopped: its kept leases and its address went at once.
      expect(yield* b.leases.holderOf("session:1")).toEqual(Option.none())
      expect(yield* b.addressOf("aaaaaaaaaaaa")).toEqual(Option.none())
      expect((yield* b.health).failing).toBeUndefined()
    }).pipe(Effect.scoped)
  )
}

const counters = (kind: Kind) => {
  it.live("a window's count refuses past its limit, atomically under concurrency, and counts again as it slides", () =>
    Effect.gen(function* () {
      const { a, b } = yield* pair(kind)
      const takes = yield* Effect.all(
        Array.from({ length: 50 }, (_, i) =>
          (i % 2 === 0 ? a : b).counters.take([{ key: "quota:fifty", perWindow: 10 }], 60_000)
        ),
        { concurrency: "unbounded" }
      )
      expect(takes.filter((t) => t._tag === "Taken")).toHaveLength(10)
      for (const refused of takes.filter((t) => t._tag === "Refused")) {
        expect(refused).toMatchObject({ index: 0, perWindow: true })
        expect(refused.retryAfterMs).toBeGreaterThan(0)
        expect(refused.retryAfterMs).toBeLessThanOrEqual(60_000)
      }

      const small = [{ key: "quota:small", perWindow: 2 }]
      expect((yield* a.counters.take(small, 2_000))._tag).toBe("Taken")
      expect((yield* b.counters.take(small, 2_000))._tag).toBe("Taken")
      expect((yield* a.counters.take(small, 2_000))._tag).toBe("Refused")
      // Counted again once the window slid past the first two.
      yield* eventually(
        "counted again",
        Effect.map(b.counters.take(small, 2_000), (t) => t._tag === "Taken")
      )
    }).pipe(Effect.scoped)
  )

  it.live("places at once are taken by exactly the limit, given back once each, and a take counts in all keys or none", () =>
    Effect.gen(function* () {
      const { a, b } = yield* pair(kind)
      const atOnce = [{ key: "quota:slow", atOnce: 3 }]
      const takes = yield* Effect.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).counters.take(atOnce, 60_000)),
        { concurrency: "unbounded" }
      )
      const taken = takes.flatMap((t) => (t._tag === "Taken" ? [t] : []))
      expect(taken).toHaveLength(3)
      expect(takes.find((t) => t._tag === "Refused")).toMatchObject({ index: 0, perWindow: false })
      // One given back (twice: once counts), one place is free again.
      yield* taken[0]!.release
      yield* taken[0]!.release
      expect((yield* b.counters.take(atOnce, 60_000))._tag).toBe("Taken")
      expect((yield* a.counters.take(atOnce, 60_000))._tag).toBe("Refused")

      // Refused by its second key: not counted in its first either.
      const both = [
        { key: "quota:minute", perWindow: 1 },
        { key: "quota:slow", atOnce: 3 }
      ]
      expect(yield* a.counters.take(both, 60_000)).toMatchObject({ _tag: "Refused", index: 1, perWindow: false })
      expect((yield* b.counters.take([{ key: "quota:minute", perWindow: 1 }], 60_000))._tag).toBe("Taken")
    }).pipe(Effect.scoped)
  )

  it.live("a replica's places at once count for nothing once it stopped", () =>
    Effect.gen(function* () {
      const store = yield* kind.store
      const b = yield* driverOf(store("bbbbbbbbbbbb"))
      yield* b.listeningAt("http://10.0.0.2:8080")
      const one = [{ key: "quota:one", atOnce: 1 }]
      yield* Effect.scoped(
        Effect.gen(function* () {
          const a = yield* driverOf(store("aaaaaaaaaaaa"))
          yield* a.listeningAt("http://10.0.0.1:8080")
          expect((yield* a.counters.take(one, 60_000))._tag).toBe("Taken")
          expect((yield* b.counters.take(one, 60_000))._tag).toBe("Refused")
        })
      )
      expect((yield* b.counters.take(one, 60_000))._tag).toBe("Taken")
    }).pipe(Effect.scoped)
  )
}

const filesAndValues = (kind: Kind) => {
  it.live("files are put, read, listed and removed (kept as a removal), each announced to the others and not to the writer", () =>
    Effect.gen(function* () {
      const { a, b } = yield* pair(kind)
      const heardByA = yield* a.blobs.announcements
      const heardByB = yield* b.blobs.announcements
      yield* a.blobs.put("pins", "fx", { text: '{"echo":1}', at: 1_000 })
      expect(yield* within(PubSub.take(heardByB))).toEqual({ kind: "pins", name: "fx" })
      expect(yield* b.blobs.get("pins", "fx")).toEqual(Option.some({ text: '{"echo":1}', at: 1_000 }))
      expect(yield* b.blobs.get("pins", "other")).toEqual(Option.none())
      expect(yield* b.blobs.get("tokens", "fx")).toEqual(Option.none())

      yield* b.blobs.put("pins", "crm/users/abc", { text: "b's", at: 2_000 })
      expect(yield* within(PubSub.take(heardByA))).toEqual({ kind: "pins", name: "crm/users/abc" })
      expect(yield* a.blobs.list("pins")).toEqual(
        new Map([
          ["fx", { text: '{"echo":1}', at: 1_000 }],
          ["crm/users/abc", { text: "b's", at: 2_000 }]
        ])
      )
      expect(yield* a.blobs.list("tokens")).toEqual(new Map())

      const before = Date.now()
      yield* a.blobs.remove("pins", "fx")
      expect(yield* within(PubSub.take(heardByB))).toEqual({ kind: "pins", name: "fx" })
      const removed = Option.getOrThrow(yield* b.blobs.get("pins", "fx"))
      expect(removed.text).toBe("")
      expect(removed.at).toBeGreaterThanOrEqual(before)

      // Neither heard its own.
      yield* sleep(200)
      expect(yield* PubSub.remaining(heardByA)).toBe(0)
      expect(yield* PubSub.remaining(heardByB)).toBe(0)
    }).pipe(Effect.scoped)
  )

  it.live("values live for their time, one of many setting where none is wins, and a group keeps its newest within bounds", () =>
    Effect.gen(function* () {
      const { a, b } = yield* pair(kind)
      yield* a.values.set("task:1", "one", 2_000)
      expect(yield* b.values.get("task:1")).toEqual(Option.some("one"))
      yield* eventually("expired", Effect.map(b.values.get("task:1"), Option.isNone))

      const asked = yield* Effect.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).values.setIfAbsent("secret:k", `v${i}`)),
        { concurrency: "unbounded" }
      )
      expect(asked.filter((answer) => answer.set)).toHaveLength(1)
      expect(new Set(asked.map((answer) => answer.value)).size).toBe(1)
      expect(yield* a.values.get("secret:k")).toEqual(Option.some(asked[0]!.value))

      expect(yield* a.values.setIfAbsent("turn:t", "a", 2_000)).toEqual({ set: true, value: "a" })
      expect(yield* b.values.setIfAbsent("turn:t", "b", 2_000)).toEqual({ set: false, value: "a" })
      // Once it ran out, another may set it.
      yield* eventually(
        "free again",
        Effect.map(b.values.setIfAbsent("turn:t", "b", 2_000), (answer) => answer.set)
      )
      expect(yield* a.values.get("turn:t")).toEqual(Option.some("b"))

      const group = { name: "tasks:alice", maxEntries: 3, maxBytes: 25 }
      for (let i = 0; i < 5; i++) {
        yield* (i % 2 === 0 ? a : b).values.set(`task:g${i}`, "12345", 60_000, group)
        yield* sleep(5)
      }
      const kept = []
      for (let i = 0; i < 5; i++) kept.push(Option.isSome(yield* a.values.get(`task:g${i}`)))
      expect(kept).toEqual([false, false, true, true, true])
      // Past its bytes: the oldest go, never the one that joined.
      yield* a.values.set("task:big", "x".repeat(20), 60_000, group)
      yield* sleep(5)
      yield* b.values.set("task:huge", "y".repeat(30), 60_000, group)
      const left = []
      for (const key of ["task:g3", "task:g4", "task:big", "task:huge"]) left.push(Option.isSome(yield* b.values.get(key)))
      expect(left).toEqual([false, false, false, true])
      // Another group is bounded apart.
      yield* a.values.set("task:other", "z", 60_000, { ...group, name: "tasks:bob" })
      expect(yield* b.values.get("task:huge")).toEqual(Option.some("y".repeat(30)))
    }).pipe(Effect.scoped)
  )
}

for (const kind of KINDS) {
  describe.skipIf(kind.skip)(`a store driver (${kind.name})`, () => {
    leases(kind)
    counters(kind)
    filesAndValues(kind)
  })
}

describe.skipIf(SKIP_REDIS)("a store driver (Redis) after it lost the store", () => {
  it.live(
    "says every file may have changed, for every kind",
    () =>
      Effect.gen(function* () {
        const redis = yield* Effect.acquireRelease(
          Effect.promise(() => startRedis()),
          (redis) => Effect.promise(() => redis.close())
        )
        const b = yield* driverOf(RedisDriver.layer({ url: redis.url }, "bbbbbbbbbbbb"))
        const heard = yield* b.blobs.announcements
        yield* Effect.promise(() => redis.restart())
        const said = []
        for (let i = 0; i < 4; i++) said.push(yield* within(PubSub.take(heard)))
        expect(said).toEqual(["tokens", "pins", "embeddings", "known"].map((kind) => ({ kind, name: "*" })))
      }).pipe(Effect.scoped),
    20_000
  )
})
