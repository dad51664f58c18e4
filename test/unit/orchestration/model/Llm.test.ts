import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Layer, Logger, References } from "effect"
import { TestClock } from "effect/testing"
import * as net from "node:net"
import { GatewayConfig } from "../../../../src/config/Config.js"
import { NotConfigured } from "../../../../src/protocol/Errors.js"
import { LlmRequestFailed } from "../../../../src/orchestration/Errors.js"
import {
  type ChatRequest,
  type ChatTool,
  LlmClient,
  type OpenAIOptions,
  ScriptedLlm
} from "../../../../src/orchestration/model/Llm.js"
import { type FakeOpenAI, fakeOpenAI } from "../../../support/fakeOpenAI.js"

const KEY = "sk-test-llm-0123456789abcdef"

const readFile: ChatTool = {
  type: "function",
  function: {
    name: "filesystem__read_file",
    description: "[filesystem] Read a file",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
  }
}
const listDir: ChatTool = { type: "function", function: { name: "filesystem__list_directory" } }

const request = (query: string, tools: ReadonlyArray<ChatTool> = [readFile, listDir]): ChatRequest => ({
  query,
  messages: [
    { role: "system", content: "Pick one tool." },
    { role: "user", content: `Query: ${query}` }
  ],
  tools
})

const chat = (r: ChatRequest) => Effect.flatMap(LlmClient, (llm) => llm.chat(r))

/** The retry notices are expected in these tests; keep the output readable. */
const quiet = Layer.succeed(References.MinimumLogLevel, "Warn")

const openAI = (
  fake: FakeOpenAI,
  options: OpenAIOptions = { maxRetries: 0 },
  env: Record<string, string> = { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: "test-model" }
) => LlmClient.layerOpenAIWith(options).pipe(Layer.provide(GatewayConfig.layer({ env })), Layer.provideMerge(quiet))

const expectLlmFailure = <A, R>(effect: Effect.Effect<A, LlmRequestFailed | NotConfigured, R>) =>
  Effect.gen(function* () {
    const error = yield* Effect.flip(effect)
    assert.strictEqual(error._tag, "LlmRequestFailed")
    return error as LlmRequestFailed
  })

