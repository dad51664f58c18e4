/**
 * Orchestration through real backends (the fixture server and the real server-filesystem) with
 * the scripted LLM: every orchestration error code (see docs/protocol.md's error codes) produced by its real situation.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer, Schedule } from "effect"
import { existsSync, readdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { type BackendConfigInput, GatewayConfig, type GatewayOptionsInput } from "../../../src/config/Config.js"
import { toRpcError } from "../../../src/protocol/Errors.js"
import { LlmRequestFailed } from "../../../src/orchestration/Errors.js"
import { Backends } from "../../../src/backend/Backends.js"
import * as Gateway from "../../../src/gateway/Gateway.js"
import * as Caller from "../../../src/gateway/pipeline/Caller.js"
import { CallPipeline } from "../../../src/gateway/pipeline/Pipeline.js"
import { AppRules } from "../../../src/gateway/pipeline/Rule.js"
import { LlmClient, type ScriptRule, ScriptedLlm } from "../../../src/orchestration/model/Llm.js"
import { Orchestrator, SYSTEM_PROMPT, validateParams } from "../../../src/orchestration/Orchestrator.js"
import { tempDir } from "../../support/stdioClient.js"
import { filesystemBackend, firstText, fixtureBackend } from "../../support/mcpFixture.js"
import { startEmbeddingsServer } from "../../support/embeddingsServer.js"

const gateway = (options: GatewayOptionsInput, rules: ReadonlyArray<ScriptRule>) =>
  Gateway.layer.pipe(
    Layer.provideMerge(LlmClient.layerScripted(rules)),
    Layer.provide(GatewayConfig.layerFromOptions(options, {}))
  )

/** The wire error an orchestration fails with, its params decoded where they enter (as the method table does). */
const failureOf = (params: unknown) =>
  Effect.flatMap(Orchestrator, (o) =>
    Effect.flip(Effect.flatMap(Effect.fromResult(validateParams(params)), (request) => o.orchestrate(request)))
  ).pipe(Effect.map(toRpcError))

const echo = fixtureBackend("echo") as BackendConfigInput

/** The model's turns (a forced turn, had there been one, apart). */
const turnsOf = <A extends { readonly toolChoice?: string | undefined }>(requests: ReadonlyArray<A>) =>
  requests.filter((r) => r.toolChoice === undefined)

