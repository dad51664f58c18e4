/**
 * The aggregate's method table in process: a Session opened on the shared gateway (a real fixture
 * backend, the scripted model), its requests given to the handlers directly, no transport between.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { GatewayConfig } from "../../../../src/config/Config.js"
import * as Gateway from "../../../../src/gateway/Gateway.js"
import { AGGREGATE_METHODS } from "../../../../src/gateway/methods/Aggregate.js"
import { Session } from "../../../../src/gateway/session/Session.js"
import type { Request } from "../../../../src/jsonrpc/JsonRpc.js"
import { LlmClient } from "../../../../src/orchestration/model/Llm.js"
import { toRpcError } from "../../../../src/protocol/Errors.js"
import { firstText, FIXTURE_TOOL_COUNT, fixtureBackend } from "../../../support/mcpFixture.js"
import * as Caller from "../../../../src/gateway/pipeline/Caller.js"
import { EDGE as HTTP_EDGE } from "../../../../src/gateway/clients/SharedSessions.js"

const Live = Gateway.layerShared.pipe(
  Layer.provide(LlmClient.layerScripted([{ match: "say", reply: { tool: "fx__echo", arguments: { said: "hi" } } }])),
  Layer.provideMerge(GatewayConfig.layerFromOptions({ backends: [fixtureBackend("fx")] }, { OPENAI_API_KEY: "sk-unit-123456" }))
)

interface Outcome {
  readonly result?: any
  readonly error?: { readonly code: number; readonly message: string }
}

/** A client of the method table: requests in, the wire's result or error out. */
const client = Effect.gen(function* () {
  const gateway = yield* Gateway.Gateway
  const session = new Session({ id: "unit", edge: HTTP_EDGE, send: () => false })
  const handlers = yield* gateway.open(session)
  let next = 0
  const ask = (method: string, params?: unknown) =>
    handlers
      .request({ jsonrpc: "2.0", id: ++next, method, params } as Request, {
        id: next,
        notify: () => Effect.void,
        notifyUnsafe: () => {},
        send: () => false
      })
      .pipe(
        Effect.map((result): Outcome => ({ result })),
        Effect.catch((error) => Effect.succeed<Outcome>({ error: toRpcError(error) })),
        Caller.as({ session })
      )
  return { ask, session }
})

const INIT = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "unit", version: "1" } }

layer(Live, { timeout: 30_000 })("the aggregate's method table, in process", (it) => {
  it.effect("before initialize: -32001; then tools, a call, an orchestration, unknown methods and params", () =>
    Effect.gen(function* () {
      const { ask } = yield* client
      expect((yield* ask("tools/list")).error?.code).toBe(-32001)
      const init = yield* ask("initialize", INIT)
      expect(init.result).toMatchObject({ protocolVersion: "2025-11-25", serverInfo: { name: "mcp-agentify" } })
      const tools = (yield* ask("tools/list", {})).result.tools as Array<{ name: string }>
      expect(tools[0]!.name).toBe("agentify_orchestrate")
      expect(tools[1]!.name).toBe("agentify_run_code")
      expect(tools).toHaveLength(2 + FIXTURE_TOOL_COUNT)
      const called = yield* ask("tools/call", { name: "fx__echo", arguments: { x: 1 } })
      expect(firstText(called.result)).toBe('{"x":1}')
      const orchestrated = yield* ask("agentify/orchestrateTask", { query: "say hi" })
      expect(firstText(orchestrated.result)).toBe('{"said":"hi"}')
      expect((yield* ask("agentify/orchestrateTask", { query: "" })).error?.code).toBe(-32602)
      expect((yield* ask("tools/call", { name: "fx__nope" })).error?.code).toBe(-32602)
      expect((yield* ask("no/such/method")).error?.code).toBe(-32601)
      expect((yield* ask("ping")).result).toEqual({})
    })
  )
})

layer(Live, { timeout: 30_000 })("the tables as data", (it) => {
  it.effect(
    "every method the aggregate's table names is answered by it; names of Object's own properties are unknown methods",
    () =>
      Effect.gen(function* () {
        const { ask } = yield* client
        expect((yield* ask("initialize", INIT)).result).toBeDefined()
        const unanswered: Array<string> = []
        for (const method of AGGREGATE_METHODS) {
          if (method === "initialize" || method === "shutdown") continue
          if ((yield* ask(method, {})).error?.code === -32601) unanswered.push(method)
        }
        expect(unanswered).toEqual([])
        for (const method of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
          expect((yield* ask(method, {})).error).toEqual({ code: -32601, message: `Method not found: ${method}` })
        }
        // A row decodes its params where they enter: the handler never sees a wrong shape.
        expect((yield* ask("tools/call", { name: 7 })).error).toMatchObject({
          code: -32602,
          message: "Invalid params: name: is required"
        })
        expect((yield* ask("logging/setLevel", { level: "loud" })).error?.code).toBe(-32602)
        // Relayed rows too: what routes the request is decoded before anything is looked up.
        expect((yield* ask("resources/read", {})).error).toMatchObject({
          code: -32602,
          message: "Invalid params: uri: is required"
        })
        expect((yield* ask("prompts/get", { name: 3 })).error).toMatchObject({ message: "Invalid params: name: is required" })
        expect((yield* ask("completion/complete", { ref: { type: "ref/prompt" } })).error).toMatchObject({
          message: "Invalid params: ref: must be a ref/prompt with a name or a ref/resource with a uri"
        })
        expect((yield* ask("shutdown")).result).toBeNull()
      })
  )
})

describe("sessions", () => {
  layer(Live, { timeout: 30_000 })("on one shared gateway", (it) => {
    it.effect("initialize twice in one session is refused; another session is served on its own", () =>
      Effect.gen(function* () {
        const first = yield* client
        expect((yield* first.ask("initialize", INIT)).result).toBeDefined()
        expect((yield* first.ask("initialize", INIT)).error?.code).toBe(-32600)
        const second = yield* client
        expect((yield* second.ask("tools/list")).error?.code).toBe(-32001)
        expect((yield* second.ask("initialize", INIT)).result).toBeDefined()
        expect(first.session.phase).toBe("ready")
      })
    )
  })
})
