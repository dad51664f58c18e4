/**
 * The input-required bridge in process, no session nor transport: a call that asks gets an
 * InputRequiredResult, the retry's answers reach it and its result is the next reply; a question
 * the client cannot answer alone fails the call with -32021; a forged, stale or replayed
 * `requestState` is refused; answers given with the first request are used at once; and calls
 * still open when the gateway stops are closed (their work interrupted).
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Layer, Scope } from "effect"
import { InputBridge, type InputBridgeService } from "../../../../src/gateway/clientRequests/InputBridge.js"
import type { Request, Response } from "../../../../src/jsonrpc/JsonRpc.js"
import type { AskError } from "../../../../src/protocol/Errors.js"
import { RequestStates } from "../../../../src/gateway/clientRequests/RequestStates.js"

/** The bridge with a key of its own. */
const bridgeLayer = InputBridge.layer.pipe(Layer.provide(RequestStates.layerLocal))

const call = (id: number, params: Record<string, unknown> = {}): Request => ({
  id,
  method: "tools/call",
  params: { name: "ask", ...params }
})
const silent = { send: () => {} }
const elicit = { message: "Proceed?", requestedSchema: { type: "object", properties: {} } }

/** Opens a call for `request` and runs `work` with its ask; the call. */
const started = (
  bridge: InputBridgeService,
  request: Request,
  capabilities: Record<string, unknown>,
  work: (ask: (method: string, params: unknown) => Effect.Effect<unknown, AskError>) => Effect.Effect<unknown, AskError>
) =>
  Effect.gen(function* () {
    const opened = yield* bridge.open(request, capabilities, silent)
    if ("jsonrpc" in opened) return yield* Effect.die(new Error(`refused: ${JSON.stringify(opened)}`))
    yield* bridge.run(opened, work(opened.ask))
    return opened
  })

const resultOf = (response: Response): Record<string, unknown> => {
  if (!("result" in response)) throw new Error(`expected a result: ${JSON.stringify(response)}`)
  return response.result as Record<string, unknown>
}

