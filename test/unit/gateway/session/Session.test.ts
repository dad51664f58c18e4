/**
 * One client's session in process: the gateway's requests to the client (sent on the stream of the
 * call that made them, else the session's own; answered, refused, cancelled where they went, failed
 * when the session ends), the levels of log messages it receives, and its calls in flight.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { changed, INITIAL_STATE, nextPhase, type Phase, servedState, Session } from "../../../../src/gateway/session/Session.js"
import type { RequestContext } from "../../../../src/jsonrpc/Peer.js"
import { Relayed, sentCode } from "../../../../src/protocol/Errors.js"
import { EDGE as HTTP_EDGE } from "../../../../src/gateway/clients/SharedSessions.js"

const first = () => ({ protocolVersion: "2025-11-25", clientInfo: { name: "a" }, capabilities: { sampling: {} } })

const sessionWith = (open = true) => {
  const sent: Array<any> = []
  const session = new Session({ id: "s1", edge: HTTP_EDGE, send: (m) => (open ? (sent.push(m), true) : false) })
  return { session, sent }
}

/** A call's own stream (over HTTP: its POST's SSE). */
const stream = (accepting = true) => {
  const sent: Array<any> = []
  const context: RequestContext = {
    id: 9,
    notify: () => Effect.void,
    notifyUnsafe: () => {},
    send: (m) => (accepting ? (sent.push(m), true) : false)
  }
  return { context, sent }
}

