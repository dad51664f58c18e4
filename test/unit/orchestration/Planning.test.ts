/**
 * The plan turn: `agentify_plan` forced; an endpoint that refuses a forced function is asked with
 * the instruction in the system prompt; only offered functions count; no plan when none is given.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ChatRequest, LlmService } from "../../../src/orchestration/Chat.js"
import { LlmRequestFailed } from "../../../src/orchestration/Errors.js"
import * as Planning from "../../../src/orchestration/Planning.js"

const fn = (name: string) => ({ type: "function" as const, function: { name } })
const messages = [
  { role: "system" as const, content: "You are the orchestrator." },
  { role: "user" as const, content: "Request: read notes.md" }
]
const planCall = (tools: unknown) => ({
  toolCalls: [{ id: "c1", name: Planning.PLAN_FUNCTION, arguments: JSON.stringify({ tools, why: "the request" }) }],
  content: null
})

describe("Planning.ask", () => {
  it.effect("forces agentify_plan beside the offered functions; keeps the offered names only", () =>
    Effect.gen(function* () {
      const asked: Array<ChatRequest> = []
      const llm: LlmService = { chat: (r) => Effect.sync(() => (asked.push(r), planCall(["fs__read", "evil__send", 7]))) }
      const plan = yield* Planning.ask(llm, "read notes.md", messages, [fn("fs__read"), fn("mem__save")])
      expect(plan).toEqual({ tools: ["fs__read"], why: "the request" })
      expect(asked[0]!.toolChoice).toBe(Planning.PLAN_FUNCTION)
      expect(asked[0]!.tools.map((t) => t.function.name)).toEqual(["fs__read", "mem__save", Planning.PLAN_FUNCTION])
    })
  )

  it.effect("an endpoint that refuses a forced function is asked in the system prompt instead", () =>
    Effect.gen(function* () {
      const asked: Array<ChatRequest> = []
      const llm: LlmService = {
        chat: (r) =>
          r.toolChoice !== undefined
            ? Effect.fail(new LlmRequestFailed({ reason: "bad_response", message: "tool_choice is not supported", status: 400 }))
            : Effect.sync(() => (asked.push(r), planCall(["fs__read"])))
      }
      const plan = yield* Planning.ask(llm, "read notes.md", messages, [fn("fs__read")])
      expect(plan?.tools).toEqual(["fs__read"])
      expect(asked[0]!.messages.filter((m) => m.role === "system").map((m) => (m as { content: string }).content)[1]).toContain(
        "call agentify_plan"
      )
    })
  )

  it.effect("any other failure of the endpoint is the orchestration's (as a turn's would be), not a second request", () =>
    Effect.gen(function* () {
      let requests = 0
      const llm: LlmService = {
        chat: () => (requests++, Effect.fail(new LlmRequestFailed({ reason: "auth", message: "bad key (401)", status: 401 })))
      }
      const failed = yield* Effect.flip(Planning.ask(llm, "read notes.md", messages, [fn("fs__read")]))
      expect(failed.message).toBe("bad key (401)")
      expect(requests).toBe(1)
    })
  )

  it.effect("a model that names no plan has none (every call after reading is then held)", () =>
    Effect.gen(function* () {
      const llm: LlmService = {
        chat: () => Effect.succeed({ toolCalls: [{ id: "c", name: "fs__read", arguments: "{}" }], content: null })
      }
      expect(yield* Planning.ask(llm, "read notes.md", messages, [fn("fs__read")])).toBeUndefined()
    })
  )
})
