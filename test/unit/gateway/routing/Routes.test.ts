/**
 * The routing tables in process: progress tokens of both kinds never cross, a subscription is
 * passed on for its first holder and released with its last, a URL elicitation's session is
 * found once, and a session stays busy on a backend while any of its calls runs there.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_TASKS_PER_SESSION, Routes } from "../../../../src/gateway/routing/Routes.js"
import { Session } from "../../../../src/gateway/session/Session.js"
import type { RequestContext } from "../../../../src/jsonrpc/Peer.js"
import { EDGE as HTTP_EDGE } from "../../../../src/gateway/clients/SharedSessions.js"

const session = (id: string) => new Session({ id, edge: HTTP_EDGE, send: () => false })
const context = (id: number): RequestContext => ({ id, notify: () => Effect.void, notifyUnsafe: () => {}, send: () => false })

describe("Routes", () => {
  it.effect("progress tokens: each kind finds only its own route, and a closed token nothing", () =>
    Effect.gen(function* () {
      const routes = yield* Routes
      const a = session("a")
      const call = routes.openClientCall({ backendId: "fx", context: context(1), token: "client-token" })
      const ask = routes.openBackendAsk({ session: a, backendId: "fx", token: 7 })
      expect(call).not.toBe(ask)
      expect(routes.clientCall(call)?.token).toBe("client-token")
      expect(routes.backendAsk(call)).toBeUndefined()
      expect(routes.backendAsk(ask)?.session).toBe(a)
      expect(routes.clientCall(ask)).toBeUndefined()
      routes.close(call)
      expect(routes.clientCall(call)).toBeUndefined()
    }).pipe(Effect.provide(Routes.layer))
  )

  it.effect("subscriptions: the first holder subscribes, the last one out unsubscribes, a closed session releases its own", () =>
    Effect.gen(function* () {
      const routes = yield* Routes
      const [a, b] = [session("a"), session("b")]
      expect(routes.held("fx", "file:///x")).toBe(false)
      expect(routes.subscribe(a, "fx", "file:///x")).toBe(true)
      expect(routes.subscribe(b, "fx", "file:///x")).toBe(false)
      expect(routes.subscribe(b, "fx", "file:///y")).toBe(true)
      expect([...routes.holders("fx", "file:///x")]).toEqual([a, b])
      expect(routes.unsubscribe(a, "fx", "file:///x")).toBe(false)
      expect([...routes.subscribedOn("fx")].sort()).toEqual(["file:///x", "file:///y"])
      expect(routes.dropSession(b)).toEqual([
        { backendId: "fx", uri: "file:///x" },
        { backendId: "fx", uri: "file:///y" }
      ])
      expect(routes.subscribedOn("fx")).toEqual([])
    }).pipe(Effect.provide(Routes.layer))
  )

  it.effect("a URL elicitation's session is found once; calls in flight keep a session busy until the last ends", () =>
    Effect.gen(function* () {
      const routes = yield* Routes
      const a = session("a")
      routes.elicited("e1", a)
      expect(routes.takeElicitation("e1")).toBe(a)
      expect(routes.takeElicitation("e1")).toBeUndefined()
      const first = routes.track(a, "fx", context(1))
      const second = routes.track(a, "fx", context(2))
      expect(routes.busyOn("fx")).toEqual([a])
      expect(routes.callOf(a, "fx")?.id).toBe(1)
      first()
      expect(routes.busyOn("fx")).toEqual([a])
      expect(routes.callOf(a, "fx")?.id).toBe(2)
      // Another session's calls are its own.
      const b = session("b")
      const third = routes.track(b, "fx", context(3))
      expect(routes.busyOn("fx")).toEqual([a, b])
      expect(routes.callOf(b, "fx")?.id).toBe(3)
      second()
      expect(routes.busyOn("fx")).toEqual([b])
      expect(routes.callOf(a, "fx")).toBeUndefined()
      // Untracking twice changes nothing.
      second()
      third()
      expect(routes.busyOn("fx")).toEqual([])
      expect(routes.callOf(b, "fx")).toBeUndefined()
      expect(routes.busyOn("other")).toEqual([])
    }).pipe(Effect.provide(Routes.layer))
  )

  it.effect("tasks: an id is its owner's only, found again by the backend's own id, bounded per owner and by its ttl", () =>
    Effect.gen(function* () {
      const routes = yield* Routes
      const [alice, bob] = [{ key: "subject:alice" }, { key: "subject:bob" }]
      const task = routes.adoptTask(alice, "jobs", "backend-1", 60_000)
      expect(task.id).toMatch(/^jobs\.[A-Za-z0-9_-]{22}$/)
      expect(routes.adoptTask(alice, "jobs", "backend-2", 60_000).id).not.toBe(task.id)
      expect(routes.task(alice, task.id)).toBe(task)
      expect(routes.task(bob, task.id)).toBeUndefined()
      expect(routes.task(alice, "jobs.backend-1")).toBeUndefined()
      expect(routes.taskOf("jobs", "backend-1")).toBe(task)
      expect(routes.tasksOf(bob)).toEqual([])
      // Past its ttl it is nobody's.
      const brief = routes.adoptTask(alice, "jobs", "backend-3", -1)
      expect(routes.task(alice, brief.id)).toBeUndefined()
      expect(routes.tasksOf(alice).map((t) => t.backendTaskId)).toEqual(["backend-1", "backend-2"])
      // The oldest goes past the bound.
      for (let i = 0; i < MAX_TASKS_PER_SESSION; i++) routes.adoptTask(bob, "jobs", `b${i}`, 60_000)
      routes.adoptTask(bob, "jobs", "one-more", 60_000)
      expect(routes.tasksOf(bob)).toHaveLength(MAX_TASKS_PER_SESSION)
      expect(routes.taskOf("jobs", "b0")).toBeUndefined()
      routes.forgetTasks(alice)
      expect(routes.task(alice, task.id)).toBeUndefined()
      expect(routes.tasksOf(bob)).toHaveLength(MAX_TASKS_PER_SESSION)
    }).pipe(Effect.provide(Routes.layer))
  )

  it.effect(
    "a task forgotten while its backend may run it (ttl, cap, the owner gone) is evicted; one its backend dropped is not",
    () =>
      Effect.gen(function* () {
        const routes = yield* Routes
        const evicted: Array<string> = []
        routes.onEvicted((route) => evicted.push(route.backendTaskId))
        const [alice, bob] = [{ key: "subject:alice" }, { key: "subject:bob" }]
        const brief = routes.adoptTask(alice, "jobs", "expired", -1)
        expect(routes.task(alice, brief.id)).toBeUndefined()
        for (let i = 0; i <= MAX_TASKS_PER_SESSION; i++) routes.adoptTask(bob, "jobs", `b${i}`, 60_000)
        const gone = routes.adoptTask(alice, "jobs", "dropped-by-backend", 60_000)
        routes.forgetTask(gone)
        routes.adoptTask(alice, "jobs", "owner-gone", 60_000)
        routes.forgetTasks(alice)
        expect(evicted).toEqual(["expired", "b0", "owner-gone"])
      }).pipe(Effect.provide(Routes.layer))
  )
})