describe("LlmClient.layerScripted", () => {
  it.effect("answers a matching rule with a tool call, arguments JSON-stringified", () =>
    Effect.gen(function* () {
      const response = yield* chat(request("Please READ the file notes.txt"))
      assert.strictEqual(response.toolCalls.length, 1)
      const [call] = response.toolCalls
      assert.strictEqual(call!.name, "filesystem__read_file")
      assert.deepStrictEqual(JSON.parse(call!.arguments), { path: "notes.txt" })
      assert.strictEqual(response.content, null)
      assert.strictEqual(response.model, "scripted")
    }).pipe(
      Effect.provide(
        LlmClient.layerScripted([
          { match: "read the file", reply: { tool: "filesystem__read_file", arguments: { path: "notes.txt" } } }
        ])
      )
    )
  )

  it.effect("answers without a tool call when no rule matches, or with the fallback", () =>
    Effect.gen(function* () {
      const none = yield* chat(request("something else")).pipe(
        Effect.provide(LlmClient.layerScripted([{ match: "read", reply: { tool: "x" } }]))
      )
      assert.deepStrictEqual(none.toolCalls, [])
      assert.strictEqual(none.content, null)

      const fallback = yield* chat(request("something else")).pipe(
        Effect.provide(LlmClient.layerScripted([], { fallback: { text: "I cannot help." }, model: "m1" }))
      )
      assert.deepStrictEqual(fallback, { toolCalls: [], content: "I cannot help.", model: "m1" })
    })
  )

  it.effect("text, failure, raw arguments and several tool calls", () =>
    Effect.gen(function* () {
      const text = yield* chat(request("hello there"))
      assert.deepStrictEqual(text.toolCalls, [])
      assert.strictEqual(text.content, "Hello!")

      const error = yield* Effect.flip(chat(request("boom")))
      assert.strictEqual(error._tag, "LlmRequestFailed")
      assert.strictEqual((error as LlmRequestFailed).reason, "rate_limit")

      const notConfigured = yield* Effect.flip(chat(request("no key")))
      assert.strictEqual(notConfigured._tag, "NotConfigured")

      const raw = yield* chat(request("raw args"))
      assert.strictEqual(raw.toolCalls[0]!.arguments, "{not json")

      const many = yield* chat(request("two at once"))
      assert.deepStrictEqual(
        many.toolCalls.map((c) => [c.name, c.arguments]),
        [
          ["a", '{"n":1}'],
          ["b", "{}"]
        ]
      )
      // Ids are unique across the layer's life, as the orchestrator may echo them.
      const ids = [raw, many].flatMap((r) => r.toolCalls.map((c) => c.id))
      assert.strictEqual(new Set(ids).size, ids.length)
    }).pipe(
      Effect.provide(
        LlmClient.layerScripted([
          { match: "hello", reply: { text: "Hello!" } },
          { match: "boom", reply: { fail: new LlmRequestFailed({ reason: "rate_limit", message: "slow down" }) } },
          { match: "no key", reply: { fail: new NotConfigured({ missing: "OPENAI_API_KEY", message: "no key" }) } },
          { match: "raw args", reply: { tool: "filesystem__read_file", arguments: "{not json" } },
          { match: "two at once", reply: { toolCalls: [{ name: "a", arguments: { n: 1 } }, { name: "b" }] } }
        ])
      )
    )
  )

  it.effect("matches rules in order: predicate, RegExp (even /g), substring; function replies", () =>
    Effect.gen(function* () {
      const first = yield* chat(request("list the folder"))
      assert.strictEqual(first.toolCalls[0]!.name, "by-predicate")

      // A /g pattern keeps `lastIndex` between `test` calls; matching twice must still work.
      for (let i = 0; i < 2; i++) {
        const regex = yield* chat(request("show me the LOG", [readFile]))
        assert.strictEqual(regex.toolCalls[0]!.name, "by-regex")
      }

      const fn = yield* chat(request("echo this", [listDir]))
      assert.deepStrictEqual(fn, { toolCalls: [], content: "echo: echo this (1 tools)", model: "fn" })
    }).pipe(
      Effect.provide(
        LlmClient.layerScripted([
          { match: (r) => r.tools.length === 2 && r.query.includes("folder"), reply: { tool: "by-predicate" } },
          { match: /log/gi, reply: { tool: "by-regex" } },
          { match: "list", reply: { tool: "never, the predicate came first" } },
          {
            match: "echo",
            reply: (r) => Effect.succeed({ toolCalls: [], content: `echo: ${r.query} (${r.tools.length} tools)`, model: "fn" })
          },
          { match: "", reply: { tool: "catch-all, never reached for the above" } }
        ])
      )
    )
  )

  it.effect("records requests (ScriptedLlm and onRequest) and accepts new rules", () => {
    const seen: Array<string> = []
    return Effect.gen(function* () {
      const scripted = yield* ScriptedLlm
      yield* chat(request("one"))
      yield* chat(request("two"))
      const requests = yield* scripted.requests
      assert.deepStrictEqual(
        requests.map((r) => r.query),
        ["one", "two"]
      )
      assert.deepStrictEqual(requests[0]!.tools, [readFile, listDir])
      assert.strictEqual(requests[0]!.messages[1]!.content, "Query: one")
      assert.deepStrictEqual(seen, ["one", "two"])

      yield* scripted.setRules([{ match: "three", reply: { tool: "t3" } }])
      yield* scripted.clear
      const three = yield* chat(request("three"))
      assert.strictEqual(three.toolCalls[0]!.name, "t3")
      assert.deepStrictEqual(
        (yield* scripted.requests).map((r) => r.query),
        ["three"]
      )
    }).pipe(Effect.provide(LlmClient.layerScripted([], { onRequest: (r) => seen.push(r.query) })))
  })

  it.effect("a delay waits on the clock and is interruptible", () =>
    Effect.gen(function* () {
      const slow = yield* Effect.forkChild(chat(request("slow")))
      yield* TestClock.adjust(Duration.seconds(9))
      assert.isTrue(slow.pollUnsafe() === undefined)
      yield* TestClock.adjust(Duration.seconds(1))
      const done = yield* Fiber.join(slow)
      assert.strictEqual(done.toolCalls[0]!.name, "late")

      const cancelled = yield* Effect.forkChild(chat(request("slow")))
      yield* TestClock.adjust(Duration.seconds(1))
      yield* Fiber.interrupt(cancelled)
      const exit = yield* Fiber.await(cancelled)
      assert.isTrue(Exit.hasInterrupts(exit))
    }).pipe(Effect.provide(LlmClient.layerScripted([{ match: "slow", delay: "10 seconds", reply: { tool: "late" } }])))
  )
})

