/**
 * What the gateway asks of clients for backends, in process, with its services given by layer:
 * a backend's request goes to the one session with a call in flight on that backend, and its
 * answer comes back; with two such sessions, none, or a client that did not declare what is
 * asked, the backend gets a clear refusal instead of a guess.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { Backends, type BackendsService } from "../../../../src/backend/Backends.js"
import { ClientAsk } from "../../../../src/gateway/clientRequests/ClientAsk.js"
import { Routes } from "../../../../src/gateway/routing/Routes.js"
import { Session } from "../../../../src/gateway/session/Session.js"
import { Sessions } from "../../../../src/gateway/session/Sessions.js"
import type { RequestContext } from "../../../../src/jsonrpc/Peer.js"
import { toRpcError } from "../../../../src/protocol/Errors.js"
import { EDGE as HTTP_EDGE } from "../../../../src/gateway/clients/SharedSessions.js"

// ClientAsk reads no backend for these requests: a backends service that is never called.
const NoBackends = Layer.succeed(Backends, {} as BackendsService)
const Live = ClientAsk.layer.pipe(Layer.provideMerge(Layer.mergeAll(Sessions.layerShared, Routes.layer, NoBackends)))

/** A ready client session that declared `capabilities`; what the gateway sends it is kept. */
const client = (id: string, capabilities: Record<string, unknown>) => {
  const sent: Array<{ id?: number; method?: string; params?: unknown }> = []
  const session = new Session({ id, edge: HTTP_EDGE, send: (message) => (sent.push(message as never), true) })
  session.describe({ protocolVersion: "2025-11-25", clientInfo: { name: id }, capabilities })
  session.advance("initialize")
  session.advance("initialized")
  session.markInitialized()
  return { session, sent }
}

const call = (id: number): RequestContext => ({ id, notify: () => Effect.void, notifyUnsafe: () => {}, send: () => false })
const sampling = { backendId: "fx", method: "sampling/createMessage", params: { messages: [] }, roots: [] }

describe("ClientAsk", () => {
  it.effect("a backend's request reaches the one session busy on that backend, and its answer goes back", () =>
    Effect.gen(function* () {
      const ask = yield* ClientAsk
      const sessions = yield* Sessions
      const routes = yield* Routes
      const idle = client("idle", { sampling: {} })
      const busy = client("busy", { sampling: {} })
      sessions.add(idle.session)
      sessions.add(busy.session)
      const done = routes.track(busy.session, "fx", call(1))
      const asked = yield* Effect.forkChild(ask.handle(sampling))
      for (let i = 0; i < 100 && busy.sent.length === 0; i++) yield* Effect.yieldNow
      expect(idle.sent).toEqual([])
      expect(busy.sent).toMatchObject([{ method: "sampling/createMessage" }])
      busy.session.resolve(busy.sent[0]!.id!, { result: { role: "assistant", content: { type: "text", text: "hi" } } })
      expect(yield* Fiber.join(asked)).toMatchObject({ content: { text: "hi" } })
      done()
    }).pipe(Effect.provide(Live))
  )

  it.effect("two sessions busy, none busy, or a client without the capability: a refusal that says why", () =>
    Effect.gen(function* () {
      const ask = yield* ClientAsk
      const sessions = yield* Sessions
      const routes = yield* Routes
      const refusal = (request: typeof sampling) => Effect.map(Effect.flip(ask.handle(request)), toRpcError)
      expect((yield* refusal(sampling)).message).toContain("no client session has a request in flight on backend 'fx'")
      const a = client("a", { sampling: {} })
      const b = client("b", {})
      sessions.add(a.session)
      sessions.add(b.session)
      const doneB = routes.track(b.session, "fx", call(1))
      expect(yield* refusal(sampling)).toMatchObject({ code: -32601, message: expect.stringContaining("sampling capability") })
      const doneA = routes.track(a.session, "fx", call(2))
      expect((yield* refusal(sampling)).message).toContain("2 client sessions have requests in flight")
      expect(a.sent).toEqual([])
      expect(b.sent).toEqual([])
      doneA()
      doneB()
      // Nobody to ask for roots: the backend's own configured ones.
      const roots = [{ uri: "file:///srv" }]
      expect(yield* ask.handle({ backendId: "fx", method: "roots/list", params: {}, roots })).toEqual({ roots })
      expect((yield* refusal({ ...sampling, method: "tools/list" })).code).toBe(-32601)
    }).pipe(Effect.provide(Live))
  )
})
