/**
 * The events hub and sessions in process: the shared gateway's Layers over the fixture server, two
 * sessions opened through `Gateway.open`, each served by its own `Peer`. Checks what the hub
 * publishes (client and backend messages both ways, backend states, sessions, log records), that
 * it publishes nothing with nobody listening, and that a session's notifications stay its own.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, PubSub } from "effect"
import { type BackendConfigInput, GatewayConfig } from "../../../src/config/Config.js"
import { type Event, Events } from "../../../src/observability/Events.js"
import { Policies } from "../../../src/policy/Policies.js"
import { SignIns } from "../../../src/auth/SignIns.js"
import * as Gateway from "../../../src/gateway/Gateway.js"
import { Backends } from "../../../src/backend/Backends.js"
import { LlmClient } from "../../../src/orchestration/model/Llm.js"
import * as Logging from "../../../src/observability/Logging.js"
import * as Peer from "../../../src/jsonrpc/Peer.js"
import { Session } from "../../../src/gateway/session/Session.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import * as Caller from "../../../src/gateway/pipeline/Caller.js"
import * as Store from "../../../src/store/Store.js"
import { EDGE as HTTP_EDGE } from "../../../src/gateway/clients/SharedSessions.js"

// The gateway's own logger (it publishes log records to the hub), its lines kept off the runner's output.
const GatewayLive = Gateway.layerShared.pipe(
  Layer.provide(LlmClient.layerScripted([])),
  Layer.provideMerge(GatewayConfig.layerFromOptions({ backends: [fixtureBackend("fx") as BackendConfigInput] }, {})),
  Layer.provideMerge(Logging.layer({ write: () => {}, isTTY: false }))
)

/** A session on the gateway, with a peer; `call` resolves with a request's reply and what came before it. */
const connect = (id: string) =>
  Effect.gen(function* () {
    const gateway = yield* Gateway.Gateway
    const events = yield* Events
    const sessionLevel: Array<unknown> = []
    const session = new Session({
      id,
      edge: HTTP_EDGE,
      send: (message: any) => sessionLevel.push({ method: message.method, params: message.params }) > 0
    })
    const peer = yield* Caller.as({ session })(Peer.make(yield* gateway.open(session), { sessionId: id, events }))
    let nextId = 1
    const call = (method: string, params?: unknown) =>
      Effect.callback<Array<any>>((resume) => {
        const messages: Array<any> = []
        const requestId = nextId++
        peer.receiveValue(
          { jsonrpc: "2.0", id: requestId, method, ...(params === undefined ? {} : { params }) },
          {
            send: (message: any) => {
              messages.push(message)
              if (message.id === requestId) resume(Effect.succeed(messages))
            }
          }
        )
      })
    yield* call("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: id, version: "1" } })
    return { session, call, sessionLevel }
  })

describe("events hub", () => {
  it.live("publishes client and backend messages both ways, backend states, sessions and log records", () =>
    Effect.gen(function* () {
      const events = yield* Events
      expect(events.active()).toBe(false)
      const queue = yield* events.subscribe
      expect(events.active()).toBe(true)
      const { call } = yield* connect("s1")
      const reply = yield* call("tools/call", { name: "fx__echo", arguments: { text: "traced" } })
      expect(reply.at(-1).result.content[0].text).toBe('{"text":"traced"}')
      // A crash and the restart that follows are backend states.
      yield* call("tools/call", { name: "fx__crash", arguments: {} })
      yield* Effect.sleep(1_500)
      const seen = (yield* PubSub.takeAll(queue)) as ReadonlyArray<Event>
      const tags = new Set(seen.map((e) => e._tag))
      expect([...tags].sort()).toEqual(["BackendCall", "BackendMessage", "BackendState", "ClientMessage", "Log", "Session"])
      // Each call's outcome: the echo answered, the crash failed.
      const outcomes = seen.flatMap((e) => (e._tag === "BackendCall" && e.method === "tools/call" ? [e.outcome] : []))
      expect(outcomes).toEqual(["ok", "error"])
      const clientIn = seen.find(
        (e) => e._tag === "ClientMessage" && e.direction === "in" && (e.message as any).method === "tools/call"
      )
      expect(clientIn).toMatchObject({ sessionId: "s1" })
      expect(seen.some((e) => e._tag === "ClientMessage" && e.direction === "out" && (e.message as any).id === 2)).toBe(true)
      const toBackend = seen.find(
        (e) => e._tag === "BackendMessage" && e.direction === "out" && (e.message as any).params?.name === "echo"
      )
      expect(toBackend).toMatchObject({
        backendId: "fx",
        message: { method: "tools/call", params: { arguments: { text: "traced" } } }
      })
      expect(
        seen.some((e) => e._tag === "BackendMessage" && e.direction === "in" && (e.message as any).result !== undefined)
      ).toBe(true)
      const states = seen.flatMap((e) => (e._tag === "BackendState" ? [e.status.state] : []))
      expect(states).toContain("restarting")
      expect(states.at(-1)).toBe("ready")
      expect(seen.some((e) => e._tag === "Session" && e.sessionId === "s1" && e.state === "opened")).toBe(true)
      expect(seen.some((e) => e._tag === "Log" && /backend ready/.test(e.message))).toBe(true)
    }).pipe(Effect.provide(GatewayLive))
  )

  it.live("with nobody subscribed, no producer builds an event: the hub costs nothing", () => {
    // A hub nobody listens to that counts what reaches it: producers must check `active()` first.
    const quiet = { reached: 0 }
    const QuietEvents = Layer.succeed(Events, {
      active: () => false,
      publish: () => {
        quiet.reached++
      },
      subscribe: Effect.die("nobody subscribes here")
    })
    const QuietLive = Gateway.Gateway.layerShared.pipe(
      Layer.provideMerge(Backends.layerNode),
      Layer.provideMerge(QuietEvents),
      Layer.provide(Policies.layerNone),
      Layer.provide(SignIns.layer),
      Layer.provide(LlmClient.layerScripted([])),
      Layer.provide(Store.layerLocal),
      Layer.provideMerge(GatewayConfig.layerFromOptions({ backends: [fixtureBackend("fx") as BackendConfigInput] }, {})),
      Layer.provideMerge(Logging.layer({ write: () => {}, isTTY: false }))
    )
    return Effect.gen(function* () {
      const backends = yield* Backends
      const config = yield* (yield* GatewayConfig).current
      yield* backends.start(config.backends, { startupTimeoutMs: 10_000, requestTimeoutMs: 10_000 })
      yield* Effect.scoped(
        Effect.gen(function* () {
          const { call } = yield* connect("quiet")
          yield* call("tools/call", { name: "fx__echo", arguments: { text: "unseen" } })
          yield* call("tools/call", { name: "fx__progress", arguments: { steps: 2 }, _meta: { progressToken: 1 } })
          yield* call("tools/call", { name: "fx__log", arguments: {} })
        })
      )
      // Messages both ways, a backend's start, a session opened and closed, log lines: none reached it.
      expect(quiet.reached).toBe(0)
    }).pipe(Effect.provide(QuietLive))
  })
})

describe("sessions on one gateway", () => {
  it.live("progress with the same token reaches only the session that asked; log messages go with the call", () =>
    Effect.gen(function* () {
      const a = yield* connect("a")
      const b = yield* connect("b")
      const progress = (messages: Array<any>) =>
        messages.filter((m) => m.method === "notifications/progress").map((m) => m.params)
      const [ra, rb] = yield* Effect.all(
        [
          a.call("tools/call", { name: "fx__progress", arguments: { steps: 2 }, _meta: { progressToken: 7 } }),
          b.call("tools/call", { name: "fx__progress", arguments: { steps: 4 }, _meta: { progressToken: 7 } })
        ],
        { concurrency: "unbounded" }
      )
      expect(progress(ra)).toEqual([1, 2].map((p) => ({ progressToken: 7, progress: p, total: 2 })))
      expect(progress(rb)).toEqual([1, 2, 3, 4].map((p) => ({ progressToken: 7, progress: p, total: 4 })))
      const logged = yield* a.call("tools/call", { name: "fx__log", arguments: { message: "a's" } })
      expect(logged.filter((m) => m.method === "notifications/message").map((m) => m.params.data)).toEqual(["a's"])
      expect(JSON.stringify(b.sessionLevel)).not.toContain("a's")
      expect(JSON.stringify(a.sessionLevel)).not.toContain("a's")
      // A change of the tools is every session's business.
      yield* a.call("tools/call", { name: "fx__add_tool", arguments: { name: "late" } })
      yield* Effect.sleep(300)
      for (const s of [a, b]) expect(s.sessionLevel).toContainEqual({ method: "notifications/tools/list_changed", params: {} })
    }).pipe(Effect.provide(GatewayLive))
  )
})
