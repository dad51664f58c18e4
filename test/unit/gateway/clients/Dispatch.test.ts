/**
 * The stateless era's dispatcher in process, no transport in front: a 2026-07-28 request checked
 * (its version and `_meta`) and served with exactly one reply, `server/discover`, cancellation by
 * id (the backend hears of it), the gateway stopping (each request still replied to), and two
 * clients that pick the same id served side by side.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Deferred, Effect, Result, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Backends } from "../../../../src/backend/Backends.js"
import { GatewayConfig } from "../../../../src/config/Config.js"
import * as Dispatch from "../../../../src/gateway/clients/Dispatch.js"
import * as Gateway from "../../../../src/gateway/Gateway.js"
import type { Request, Response } from "../../../../src/jsonrpc/JsonRpc.js"
import { LlmClient } from "../../../../src/orchestration/model/Llm.js"
import { firstText, fixtureBackend } from "../../../support/mcpFixture.js"
import { EDGE as HTTP_EDGE } from "../../../../src/gateway/clients/SharedSessions.js"

const Live = Gateway.layerShared.pipe(
  Layer.provide(LlmClient.layerScripted([])),
  Layer.provideMerge(GatewayConfig.layerFromOptions({ backends: [fixtureBackend("fx")] }, {}))
)

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "unit", version: "1" }
}

const aggregate = { _tag: "Aggregate" } as const

/** A dispatcher on the shared gateway, and a way to serve one request and wait for its one reply. */
const dispatcher = Effect.gen(function* () {
  const gateway = yield* Gateway.Gateway
  const backends = yield* Backends
  const dispatch = yield* Dispatch.make(gateway, backends, { edge: HTTP_EDGE, listenRefusal: () => undefined })
  /** Serves `request`; resolves with every reply it got (exactly one is expected). */
  const serve = (request: Request) =>
    Effect.gen(function* () {
      const replies: Array<Response> = []
      const done = yield* Deferred.make<void>()
      const context = Result.getOrThrow(dispatch.admit(request, null))
      dispatch.serve(request, context, aggregate, {
        send: (message) => {
          if (typeof message === "object" && message !== null && ("result" in message || "error" in message)) {
            replies.push(message as Response)
            Deferred.doneUnsafe(done, Effect.void)
          }
        }
      })
      return { replies, replied: Deferred.await(done) }
    })
  return { dispatch, serve }
})