describe("Session", () => {
  it.live("a request goes on the call's stream when it takes it, and its answer comes back through resolve", () =>
    Effect.gen(function* () {
      const { session, sent } = sessionWith()
      const call = stream()
      const asked = yield* Effect.forkChild(session.request("roots/list", {}, call.context))
      yield* Effect.yieldNow
      expect(sent).toEqual([])
      expect(call.sent).toEqual([{ jsonrpc: "2.0", id: 1, method: "roots/list", params: {} }])
      expect(session.resolve(1, { result: { roots: [] } })).toBe(true)
      expect(session.resolve(1, { result: "twice" })).toBe(false)
      expect(yield* Fiber.join(asked)).toEqual({ roots: [] })
    })
  )

  it.live("without a call's stream it goes on the session's own; the client's error comes back as it sent it", () =>
    Effect.gen(function* () {
      const { session, sent } = sessionWith()
      const closed = stream(false)
      const asked = yield* Effect.forkChild(session.request("sampling/createMessage", { x: 1 }, closed.context))
      yield* Effect.yieldNow
      expect(sent.map((m) => m.method)).toEqual(["sampling/createMessage"])
      session.resolve(sent[0].id, { error: { code: -1, message: "User rejected sampling request", data: { why: "no" } } })
      expect(yield* Fiber.await(asked)).toEqual(
        Exit.fail(
          new Relayed({ from: "client", code: sentCode(-1), message: "User rejected sampling request", data: { why: "no" } })
        )
      )
    })
  )

  it.live("nowhere to send it: a clear refusal, and nothing left waiting", () =>
    Effect.gen(function* () {
      const { session } = sessionWith(false)
      const exit = yield* Effect.exit(session.request("roots/list", {}))
      expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toContain("has no stream open to receive requests")
      session.advance("shutdown")
      const late = yield* Effect.exit(session.request("roots/list", {}))
      expect(JSON.stringify(late)).toContain("the client session s1 is shutting down")
    })
  )

  it.live("a wait given up is cancelled on the stream the request went on", () =>
    Effect.gen(function* () {
      const { session, sent } = sessionWith()
      const call = stream()
      const asked = yield* Effect.forkChild(session.request("elicitation/create", {}, call.context))
      yield* Effect.yieldNow
      yield* Fiber.interrupt(asked)
      expect(call.sent.map((m) => m.method)).toEqual(["elicitation/create", "notifications/cancelled"])
      expect(call.sent[1].params).toEqual({ requestId: 1, reason: "the backend cancelled its request" })
      expect(sent).toEqual([])
      expect(session.resolve(1, { result: {} })).toBe(false)
    })
  )

  it.live("at most 256 requests wait on one client; the session's end fails every one of them", () =>
    Effect.gen(function* () {
      const { session } = sessionWith()
      const waiting = yield* Effect.forEach(Array.from({ length: 256 }), () =>
        Effect.forkChild(session.request("roots/list", {}))
      )
      yield* Effect.yieldNow
      const over = yield* Effect.exit(session.request("roots/list", {}))
      expect(JSON.stringify(over)).toContain("256 requests already wait for the client session's answers")
      session.failPending()
      const exits = yield* Effect.forEach(waiting, Fiber.await)
      expect(exits.every((e) => JSON.stringify(e).includes("the client session ended before answering roots/list"))).toBe(true)
    })
  )

  it("log levels: every one until the client sets one, then that and more severe; unknown levels pass", () => {
    const { session } = sessionWith()
    expect(session.admits("debug")).toBe(true)
    session.setLogLevel("warning")
    expect(["debug", "info", "notice", "warning", "error"].map((l) => session.admits(l))).toEqual([
      false,
      false,
      false,
      true,
      true
    ])
    expect(session.admits("verbose")).toBe(true)
    session.setLogLevel("none")
    expect(session.admits("emergency")).toBe(false)
  })

  it("the lifecycle as data: initialize once, back to new when it fails, shutdown final from anywhere", () => {
    const phases: ReadonlyArray<Phase> = ["new", "initializing", "ready", "shutdown"]
    const table = Object.fromEntries(
      (["initialize", "initialized", "initializeFailed", "shutdown"] as const).map((event) => [
        event,
        Object.fromEntries(phases.map((phase) => [phase, nextPhase(phase, event) ?? "-"]))
      ])
    )
    expect(table).toEqual({
      initialize: { new: "initializing", initializing: "-", ready: "-", shutdown: "-" },
      initialized: { new: "-", initializing: "ready", ready: "-", shutdown: "-" },
      initializeFailed: { new: "-", initializing: "new", ready: "-", shutdown: "-" },
      shutdown: { new: "shutdown", initializing: "shutdown", ready: "shutdown", shutdown: "shutdown" }
    })
    const { session } = sessionWith(false)
    expect(session.advance("initialized")).toBe(false)
    expect(session.phase).toBe("new")
    expect(session.advance("initialize")).toBe(true)
    expect(session.advance("initialize")).toBe(false)
    expect(session.advance("shutdown")).toBe(true)
    expect(session.advance("initialized")).toBe(false)
    expect(session.phase).toBe("shutdown")
  })

  it("what the client said of itself is one value, set before the session is ready and not after", () => {
    const { session } = sessionWith(false)
    const first = { protocolVersion: "2025-11-25", clientInfo: { name: "a" }, capabilities: { sampling: {} } }
    expect(session.describe(first)).toBe(true)
    expect(session.advance("initialize")).toBe(true)
    expect(session.advance("initialized")).toBe(true)
    expect(session.describe({ protocolVersion: "2025-06-18", clientInfo: { name: "b" }, capabilities: {} })).toBe(false)
    expect(session.client).toBe(first)
    expect(session.clientCapabilities).toEqual({ sampling: {} })
    expect(session.protocolVersion).toBe("2025-11-25")
  })

  it("the state is a value: a change replaces it whole, and a refused change leaves it as it was", () => {
    const { session } = sessionWith(false)
    const before = session.state
    expect(before).toBe(INITIAL_STATE)
    expect(session.advance("initialize")).toBe(true)
    expect(before).toEqual({ phase: "new", client: before.client, logLevel: undefined })
    expect(session.state).not.toBe(before)
    const initializing = session.state
    expect(session.change({ _tag: "Lifecycle", event: "initializeFailed" })).toBe(true)
    expect(initializing.phase).toBe("initializing")
    const shut = changed(session.state, { _tag: "Lifecycle", event: "shutdown" })
    expect(shut?.phase).toBe("shutdown")
    // Only computed: the session is where it was.
    expect(session.phase).toBe("new")
    expect(changed(shut!, { _tag: "Describe", client: first() })).toBeUndefined()
    // A 2026-07-28 request's session starts ready, as its _meta describes its client.
    const served = new Session({
      id: "s",
      edge: HTTP_EDGE,
      send: () => false,
      state: servedState(first(), "none")
    })
    expect(served.phase).toBe("ready")
    expect(served.clientCapabilities).toEqual({ sampling: {} })
    expect(served.admits("emergency")).toBe(false)
  })
})
