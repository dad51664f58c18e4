/**
 * The logger's level belongs to the logger (provided with it), not to the module: a client's
 * initializationOptions change the level of the gateway it talks to, and nothing else.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, PubSub } from "effect"
import * as Logging from "../../../src/observability/Logging.js"
import * as EventsModule from "../../../src/observability/Events.js"
import { Events } from "../../../src/observability/Events.js"

const capture = () => {
  const lines: Array<string> = []
  return { lines, sink: { isTTY: false, write: (line: string) => void lines.push(line) } }
}

describe("Logging", () => {
  it("applyLevel changes the level of the logger in use, and of no other", async () => {
    const a = capture()
    const b = capture()
    // Two apps in one process, each with the gateway's logger, run side by side.
    const appA = Effect.gen(function* () {
      yield* Effect.sleep(5)
      yield* Effect.logDebug("a-debug")
      yield* Effect.logInfo("a-info")
    }).pipe(Effect.provide(Logging.layer(a.sink)))
    const appB = Effect.gen(function* () {
      yield* Logging.applyLevel("debug")
      yield* Effect.logDebug("b-debug")
      yield* Effect.sleep(10)
      yield* Logging.applyLevel("error")
      yield* Effect.logWarning("b-warning")
      yield* Effect.logError("b-error")
    }).pipe(Effect.provide(Logging.layer(b.sink)))
    await Promise.all([Effect.runPromise(appA), Effect.runPromise(appB)])
    expect(a.lines.map((line) => JSON.parse(line).msg)).toEqual(["a-info"])
    expect(b.lines.map((line) => JSON.parse(line).msg)).toEqual(["b-debug", "b-error"])
    // Without a logger of the gateway's, setting a level is nothing (an embedder's own logger).
    await Effect.runPromise(Logging.applyLevel("trace"))
  })
})

describe("Logging in a span", () => {
  it("a message under the level is not rendered by Effect's tracer logger (a span event) either", async () => {
    // A huge object logged at trace level (the LLM's completion) must cost nothing at info.
    let rendered = 0
    const message = {
      toJSON() {
        rendered++
        return {}
      }
    }
    const out = capture()
    let underTheLevel = -1
    await Effect.runPromise(
      Effect.gen(function* () {
        yield* Logging.applyLevel("info")
        yield* Effect.logTrace("body", message).pipe(Effect.withSpan("under-the-level"))
        underTheLevel = rendered
        yield* Effect.logInfo("shown", message).pipe(Effect.withSpan("at-the-level"))
      }).pipe(Effect.provide(Logging.layer(out.sink)))
    )
    expect(underTheLevel).toBe(0)
    // At the level, it is rendered (the line, and the span's event).
    expect(rendered).toBeGreaterThan(0)
    expect(out.lines).toHaveLength(1)
  })
})

describe("optional services with a default (Context.Reference)", () => {
  it("without the gateway's logger applyLevel does nothing, and without a hub events go nowhere", async () => {
    // Neither is required of the caller: both compile and run with nothing provided.
    await Effect.runPromise(Logging.applyLevel("debug"))
    const events = await Effect.runPromise(Events)
    expect(events).toBe(EventsModule.none)
    expect(events.active()).toBe(false)
  })

  it("a provided hub and threshold are the ones used", async () => {
    const provided = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const events = yield* Events
          const queue = yield* events.subscribe
          events.publish({ _tag: "Log", at: 0, level: "info", message: "heard" } as never)
          yield* Logging.applyLevel("error")
          return { active: events.active(), heard: (yield* PubSub.take(queue)) as unknown }
        })
      ).pipe(Effect.provide(Events.layer), Effect.provide(Logging.layer(capture().sink)))
    )
    expect(provided.active).toBe(true)
    expect(provided.heard).toMatchObject({ message: "heard" })
  })
})