describe("Dispatch", () => {
  layer(Live, { timeout: 30_000 })("the 2026-07-28 era, in process", (it) => {
    it.effect("a request is checked, then served with one reply; server/discover says what the gateway offers", () =>
      Effect.gen(function* () {
        const { dispatch, serve } = yield* dispatcher
        const bare: Request = { id: 1, method: "tools/list", params: {} }
        const dressed: Request = { id: 2, method: "tools/list", params: { _meta: META } }
        // stdio has no header (null); over HTTP it is required and must agree with _meta.
        const refusal = (request: Request, header: string | undefined | null) => Result.flip(dispatch.admit(request, header))
        expect(refusal(bare, null)).toMatchObject(Result.succeed({ status: 400, response: { error: { code: -32602 } } }))
        expect(refusal(dressed, undefined)).toMatchObject(Result.succeed({ response: { error: { code: -32020 } } }))
        expect(refusal(dressed, "2025-11-25")).toMatchObject(Result.succeed({ response: { error: { code: -32020 } } }))
        // Admitted: its context is what the request's _meta says of its client.
        expect(dispatch.admit(dressed, "2026-07-28")).toEqual(
          Result.succeed({
            protocolVersion: "2026-07-28",
            clientCapabilities: {},
            clientInfo: { name: "unit", version: "1" },
            logLevel: "none"
          })
        )
        expect(Result.isSuccess(dispatch.admit(dressed, null))).toBe(true)

        const discovered = yield* serve({ id: "d", method: "server/discover", params: { _meta: META } })
        yield* discovered.replied
        expect(discovered.replies).toHaveLength(1)
        expect(discovered.replies[0]).toMatchObject({
          id: "d",
          result: { supportedVersions: expect.arrayContaining(["2026-07-28"]) }
        })

        const called = yield* serve({
          id: 3,
          method: "tools/call",
          params: { name: "fx__echo", arguments: { a: 1 }, _meta: META }
        })
        yield* called.replied
        expect(called.replies).toHaveLength(1)
        expect(firstText((called.replies[0] as { result: unknown }).result)).toBe('{"a":1}')
        expect(called.replies[0]).toMatchObject({ result: { resultType: "complete" } })
      })
    )

    it.effect("cancelled by id: the reply says so and the backend hears of it; two clients' same id are both served", () =>
      Effect.gen(function* () {
        const { dispatch, serve } = yield* dispatcher
        const hanging = yield* serve({ id: 7, method: "tools/call", params: { name: "fx__hang", arguments: {}, _meta: META } })
        const other = yield* serve({
          id: 7,
          method: "tools/call",
          params: { name: "fx__echo", arguments: { b: 2 }, _meta: META }
        })
        yield* other.replied
        expect(firstText((other.replies[0] as { result: unknown }).result)).toBe('{"b":2}')
        dispatch.cancel(7)
        yield* hanging.replied
        expect(hanging.replies).toEqual([{ jsonrpc: "2.0", id: 7, error: { code: -32800, message: "Request cancelled" } }])
        // The backend was told: its own record of cancellations names the call.
        const heard = yield* serve({ id: 8, method: "tools/call", params: { name: "fx__cancelled", arguments: {}, _meta: META } })
        yield* heard.replied
        expect(firstText((heard.replies[0] as { result: unknown }).result)).not.toBe("[]")
      })
    )

    it.effect("the gateway stopping: a request in flight is still replied to, once, saying why", () =>
      Effect.gen(function* () {
        const { dispatch, serve } = yield* dispatcher
        const hanging = yield* serve({ id: "h", method: "tools/call", params: { name: "fx__hang", arguments: {}, _meta: META } })
        // The test clock: the grace passes when the test says so.
        const draining = yield* Effect.forkChild(dispatch.drain(50))
        yield* TestClock.adjust(60)
        yield* hanging.replied
        yield* Fiber.join(draining)
        expect(hanging.replies).toEqual([
          { jsonrpc: "2.0", id: "h", error: { code: -32800, message: "Request cancelled: the gateway is stopping" } }
        ])
      })
    )

    it.effect(
      "the bridge: a session-era backend's question comes back as input_required, and the retry's answer reaches it",
      () =>
        Effect.gen(function* () {
          // The real clock for what the dispatcher runs: the bridge gathers a backend's questions for 20 ms.
          const { serve } = yield* TestClock.withLive(dispatcher)
          const meta = { ...META, "io.modelcontextprotocol/clientCapabilities": { sampling: {} } }
          const question = { messages: [{ role: "user", content: { type: "text", text: "say hi" } }], maxTokens: 5 }
          const params = { name: "fx__ask_client", arguments: { method: "sampling/createMessage", params: question } }
          const first = yield* serve({ id: 20, method: "tools/call", params: { ...params, _meta: meta } })
          yield* first.replied
          expect(first.replies).toHaveLength(1)
          const asked = (
            first.replies[0] as { result: { resultType: string; inputRequests: Record<string, any>; requestState: string } }
          ).result
          expect(asked.resultType).toBe("input_required")
          const [key, request] = Object.entries(asked.inputRequests)[0]!
          expect(request).toMatchObject({ method: "sampling/createMessage", params: { maxTokens: 5 } })
          const answer = { role: "assistant", content: { type: "text", text: "hi" }, model: "unit" }
          const retried = yield* serve({
            id: 21,
            method: "tools/call",
            params: { ...params, _meta: meta, requestState: asked.requestState, inputResponses: { [key]: answer } }
          })
          yield* retried.replied
          expect(retried.replies).toHaveLength(1)
          expect(retried.replies[0]).toMatchObject({
            id: 21,
            result: { resultType: "complete", structuredContent: { result: { role: "assistant", content: { text: "hi" } } } }
          })
          // A requestState is good for one round: used again, it is refused.
          const again = yield* serve({
            id: 22,
            method: "tools/call",
            params: { ...params, _meta: meta, requestState: asked.requestState, inputResponses: { [key]: answer } }
          })
          yield* again.replied
          expect(again.replies[0]).toMatchObject({ id: 22, error: { code: -32602 } })
        })
    )
  })
})
