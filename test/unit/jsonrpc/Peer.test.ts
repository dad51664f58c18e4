/**
 * The JSON-RPC server side in process, with no transport: what every transport relies on. Each
 * request gets exactly one reply with its id unchanged, a notification none, a bad message never
 * stops the ones after it, and cancellation still replies.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import * as Peer from "../../../src/jsonrpc/Peer.js"
import { MethodNotFound } from "../../../src/protocol/Errors.js"

/** A peer over `handlers`, and everything it sent. */
const peerWith = (handlers: Peer.Handlers<never>) =>
  Effect.gen(function* () {
    const sent: Array<any> = []
    const peer = yield* Peer.make(handlers, { sessionId: "unit" })
    const out: Peer.Outbox = { send: (message) => void sent.push(message) }
    return { peer, sent, out }
  })

const repliesTo = (sent: ReadonlyArray<any>, id: unknown) =>
  sent.filter((m) => "id" in m && m.id === id && ("result" in m || "error" in m))

const until = (check: () => boolean) =>
  Effect.gen(function* () {
    for (let i = 0; i < 200 && !check(); i++) yield* Effect.sleep(5)
    expect(check()).toBe(true)
  })

describe("Peer", () => {
  it.live("answers each request once with its id unchanged (numbers and strings); a notification gets nothing", () =>
    Effect.gen(function* () {
      const notified: Array<string> = []
      const { peer, sent, out } = yield* peerWith({
        request: (request) => Effect.succeed({ echo: request.method }),
        notification: (n) => Effect.sync(() => void notified.push(n.method))
      })
      peer.receive('{"jsonrpc":"2.0","id":7,"method":"a"}', out)
      peer.receive('{"jsonrpc":"2.0","id":"x-7","method":"b"}', out)
      peer.receive('{"jsonrpc":"2.0","method":"note"}', out)
      yield* until(() => sent.length === 2 && notified.length === 1)
      expect(repliesTo(sent, 7)).toEqual([{ jsonrpc: "2.0", id: 7, result: { echo: "a" } }])
      expect(repliesTo(sent, "x-7")).toEqual([{ jsonrpc: "2.0", id: "x-7", result: { echo: "b" } }])
      yield* Effect.sleep(20)
      expect(sent).toHaveLength(2)
    })
  )

  it.live("a bad line gets -32700 with id null and the next request is served; a failure and a defect are replies too", () =>
    Effect.gen(function* () {
      const { peer, sent, out } = yield* peerWith({
        request: (request) =>
          request.method === "fail"
            ? Effect.fail(new MethodNotFound({ message: "Method not found: fail" }))
            : request.method === "boom"
              ? Effect.die(new Error("a bug"))
              : Effect.succeed("ok"),
        notification: () => Effect.void
      })
      peer.receive("{not json", out)
      peer.receive('{"jsonrpc":"2.0","id":1,"method":"fail"}', out)
      peer.receive('{"jsonrpc":"2.0","id":2,"method":"boom"}', out)
      peer.receive('{"jsonrpc":"2.0","id":3,"method":"fine"}', out)
      yield* until(() => sent.length === 4)
      expect(sent.find((m) => m.id === null)).toMatchObject({ error: { code: -32700 } })
      expect(repliesTo(sent, 1)).toEqual([{ jsonrpc: "2.0", id: 1, error: { code: -32601, message: "Method not found: fail" } }])
      expect(repliesTo(sent, 2)[0].error.code).toBe(-32603)
      expect(repliesTo(sent, 3)).toEqual([{ jsonrpc: "2.0", id: 3, result: "ok" }])
    })
  )

  it.live("a batch is answered as one array of its requests' replies; an empty batch is -32600", () =>
    Effect.gen(function* () {
      const { peer, sent, out } = yield* peerWith({
        request: (request) => Effect.succeed(request.id),
        notification: () => Effect.void
      })
      peer.receive(
        '[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"b","method":"b"}]',
        out
      )
      peer.receive("[]", out)
      yield* until(() => sent.length === 2)
      const batch = sent.find(Array.isArray)
      expect(batch).toEqual([
        { jsonrpc: "2.0", id: 1, result: 1 },
        { jsonrpc: "2.0", id: "b", result: "b" }
      ])
      expect(sent.find((m) => !Array.isArray(m))).toMatchObject({ id: null, error: { code: -32600 } })
    })
  )

  it.live("notifications/cancelled interrupts the request, which still gets its one reply (-32800)", () =>
    Effect.gen(function* () {
      const interrupted = yield* Deferred.make<void>()
      const { peer, sent, out } = yield* peerWith({
        request: () => Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))),
        notification: () => Effect.void
      })
      peer.receive('{"jsonrpc":"2.0","id":"long","method":"wait"}', out)
      expect(peer.inFlight()).toBe(1)
      peer.receive('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long"}}', out)
      yield* Deferred.await(interrupted)
      yield* until(() => sent.length === 1)
      expect(repliesTo(sent, "long")).toEqual([
        { jsonrpc: "2.0", id: "long", error: { code: -32800, message: "Request cancelled" } }
      ])
      expect(peer.inFlight()).toBe(0)
    })
  )

  it.live("drain waits for requests in flight, then cancels the rest, each still answered", () =>
    Effect.gen(function* () {
      const { peer, sent, out } = yield* peerWith({
        request: (request) => (request.method === "quick" ? Effect.as(Effect.sleep(20), "done") : Effect.never),
        notification: () => Effect.void
      })
      peer.receive('{"jsonrpc":"2.0","id":1,"method":"quick"}', out)
      peer.receive('{"jsonrpc":"2.0","id":2,"method":"stuck"}', out)
      yield* peer.drain(200)
      expect(repliesTo(sent, 1)).toEqual([{ jsonrpc: "2.0", id: 1, result: "done" }])
      expect(repliesTo(sent, 2)).toMatchObject([{ error: { code: -32800 } }])
    })
  )

  it.live("an id still in flight is refused with -32600 naming it; the first request keeps its one reply", () =>
    Effect.gen(function* () {
      const release = yield* Deferred.make<void>()
      const { peer, sent, out } = yield* peerWith({
        request: (request) =>
          request.method === "slow" ? Effect.as(Deferred.await(release), "first") : Effect.succeed("second"),
        notification: () => Effect.void
      })
      peer.receive('{"jsonrpc":"2.0","id":4,"method":"slow"}', out)
      peer.receive('{"jsonrpc":"2.0","id":4,"method":"quick"}', out)
      expect(repliesTo(sent, 4)).toEqual([
        { jsonrpc: "2.0", id: 4, error: { code: -32600, message: "Invalid Request: id 4 is already in use" } }
      ])
      yield* Deferred.succeed(release, undefined)
      yield* until(() => sent.length === 2)
      expect(repliesTo(sent, 4)[1]).toEqual({ jsonrpc: "2.0", id: 4, result: "first" })
    })
  )
})
