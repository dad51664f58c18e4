/**
 * The routing tables in process: progress tokens of both kinds never cross, a subscription is
 * passed on for its first holder and released with its last, a URL elicitation's session is
 * found once, and a session stays busy on a backend while any of its calls runs there.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Routes } from "../../../src/gateway/Routes.js"
import { Session } from "../../../src/gateway/Session.js"
import type { RequestContext } from "../../../src/jsonrpc/Peer.js"

const session = (id: string) => new Session({ id, transport: "http", send: () => false })
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
      first()
      expect(routes.busyOn("fx")).toEqual([a])
      expect(a.callOn("fx")?.id).toBe(2)
      second()
      expect(routes.busyOn("fx")).toEqual([])
      expect(routes.busyOn("other")).toEqual([])
    }).pipe(Effect.provide(Routes.layer))
  )
})