describe("InputBridge", () => {
  it.live("a question becomes an InputRequiredResult; the retry's answer reaches the call, whose result is the next reply", () =>
    Effect.gen(function* () {
      const bridge = yield* InputBridge
      const opened = yield* started(bridge, call(1), { elicitation: {} }, (ask) =>
        Effect.map(ask("elicitation/create", elicit), (answer) => ({ content: [{ type: "text", text: JSON.stringify(answer) }] }))
      )
      const first = resultOf(yield* bridge.round(opened, call(1)))
      expect(first).toMatchObject({
        resultType: "input_required",
        inputRequests: { "elicitation-1": { method: "elicitation/create", params: elicit } }
      })
      expect(bridge.size()).toBe(1)
      expect(opened.parked()).toBe(true)
      const retry = call(2, { requestState: first.requestState, inputResponses: { "elicitation-1": { action: "accept" } } })
      const resumed = yield* bridge.resume(retry, silent)
      expect("jsonrpc" in resumed).toBe(false)
      if ("jsonrpc" in resumed) return
      expect(resumed.parked()).toBe(false)
      const second = yield* bridge.round(resumed, retry)
      expect(second).toEqual({
        jsonrpc: "2.0",
        id: 2,
        result: { content: [{ type: "text", text: '{"action":"accept"}' }], resultType: "complete" }
      })
      expect(bridge.size()).toBe(0)
      // The finished call's state names nothing any more.
      const replay = yield* bridge.resume(retry, silent)
      expect(replay).toMatchObject({ id: 2, error: { code: -32602, message: expect.stringContaining("no open call") } })
    }).pipe(Effect.provide(bridgeLayer))
  )

  it.live("a question the client lacks the capability for, asked alone, fails the call with -32021", () =>
    Effect.gen(function* () {
      const bridge = yield* InputBridge
      const interrupted = yield* Deferred.make<void>()
      const opened = yield* started(bridge, call(1), {}, (ask) =>
        ask("sampling/createMessage", { messages: [] }).pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined)))
      )
      const reply = yield* bridge.round(opened, call(1))
      expect(reply).toMatchObject({
        id: 1,
        error: { code: -32021, data: { requiredCapabilities: { sampling: {} } } }
      })
      // Its work does not go on waiting for an answer that cannot come.
      yield* Deferred.await(interrupted)
      expect(bridge.size()).toBe(0)
    }).pipe(Effect.provide(bridgeLayer))
  )

  it.live("a forged, a stale and a second concurrent requestState are refused with -32602", () =>
    Effect.gen(function* () {
      const bridge = yield* InputBridge
      const opened = yield* started(bridge, call(1), { elicitation: {} }, (ask) =>
        Effect.andThen(ask("elicitation/create", elicit), ask("elicitation/create", elicit))
      )
      const first = resultOf(yield* bridge.round(opened, call(1)))
      const state = String(first.requestState)
      const forged = yield* bridge.resume(call(2, { requestState: `${state}x`, inputResponses: {} }), silent)
      expect(forged).toMatchObject({ error: { code: -32602, message: expect.stringContaining("integrity") } })
      // Forged at the same length, so that the signature itself is compared: a signature with one
      // character changed, and a payload changed under the real signature.
      const [payload, signature] = state.slice("agentify.".length).split(".") as [string, string]
      const flipped = `${signature[0] === "A" ? "B" : "A"}${signature.slice(1)}`
      const decoded = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"))
      const otherCall = String(decoded.call).replace(/.$/, (c) => (c === "0" ? "1" : "0"))
      const altered = Buffer.from(JSON.stringify({ ...decoded, call: otherCall })).toString("base64url")
      expect(altered.length).toBe(payload.length)
      for (const requestState of [`agentify.${payload}.${flipped}`, `agentify.${altered}.${signature}`]) {
        expect(requestState.length).toBe(state.length)
        const refused = yield* bridge.resume(call(2, { requestState, inputResponses: {} }), silent)
        expect(refused).toMatchObject({ error: { code: -32602, message: expect.stringContaining("integrity") } })
      }
      const otherTool = yield* bridge.resume(
        { id: 3, method: "tools/call", params: { name: "other", requestState: state, inputResponses: {} } },
        silent
      )
      expect(otherTool).toMatchObject({ error: { code: -32602, message: expect.stringContaining("another request") } })
      const answers = { "elicitation-1": { action: "accept" } }
      const resumed = yield* bridge.resume(call(4, { requestState: state, inputResponses: answers }), silent)
      if ("jsonrpc" in resumed) return expect.fail("the first retry is the call's")
      const twice = yield* bridge.resume(call(5, { requestState: state, inputResponses: answers }), silent)
      expect(twice).toMatchObject({ error: { code: -32602, message: expect.stringContaining("already being resumed") } })
      // The next round asks the second question; the first round's state is stale now.
      const next = resultOf(yield* bridge.round(resumed, call(4)))
      expect(next).toMatchObject({ resultType: "input_required", inputRequests: { "elicitation-2": {} } })
      const stale = yield* bridge.resume(call(6, { requestState: state, inputResponses: answers }), silent)
      expect(stale).toMatchObject({ error: { code: -32602, message: expect.stringContaining("another request or round") } })
    }).pipe(Effect.provide(bridgeLayer))
  )

  it.live("answers sent with the first request are used at once for the keys the backend named", () =>
    Effect.gen(function* () {
      const bridge = yield* InputBridge
      const named = { ...elicit, _meta: { "agentify/inputKey": "confirm" } }
      const request = call(1, { inputResponses: { confirm: { action: "decline" } } })
      const opened = yield* started(bridge, request, { elicitation: {} }, (ask) => ask("elicitation/create", named))
      expect(yield* bridge.round(opened, request)).toEqual({
        jsonrpc: "2.0",
        id: 1,
        result: { action: "decline", resultType: "complete" }
      })
    }).pipe(Effect.provide(bridgeLayer))
  )

  it.live("the gateway stopping closes the calls still waiting for their clients: their work is interrupted", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const bridge = Context.get(yield* Layer.buildWithScope(bridgeLayer, scope), InputBridge)
      const interrupted = yield* Deferred.make<void>()
      const opened = yield* started(bridge, call(1), { elicitation: {} }, (ask) =>
        ask("elicitation/create", elicit).pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined)))
      )
      expect(resultOf(yield* bridge.round(opened, call(1)))).toMatchObject({ resultType: "input_required" })
      expect(bridge.size()).toBe(1)
      yield* Scope.close(scope, Exit.void)
      yield* Deferred.await(interrupted)
      expect(bridge.size()).toBe(0)
    })
  )
})