describe("LlmClient.layerOpenAI against a fake server", () => {
  it.live("sends model, messages, tools, tool_choice auto and the bearer key; parses the tool call", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({ tool: "filesystem__read_file", arguments: { path: "a.txt" }, id: "call_abc" })
      const response = yield* chat(request("read a.txt")).pipe(Effect.provide(openAI(fake)))

      assert.deepStrictEqual(response, {
        toolCalls: [{ id: "call_abc", name: "filesystem__read_file", arguments: '{"path":"a.txt"}' }],
        content: null,
        model: "test-model",
        // The fake's usage block, as the debug UI shows it.
        usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }
      })
      assert.strictEqual(fake.requests.length, 1)
      const sent = fake.requests[0]!
      assert.strictEqual(sent.method, "POST")
      assert.strictEqual(sent.path, "/v1/chat/completions")
      assert.strictEqual(sent.headers.authorization, `Bearer ${KEY}`)
      assert.strictEqual(sent.body.model, "test-model")
      assert.strictEqual(sent.body.tool_choice, "auto")
      assert.deepStrictEqual(sent.body.tools, [readFile, listDir])
      assert.deepStrictEqual(sent.body.messages, request("read a.txt").messages)
      // Some compatible servers reject it; it stays unset.
      assert.isFalse("parallel_tool_calls" in sent.body)
      assert.isFalse("stream" in sent.body && sent.body.stream === true)
    })
  )

  it.live("a text answer has no tool call; no tools means no tool_choice", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({ text: "I would rather not." })
      const response = yield* chat(request("hi", [])).pipe(Effect.provide(openAI(fake)))
      assert.deepStrictEqual(response.toolCalls, [])
      assert.strictEqual(response.content, "I would rather not.")
      const body = fake.requests[0]!.body
      assert.isFalse("tools" in body)
      assert.isFalse("tool_choice" in body)
    })
  )

  it.live("the base URL comes from the config (here without /v1)", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({ tool: "t" })
      yield* chat(request("x")).pipe(
        Effect.provide(openAI(fake, { maxRetries: 0 }, { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.origin }))
      )
      assert.strictEqual(fake.requests[0]!.path, "/chat/completions")
      // The default model applies when none is configured.
      assert.strictEqual(fake.requests[0]!.body.model, "gpt-4.1-mini")

      const fromOptions = LlmClient.layerOpenAIWith({ maxRetries: 0 }).pipe(
        Layer.provide(
          GatewayConfig.layerFromOptions(
            { openaiBaseUrl: fake.baseUrl, model: "local-llama", backends: [{ id: "b", command: "node" }] },
            { OPENAI_API_KEY: KEY }
          )
        ),
        Layer.orDie
      )
      yield* chat(request("y")).pipe(Effect.provide(fromOptions))
      assert.strictEqual(fake.requests[1]!.path, "/v1/chat/completions")
      assert.strictEqual(fake.requests[1]!.body.model, "local-llama")
    })
  )

  it.live("401 is an auth failure whose message carries no key", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({
        status: 401,
        message: `Incorrect API key provided: ${KEY} / sk-te****cdef. You can find your API key at https://platform.openai.com.`,
        code: "invalid_api_key"
      })
      const error = yield* expectLlmFailure(chat(request("x")).pipe(Effect.provide(openAI(fake, {}))))
      assert.strictEqual(error.reason, "auth")
      assert.strictEqual(error.status, 401)
      assert.include(error.message, "rejected the API key (401)")
      assert.include(error.message, "OPENAI_API_KEY")
      assert.notInclude(error.message, KEY)
      assert.notInclude(error.message, "sk-te")
      assert.strictEqual(error.code, -32003)
      // Not retried, even with retries enabled.
      assert.strictEqual(fake.requests.length, 1)
    })
  )

  it.live("403 keeps the server's reason but masks key fragments", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({ status: 403, message: "Key sk-proj-ab****wxyz has no access to model test-model" })
      const error = yield* expectLlmFailure(chat(request("x")).pipe(Effect.provide(openAI(fake))))
      assert.strictEqual(error.reason, "auth")
      assert.include(error.message, "no access to model test-model")
      assert.notInclude(error.message, "sk-proj")
    })
  )

  it.live("429 is a rate limit; retried after Retry-After, then given up", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({ status: 429, message: "Rate limit reached for requests" })
      const once = yield* expectLlmFailure(chat(request("x")).pipe(Effect.provide(openAI(fake, { maxRetries: 0 }))))
      assert.strictEqual(once.reason, "rate_limit")
      assert.strictEqual(once.status, 429)
      assert.include(once.message, "Rate limit reached for requests")
      assert.strictEqual(fake.requests.length, 1)

      const exhausted = yield* expectLlmFailure(chat(request("x")).pipe(Effect.provide(openAI(fake, { maxRetries: 2 }))))
      assert.strictEqual(exhausted.reason, "rate_limit")
      assert.strictEqual(fake.requests.length, 1 + 3)

      fake.setReply([{ status: 429 }, { status: 503, headers: { "retry-after-ms": "10" } }, { tool: "t", arguments: {} }])
      const recovered = yield* chat(request("x")).pipe(Effect.provide(openAI(fake, { maxRetries: 2 })))
      assert.strictEqual(recovered.toolCalls[0]!.name, "t")
      assert.strictEqual(fake.requests.length, 4 + 3)
    })
  )

  it.live("a Retry-After beyond the limit, or an exhausted quota, fails at once", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({ status: 429, headers: { "retry-after": "60" } })
      const long = yield* expectLlmFailure(chat(request("x")).pipe(Effect.provide(openAI(fake, { maxRetries: 2 }))))
      assert.strictEqual(long.reason, "rate_limit")
      assert.include(long.message, "retry after 60 s")
      assert.strictEqual(fake.requests.length, 1)

      fake.setReply({ status: 429, code: "insufficient_quota", message: "You exceeded your current quota" })
      const quota = yield* expectLlmFailure(chat(request("x")).pipe(Effect.provide(openAI(fake, { maxRetries: 2 }))))
      assert.strictEqual(quota.reason, "rate_limit")
      assert.include(quota.message, "quota")
      assert.strictEqual(fake.requests.length, 2)
    })
  )

  it.live("5xx is a server failure", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({ status: 500, message: "The server had an error" })
      const error = yield* expectLlmFailure(chat(request("x")).pipe(Effect.provide(openAI(fake))))
      assert.strictEqual(error.reason, "server")
      assert.strictEqual(error.status, 500)
      assert.include(error.message, "The server had an error")
    })
  )

  it.live("other 4xx (unknown model) is 'other' with the server's words", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({ status: 404, message: "The model `nope` does not exist" })
      const error = yield* expectLlmFailure(chat(request("x")).pipe(Effect.provide(openAI(fake, {}))))
      assert.strictEqual(error.reason, "other")
      assert.strictEqual(error.status, 404)
      assert.include(error.message, "does not exist")
      assert.strictEqual(fake.requests.length, 1)
    })
  )

  it.live("garbage, a text body and a completion without choices are bad responses", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({ garbage: "<html>oops" })
      const layer = openAI(fake)
      const notJson = yield* expectLlmFailure(chat(request("x")).pipe(Effect.provide(layer)))
      assert.strictEqual(notJson.reason, "bad_response")

      fake.setReply({ garbage: "hello", contentType: "text/plain" })
      const text = yield* expectLlmFailure(chat(request("x")).pipe(Effect.provide(layer)))
      assert.strictEqual(text.reason, "bad_response")

      fake.setReply({ json: { id: "x", object: "chat.completion", choices: [] } })
      const noChoices = yield* expectLlmFailure(chat(request("x")).pipe(Effect.provide(layer)))
      assert.strictEqual(noChoices.reason, "bad_response")
      assert.include(noChoices.message, "no choices")

      fake.setReply({ json: { choices: [{ message: { tool_calls: [{ type: "function", function: {} }] } }] } })
      const noName = yield* expectLlmFailure(chat(request("x")).pipe(Effect.provide(layer)))
      assert.strictEqual(noName.reason, "bad_response")
    })
  )

  it.live("accepts what compatible servers send: object arguments, no id", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({
        json: {
          model: "llama3",
          choices: [{ message: { content: "", tool_calls: [{ function: { name: "t", arguments: { a: 1 } } }] } }]
        }
      })
      const response = yield* chat(request("x")).pipe(Effect.provide(openAI(fake)))
      assert.deepStrictEqual(response, {
        toolCalls: [{ id: "call_0", name: "t", arguments: '{"a":1}' }],
        content: "",
        model: "llama3"
      })
    })
  )

  it.live("recorded quirks of local servers: finish_reason stop with tool calls, a null id, calls written as text", () =>
    Effect.gen(function* () {
      // vLLM / LM Studio: tool calls with finish_reason "stop" and an id of null.
      const fake = yield* fakeOpenAI({
        json: {
          id: "chatcmpl-local",
          object: "chat.completion",
          model: "qwen2.5-7b-instruct",
          choices: [
            {
              index: 0,
              finish_reason: "stop",
              message: {
                role: "assistant",
                content: null,
                tool_calls: [{ id: null, type: "function", function: { name: "fs__read", arguments: '{"path":"a.txt"}' } }]
              }
            }
          ]
        }
      })
      const stop = yield* chat(request("x")).pipe(Effect.provide(openAI(fake)))
      assert.deepStrictEqual(stop.toolCalls, [{ id: "call_0", name: "fs__read", arguments: '{"path":"a.txt"}' }])
      // llama.cpp's server or Ollama without a tool parser for the model: Hermes/Qwen blocks in the text.
      fake.setReply({
        json: {
          model: "hermes-3",
          choices: [
            {
              finish_reason: "stop",
              message: {
                role: "assistant",
                content:
                  'Let me look.\n<tool_call>\n{"name": "fs__list", "arguments": {"path": "."}}\n</tool_call>\n<tool_call>{"name": "fs__read", "arguments": "{\\"path\\": \\"b\\"}"}</tool_call>'
              }
            }
          ]
        }
      })
      const written = yield* chat(request("x")).pipe(Effect.provide(openAI(fake)))
      assert.deepStrictEqual(written.toolCalls, [
        { id: "call_text_0", name: "fs__list", arguments: '{"path":"."}' },
        { id: "call_text_1", name: "fs__read", arguments: '{"path": "b"}' }
      ])
      assert.strictEqual(written.content, "Let me look.")
      // The syntax quoted in prose, not a call: left as text.
      fake.setReply({ json: { choices: [{ message: { content: "Write <tool_call>{name}</tool_call> to call a tool." } }] } })
      const prose = yield* chat(request("x")).pipe(Effect.provide(openAI(fake)))
      assert.deepStrictEqual(prose.toolCalls, [])
      assert.strictEqual(prose.content, "Write <tool_call>{name}</tool_call> to call a tool.")
    })
  )

  it.live("no key is NotConfigured and nothing is sent", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({ tool: "t" })
      const error = yield* Effect.flip(
        chat(request("x")).pipe(Effect.provide(openAI(fake, {}, { OPENAI_BASE_URL: fake.baseUrl })))
      )
      assert.strictEqual(error._tag, "NotConfigured")
      const notConfigured = error as NotConfigured
      assert.strictEqual(notConfigured.missing, "OPENAI_API_KEY")
      assert.strictEqual(notConfigured.code, -32002)
      assert.include(notConfigured.message, "OPENAI_API_KEY environment variable")
      assert.include(notConfigured.message, "initializationOptions.OPENAI_API_KEY")
      assert.include(notConfigured.message, "config file")
      assert.strictEqual(fake.requests.length, 0)
    })
  )

  it.live("a key set by initializationOptions after start-up is used, and a new key replaces it", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({ tool: "t" })
      const config = GatewayConfig.layer({ env: { OPENAI_BASE_URL: fake.baseUrl } })
      yield* Effect.gen(function* () {
        const gateway = yield* GatewayConfig
        const before = yield* Effect.flip(chat(request("x")))
        assert.strictEqual(before._tag, "NotConfigured")

        yield* gateway.applyInitializationOptions({ OPENAI_API_KEY: "sk-from-init-111111" })
        yield* chat(request("x"))
        assert.strictEqual(fake.requests[0]!.headers.authorization, "Bearer sk-from-init-111111")

        yield* gateway.applyInitializationOptions({ OPENAI_API_KEY: "sk-from-init-222222" })
        yield* chat(request("x"))
        assert.strictEqual(fake.requests[1]!.headers.authorization, "Bearer sk-from-init-222222")
      }).pipe(Effect.provide(LlmClient.layerOpenAIWith({ maxRetries: 0 }).pipe(Layer.provideMerge(config))))
    })
  )

  it.live("a server that never answers times out and the request is aborted", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({ hang: true })
      const started = Date.now()
      const error = yield* expectLlmFailure(
        chat(request("x")).pipe(Effect.provide(openAI(fake, { timeoutMs: 300, maxRetries: 2 })))
      )
      assert.strictEqual(error.reason, "timeout")
      assert.include(error.message, "did not answer within")
      // A timed-out attempt is not retried.
      assert.strictEqual(fake.requests.length, 1)
      assert.isBelow(Date.now() - started, 5_000)
      yield* Effect.promise(() => fake.untilAborted(1))
    })
  )

  it.live("interrupting the Effect aborts the HTTP request (Effect.timeout, fiber interrupt)", () =>
    Effect.gen(function* () {
      const fake = yield* fakeOpenAI({ hang: true })
      const layer = openAI(fake)

      const timedOut = yield* chat(request("x")).pipe(Effect.provide(layer), Effect.timeout("200 millis"), Effect.flip)
      assert.strictEqual(timedOut._tag, "TimeoutError")
      yield* Effect.promise(() => fake.untilAborted(1))

      const fiber = yield* Effect.forkChild(chat(request("y")).pipe(Effect.provide(layer)))
      yield* Effect.promise(() => fake.untilRequests(2))
      assert.strictEqual(fake.aborted, 1)
      yield* Fiber.interrupt(fiber)
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(Exit.hasInterrupts(exit))
      yield* Effect.promise(() => fake.untilAborted(2))
    })
  )

  it.live("an unreachable server is a network failure", () =>
    Effect.gen(function* () {
      // A port that was just free: nothing listens there.
      const port = yield* Effect.promise(
        () =>
          new Promise<number>((resolve) => {
            const probe = net.createServer().listen(0, "127.0.0.1", () => {
              const { port } = probe.address() as net.AddressInfo
              probe.close(() => resolve(port))
            })
          })
      )
      const layer = LlmClient.layerOpenAIWith({ maxRetries: 0 }).pipe(
        Layer.provide(GatewayConfig.layer({ env: { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1` } }))
      )
      const error = yield* expectLlmFailure(chat(request("x")).pipe(Effect.provide(layer)))
      assert.strictEqual(error.reason, "network")
      assert.include(error.message, `127.0.0.1:${port}`)
      assert.include(error.message, "ECONNREFUSED")
    })
  )

  it.live("an invalid base URL fails with a message naming the setting", () =>
    Effect.gen(function* () {
      const layer = LlmClient.layerOpenAIWith().pipe(
        Layer.provide(GatewayConfig.layer({ env: { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: "not a url" } }))
      )
      const error = yield* expectLlmFailure(chat(request("x")).pipe(Effect.provide(layer)))
      assert.strictEqual(error.reason, "other")
      assert.include(error.message, "OPENAI_BASE_URL")
    })
  )

  it.live("logs the request at debug and its body at trace, never the key; SDK logs use the Effect logger", () =>
    Effect.gen(function* () {
      const lines: Array<{ level: string; text: string; annotations: Record<string, unknown> }> = []
      const capture = Layer.merge(
        Logger.layer([
          Logger.make(({ fiber, logLevel, message }) => {
            lines.push({
              level: logLevel.toUpperCase(),
              text: JSON.stringify(message),
              annotations: { ...fiber.getRef(References.CurrentLogAnnotations) }
            })
          })
        ]),
        Layer.succeed(References.MinimumLogLevel, "All")
      )
      // The SDK reads OPENAI_LOG when the client is built; at "debug" it would write to stdout.
      const previous = process.env.OPENAI_LOG
      process.env.OPENAI_LOG = "debug"
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          if (previous === undefined) delete process.env.OPENAI_LOG
          else process.env.OPENAI_LOG = previous
        })
      )
      const fake = yield* fakeOpenAI({ tool: "filesystem__read_file", arguments: { path: "a.txt" } })
      const layer = LlmClient.layerOpenAIWith({ maxRetries: 0 }).pipe(
        Layer.provide(GatewayConfig.layer({ env: { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: "m" } }))
      )
      yield* chat(request("read a.txt")).pipe(Effect.provide(layer), Effect.provide(capture))

      const debug = lines.find((l) => l.level === "DEBUG" && l.text.includes("LLM request"))
      assert.isDefined(debug)
      assert.deepInclude(debug!.annotations, { model: "m", tools: 2, host: fake.baseUrl.slice("http://".length, -"/v1".length) })
      const body = lines.find((l) => l.level === "TRACE" && l.text.includes("LLM request body"))
      assert.isDefined(body)
      assert.include(body!.text, "Query: read a.txt")
      assert.isTrue(
        lines.some((l) => l.text.includes("openai: ")),
        "the SDK's own lines reach the Effect logger"
      )
      for (const line of lines) {
        assert.notInclude(line.text, KEY)
        assert.notInclude(JSON.stringify(line.annotations), KEY)
      }
    })
  )
})