describe("orchestration codes, each from its real situation", () => {
  const rules: ReadonlyArray<ScriptRule> = [
    { match: "say hello", reply: { tool: "echo__echo", arguments: { text: "hello" } } },
    { match: "ambiguous", reply: { text: "Which file do you mean?" } },
    {
      match: "two things",
      reply: {
        toolCalls: [
          { name: "echo__echo", arguments: {} },
          { name: "echo__add", arguments: { a: 1, b: 2 } }
        ]
      }
    },
    {
      match: "model down",
      reply: { fail: new LlmRequestFailed({ reason: "rate_limit", message: "OpenAI rate limit reached (429)", status: 429 }) }
    },
    { match: "invented tool", reply: { tool: "echo__does_not_exist", arguments: {} } },
    { match: "broken json", reply: { tool: "echo__echo", arguments: "{not json" } },
    { match: "array args", reply: { tool: "echo__echo", arguments: "[1,2]" } },
    { match: "add nothing", reply: { tool: "echo__add", arguments: {} } },
    { match: "proto args", reply: { tool: "echo__proto_args", arguments: {} } },
    { match: "tool fails", reply: { tool: "echo__fail", arguments: {} } },
    { match: "crash it", reply: { tool: "echo__crash", arguments: {} } },
    { match: "hang it", reply: { tool: "echo__hang", arguments: {} } }
  ]

  layer(gateway({ backends: [{ ...echo, requestTimeoutMs: 1500 }] }, rules), { timeout: 60_000, excludeTestServices: true })(
    "with an echo backend",
    (it) => {
      it.effect("a tool call runs on the backend and its result comes back unchanged", () =>
        Effect.gen(function* () {
          const orchestrator = yield* Orchestrator
          const result = yield* orchestrator.orchestrate({ query: "say hello", context: null })
          expect(firstText(result)).toContain("hello")
          const requests = yield* (yield* ScriptedLlm).requests
          const last = requests[requests.length - 1]!
          expect(last.messages[0]).toEqual({ role: "system", content: SYSTEM_PROMPT })
          expect(last.tools.map((t) => t.function.name)).toContain("echo__echo")
        })
      )

      it.effect("-32602: params that fail validation, each problem with its path", () =>
        Effect.gen(function* () {
          const empty = yield* failureOf({ query: "   " })
          expect(empty.code).toBe(-32602)
          expect(empty.message).toContain("query: must be a non-empty string")
          const wrong = yield* failureOf({ query: 5, context: { activeDocumentURI: 7 } })
          expect(wrong.code).toBe(-32602)
          expect(wrong.message).toMatch(/query: /)
          expect(wrong.message).toMatch(/context\.activeDocumentURI: /)
          expect((yield* failureOf(undefined)).message).toContain("query: is required")
        })
      )

      it.effect("-32000: the model called no tool, or (single shot, maxSteps 1) more than one", () =>
        Effect.gen(function* () {
          const none = yield* failureOf({ query: "something ambiguous" })
          expect(none).toMatchObject({
            code: -32000,
            message: "AI orchestrator could not determine an action for your query.",
            data: { query: "something ambiguous", modelMessage: "Which file do you mean?" }
          })
          expect((yield* failureOf({ query: "do two things", maxSteps: 1 })).code).toBe(-32000)
        })
      )

      it.effect("-32003: the LLM request failed", () =>
        Effect.gen(function* () {
          const failed = yield* failureOf({ query: "model down" })
          expect(failed).toMatchObject({
            code: -32003,
            message: "OpenAI rate limit reached (429)",
            data: { reason: "rate_limit" }
          })
        })
      )

      it.effect("-32003: an invalid plan (unknown tool, arguments not JSON or not an object, required missing)", () =>
        Effect.gen(function* () {
          const unknown = yield* failureOf({ query: "use an invented tool" })
          expect(unknown.code).toBe(-32003)
          expect(unknown.message).toContain("echo__does_not_exist")
          const broken = yield* failureOf({ query: "broken json please" })
          expect(broken.code).toBe(-32003)
          expect(broken.message).toMatch(/not valid JSON/)
          expect((yield* failureOf({ query: "array args" })).message).toMatch(/not a JSON object/)
          const missing = yield* failureOf({ query: "add nothing" })
          expect(missing.code).toBe(-32003)
          expect(missing.message).toContain("(root): must have required property 'a'; (root): must have required property 'b'")
          // Names every object inherits are still missing when the model leaves them out.
          const inherited = yield* failureOf({ query: "proto args" })
          expect(inherited.code).toBe(-32003)
          expect(inherited.message).toContain(
            "(root): must have required property 'toString'; (root): must have required property 'constructor'"
          )
        })
      )

      it.effect("-32004: an isError tool result, a crash, a timeout — each naming the backend", () =>
        Effect.gen(function* () {
          const toolError = yield* failureOf({ query: "the tool fails" })
          expect(toolError.code).toBe(-32004)
          expect(toolError.message).toMatch(/^Backend 'echo' failed: /)
          expect(toolError.data).toMatchObject({ backendId: "echo", reason: "tool_error", method: "tools/call" })
          const crashed = yield* failureOf({ query: "crash it" })
          expect(crashed.code).toBe(-32004)
          expect(crashed.message).toMatch(/^Backend 'echo' failed: /)
          // The backend restarts after the crash; wait until it answers again before the timeout case.
          const orchestrator = yield* Orchestrator
          yield* orchestrator
            .orchestrate({ query: "say hello" })
            .pipe(Effect.retry(Schedule.spaced("200 millis").pipe(Schedule.upTo({ times: 50 }))))
          const timedOut = yield* failureOf({ query: "hang it" })
          expect(timedOut).toMatchObject({ code: -32004, data: { reason: "timeout", backendId: "echo" } })
        }).pipe(Effect.timeout(30_000))
      )
    }
  )

  it.live("-32002: no backend configured (every backend disabled)", () =>
    Effect.gen(function* () {
      const failed = yield* failureOf({ query: "say hello" })
      expect(failed.code).toBe(-32002)
      expect(failed.message).toMatch(/backend/i)
    }).pipe(Effect.provide(gateway({ backends: [{ ...echo, enabled: false }] }, rules)))
  )

  it.live("-32002: no OpenAI key, with the real OpenAI layer", () =>
    Effect.gen(function* () {
      const failed = yield* failureOf({ query: "say hello" })
      expect(failed.code).toBe(-32002)
      expect(failed.message).toContain("OPENAI_API_KEY")
    }).pipe(
      Effect.provide(
        Gateway.layer.pipe(
          Layer.provide(LlmClient.layerOpenAI),
          Layer.provideMerge(GatewayConfig.layerFromOptions({ backends: [echo] }, {}))
        )
      )
    )
  )
})

describe("an embedding app's own rules", () => {
  it.live("provided beside the gateway's layer, they hold a call at decide, after the flow guard's", () =>
    Effect.gen(function* () {
      const pipeline = yield* CallPipeline
      const call = (name: string) =>
        Caller.as(Caller.CurrentCaller.nobody)(
          pipeline.run({ via: "client", name, context: undefined, params: { name, arguments: { a: 1, b: 2 } } })
        )
      const refused = yield* Effect.flip(call("echo__echo"))
      expect(refused).toMatchObject({ _tag: "CallRefused", stage: "decide", rule: "no-echo" })
      expect(toRpcError(refused).data).toMatchObject({ stage: "decide", rule: "no-echo" })
      // A call the rule does not concern goes on to its backend.
      expect(firstText(yield* call("echo__add"))).toContain("3")
    }).pipe(
      Effect.provide(
        gateway({ backends: [echo] }, []).pipe(
          Layer.provide(
            Layer.succeed(AppRules, [
              {
                name: "no-echo",
                refuses: (c) => Effect.succeed(c.name === "echo__echo" ? "echo is not for this app" : undefined)
              }
            ])
          )
        )
      )
    )
  )
})

describe("orchestration with the real server-filesystem", () => {
  const root = tempDir("agentify-orch-")
  writeFileSync(join(root, "notes.txt"), "remember the milk\n")

  it.live("routing tool: 'show me what is in notes.txt' reads the file; the model saw the context", () =>
    Effect.gen(function* () {
      const orchestrator = yield* Orchestrator
      const result = yield* orchestrator.orchestrate({
        query: "show me what is in notes.txt",
        context: { currentWorkingDirectory: root, activeDocumentURI: `file://${root}/notes.txt`, selectionText: "milk" }
      })
      expect(firstText(result)).toContain("remember the milk")
      const [request] = turnsOf(yield* (yield* ScriptedLlm).requests)
      const user = request!.messages.find((m) => m.role === "user")!.content
      expect(user).toContain("Request: show me what is in notes.txt")
      expect(user).toContain(`Current working directory: ${root}`)
      expect(user).toContain(`Active document: file://${root}/notes.txt`)
      expect(user).toContain("milk")
      const read = request!.tools.find((t) => t.function.name === "filesystem__read_text_file")!
      expect(read.function.parameters).toMatchObject({ type: "object", properties: { path: { type: "string" } } })
    }).pipe(
      Effect.provide(
        gateway({ backends: [filesystemBackend("filesystem", root) as BackendConfigInput] }, [
          { match: "notes.txt", reply: { tool: "filesystem__read_text_file", arguments: { path: join(root, "notes.txt") } } }
        ])
      )
    )
  )

  it.live("routing backend (the seed's shape): one function per backend with mcp_method and mcp_params", () =>
    Effect.gen(function* () {
      const orchestrator = yield* Orchestrator
      const result = yield* orchestrator.orchestrate({ query: "read notes.txt", context: { currentWorkingDirectory: root } })
      expect(firstText(result)).toContain("remember the milk")
      const [request] = turnsOf(yield* (yield* ScriptedLlm).requests)
      // The backends, and agentify_plan beside them in the first turn (the plan travels with it).
      expect(request!.tools.map((t) => t.function.name).sort()).toEqual(["agentify_plan", "echo", "filesystem"])
      const fs = request!.tools.find((t) => t.function.name === "filesystem")!
      expect(fs.function.parameters).toMatchObject({
        properties: { mcp_method: { type: "string" }, mcp_params: { type: "object" } },
        required: ["mcp_method", "mcp_params"]
      })
      expect(fs.function.description).toMatch(/read_text_file/)
      // A plan naming a tool the backend does not have is refused before it runs.
      const refused = yield* failureOf({ query: "read with a bad tool" })
      expect(refused.code).toBe(-32003)
      expect(refused.message).toContain("has no tool 'nope'")
    }).pipe(
      Effect.provide(
        gateway(
          {
            routing: "backend",
            backends: [filesystemBackend("filesystem", root) as BackendConfigInput, echo]
          },
          [
            {
              match: "bad tool",
              reply: { tool: "filesystem", arguments: { mcp_method: "tools/call", mcp_params: { name: "nope", arguments: {} } } }
            },
            {
              match: "notes.txt",
              reply: {
                tool: "filesystem",
                arguments: {
                  mcp_method: "tools/call",
                  mcp_params: { name: "read_text_file", arguments: { path: join(root, "notes.txt") } }
                }
              }
            }
          ]
        )
      )
    )
  )

  it.live("with embeddings: the semantic ranking joins the offer; an endpoint that fails leaves the lexical one alone", () =>
    Effect.gen(function* () {
      const server = yield* Effect.acquireRelease(
        Effect.promise(() => startEmbeddingsServer()),
        (s) => Effect.promise(() => s.close())
      )
      const offered = (options: GatewayOptionsInput) =>
        Effect.gen(function* () {
          const orchestrator = yield* Orchestrator
          yield* Effect.flip(orchestrator.orchestrate({ query: "keep a copy of this on disk" }))
          const [request] = turnsOf(yield* (yield* ScriptedLlm).requests)
          return request!.tools.map((t) => t.function.name)
        }).pipe(Effect.provide(gateway(options, [])))
      const options = (baseUrl: string): GatewayOptionsInput => ({
        maxToolsPerRequest: 5,
        embeddings: { model: "test-embed", baseUrl },
        backends: [
          filesystemBackend("filesystem", root) as BackendConfigInput,
          fixtureBackend("many", ["--tools", "60"]) as BackendConfigInput
        ]
      })
      const lexical = yield* offered({ ...options(server.baseUrl), embeddings: undefined })
      expect(lexical).not.toContain("filesystem__write_file")
      const semantic = yield* offered(options(server.baseUrl))
      expect(semantic).toContain("filesystem__write_file")
      expect(server.inputs.length).toBeGreaterThan(60)
      server.setMode("fail")
      expect(yield* offered(options(server.baseUrl))).toEqual(lexical)
    }).pipe(Effect.scoped)
  )

  it.live(
    "with embeddings: tools known from an earlier run (their backend not started) get their vectors before any request",
    () =>
      Effect.gen(function* () {
        const server = yield* Effect.acquireRelease(
          Effect.promise(() => startEmbeddingsServer()),
          (s) => Effect.promise(() => s.close())
        )
        // Its own state directory: the first gateway meets the backend and remembers its tools there.
        const stateDir = tempDir()
        const backends = [fixtureBackend("known60", ["--tools", "60"]) as BackendConfigInput]
        const options = (extra: Partial<GatewayOptionsInput>): GatewayOptionsInput => ({
          maxToolsPerRequest: 5,
          backends,
          ...extra
        })
        const poll = <A>(what: () => A | undefined) =>
          Effect.gen(function* () {
            const deadline = Date.now() + 20_000
            for (;;) {
              const found = what()
              if (found !== undefined || Date.now() > deadline) return found
              yield* Effect.sleep("20 millis")
            }
          })
        const layerOf = (extra: Partial<GatewayOptionsInput>) =>
          Gateway.layer.pipe(
            Layer.provideMerge(LlmClient.layerScripted([])),
            Layer.provide(GatewayConfig.layerFromOptions(options(extra), { AGENTIFY_STATE_DIR: stateDir }))
          )
        yield* Effect.gen(function* () {
          yield* poll(() =>
            existsSync(join(stateDir, "known")) && readdirSync(join(stateDir, "known")).length > 0 ? true : undefined
          )
        }).pipe(Effect.provide(layerOf({})))
        yield* Effect.gen(function* () {
          const all = yield* Backends
          // Listed from what was remembered: the backend waits for a use, and no list changes.
          expect((yield* all.states).map((b) => b.state)).toEqual(["idle"])
          yield* poll(() => (server.inputs.length >= 60 ? true : undefined))
          expect(server.inputs.length).toBeGreaterThanOrEqual(60)
        }).pipe(Effect.provide(layerOf({ embeddings: { model: "test-embed", baseUrl: server.baseUrl } })))
      }).pipe(Effect.scoped)
  )

  it.live("with embeddings: tool vectors are computed as the tools are listed, before any request", () =>
    Effect.gen(function* () {
      const server = yield* Effect.acquireRelease(
        Effect.promise(() => startEmbeddingsServer()),
        (s) => Effect.promise(() => s.close())
      )
      yield* Effect.gen(function* () {
        yield* Orchestrator
        // No orchestration: the gateway's own start lists the tools, and their vectors follow.
        const deadline = Date.now() + 20_000
        while (server.inputs.length < 60 && Date.now() < deadline) yield* Effect.sleep("20 millis")
        expect(server.inputs.length).toBeGreaterThanOrEqual(60)
      }).pipe(
        Effect.provide(
          gateway(
            {
              maxToolsPerRequest: 5,
              embeddings: { model: "test-embed", baseUrl: server.baseUrl },
              backends: [fixtureBackend("many", ["--tools", "60"]) as BackendConfigInput]
            },
            []
          )
        )
      )
    }).pipe(Effect.scoped)
  )

  it.live("the plan may name a tool not offered (agentify_plan lists the others by server): it joins the offer", () =>
    Effect.gen(function* () {
      const orchestrator = yield* Orchestrator
      yield* orchestrator.orchestrate({ query: "list the folder contents" })
      const [first, second] = turnsOf(yield* (yield* ScriptedLlm).requests)
      // The plan travels with the first turn: agentify_plan offered beside the tools, listing the others.
      const description = first!.tools.find((t) => t.function.name === "agentify_plan")!.function.description ?? ""
      expect(description).toContain("Other tools you may name")
      expect(description).toMatch(/^many: .*tool_59/m)
      expect(first!.tools.map((t) => t.function.name)).not.toContain("many__tool_59")
      // Named by the plan: offered from the next turn, beside the first turn's five and the search.
      const names = second!.tools.map((t) => t.function.name)
      expect(names).toContain("many__tool_59")
      expect(names).not.toContain("agentify_plan")
    }).pipe(
      Effect.provide(
        gateway(
          {
            maxToolsPerRequest: 5,
            backends: [
              filesystemBackend("filesystem", root) as BackendConfigInput,
              fixtureBackend("many", ["--tools", "60"]) as BackendConfigInput
            ]
          },
          [
            { match: "folder", reply: { tool: "filesystem__list_directory", arguments: { path: root } } },
            {
              match: "folder",
              step: "plan",
              reply: { tool: "agentify_plan", arguments: { tools: ["filesystem__list_directory", "many__tool_59"] } }
            },
            { match: "folder", step: 2, reply: { text: "Listed." } }
          ]
        )
      )
    )
  )

  it.live("a plan naming thousands of tools widens the offer by maxToolsPerRequest at most; the rest are found by search", () =>
    Effect.gen(function* () {
      const orchestrator = yield* Orchestrator
      yield* orchestrator.orchestrate({ query: "list the folder contents" })
      const [first, second, third] = turnsOf(yield* (yield* ScriptedLlm).requests)
      const own = new Set(["agentify_search_tools", "agentify_read_result", "agentify_plan"])
      const tools = (request: typeof first) => request!.tools.map((t) => t.function.name).filter((n) => !own.has(n))
      expect(tools(first)).toHaveLength(5)
      // The ranking's 5 and, of the 3,000 the plan named, the first 5 (as named): 10 functions, not 3,005.
      const next = tools(second)
      expect(next).toHaveLength(10)
      expect(next).toEqual(expect.arrayContaining(["many__tool_0", "many__tool_4"]))
      expect(next).not.toContain("many__tool_5")
      expect(second!.tools.map((t) => t.function.name)).toContain("agentify_search_tools")
      // What the plan named beyond the bound is reached by search, and joins then.
      expect(tools(third)).toContain("many__tool_2999")
    }).pipe(
      Effect.provide(
        gateway(
          {
            maxToolsPerRequest: 5,
            backends: [
              filesystemBackend("filesystem", root) as BackendConfigInput,
              fixtureBackend("many", ["--tools", "3000"]) as BackendConfigInput
            ]
          },
          [
            { match: "folder", reply: { tool: "filesystem__list_directory", arguments: { path: root } } },
            {
              match: "folder",
              step: "plan",
              reply: {
                tool: "agentify_plan",
                arguments: { tools: Array.from({ length: 3000 }, (_, i) => `many__tool_${i}`) }
              }
            },
            { match: "folder", step: 2, reply: { tool: "agentify_search_tools", arguments: { query: "tool_2999" } } },
            { match: "folder", step: 3, reply: { text: "Listed." } }
          ]
        )
      )
    )
  )

  it.live("a search of the model's that matches nothing adds no tool to its offer, and it is told so", () =>
    Effect.gen(function* () {
      const orchestrator = yield* Orchestrator
      yield* orchestrator.orchestrate({ query: "list the folder contents" })
      const [, second, third] = turnsOf(yield* (yield* ScriptedLlm).requests)
      const names = (request: typeof second) => request!.tools.map((t) => t.function.name)
      // The offer after the search is the offer before it: no tool of the catalog's first ones joined.
      expect(names(third)).toEqual(names(second))
      const answered = third!.messages.filter((m) => m.role === "tool").map((m) => m.content ?? "")
      expect(answered.at(-1)).toMatch(/^No further tools match/)
    }).pipe(
      Effect.provide(
        gateway(
          {
            maxToolsPerRequest: 5,
            backends: [
              filesystemBackend("filesystem", root) as BackendConfigInput,
              fixtureBackend("many", ["--tools", "60"]) as BackendConfigInput
            ]
          },
          [
            { match: "folder", reply: { tool: "filesystem__list_directory", arguments: { path: root } } },
            {
              match: "folder",
              step: 2,
              reply: { tool: "agentify_search_tools", arguments: { query: "xylophone quartz zebra" } }
            },
            { match: "folder", step: 3, reply: { text: "None fits." } }
          ]
        )
      )
    )
  )

  it.live("more tools than maxToolsPerRequest: the best matches for the query are offered, and the search for the rest", () =>
    Effect.gen(function* () {
      const orchestrator = yield* Orchestrator
      yield* Effect.flip(
        orchestrator.orchestrate({ query: "list the folder contents", context: { currentWorkingDirectory: root } })
      )
      const [request] = turnsOf(yield* (yield* ScriptedLlm).requests)
      // The best 5, the search for the rest, and agentify_plan (the plan travels with the first turn).
      const names = request!.tools.map((t) => t.function.name)
      expect(names).toHaveLength(7)
      expect(names).toContain("filesystem__list_directory")
      expect(names.slice(5)).toEqual(["agentify_search_tools", "agentify_plan"])
    }).pipe(
      Effect.provide(
        gateway(
          {
            maxToolsPerRequest: 5,
            backends: [
              filesystemBackend("filesystem", root) as BackendConfigInput,
              fixtureBackend("many", ["--tools", "60"]) as BackendConfigInput
            ]
          },
          []
        )
      )
    )
  )
})
