/**
 * The LLM service over OpenAI or any OpenAI-compatible server (Ollama, vLLM, LM Studio, a
 * proxy) through the `openai` package, loaded on the first request. Longer than most modules: the
 * request, its retries and the classification of every failure are one policy, kept together.
 *
 * OpenAI layer policy (docs/orchestration.md repeats it):
 * - The key, base URL and model are read from `GatewayConfig.current` on every request, because a
 *   client's `initializationOptions` may set them after start-up. The `OpenAI` instance is cached
 *   for the last (key, base URL) pair.
 * - Timeout: 30 s per attempt (`DEFAULT_TIMEOUT_MS`), covering the whole exchange, body included.
 *   A timed-out attempt is not retried: a tool-selection answer is short, so a server that stalls
 *   for 30 s rarely recovers on the next try, and the MCP client is waiting.
 * - Retries: up to 2 (`DEFAULT_MAX_RETRIES`, so 3 attempts) on 408, 409, 429, 5xx and connection
 *   failures, as the SDK would; an `x-should-retry` header decides when present. The wait honours
 *   `retry-after-ms` / `Retry-After`, else backs off 0.5 s, 1 s, ... (max 8 s) with 25 % jitter. A
 *   server asking for more than 10 s (`DEFAULT_MAX_RETRY_DELAY_MS`) is not waited for: the request
 *   fails at once with its reason. A 429 `insufficient_quota` is never retried. The retry loop
 *   runs in Effect rather than in the SDK so the waits are interruptible and show in the logs.
 * - Interrupting the Effect (cancellation, a timeout around it) aborts the HTTP request.
 * - `tool_choice: "auto"`, or the one function a request forces (the plan); `parallel_tool_calls` is left unset, since some compatible servers
 *   reject it. With no tools at all, neither `tools` nor `tool_choice` is sent (OpenAI rejects a
 *   `tool_choice` without tools).
 * - Error messages never carry the key: the server's text is dropped for 401, and every message
 *   goes through `Secrets.scrub` plus a mask for `sk-...` fragments that servers echo back.
 */
import { Duration, Effect, Option, Random, Redacted, Ref, Schedule } from "effect"
import type OpenAI from "openai"
import type { APIError } from "openai"
import { GatewayConfig, type ResolvedConfig } from "../../config/Config.js"
import { NotConfigured } from "../../protocol/Errors.js"
import { LlmRequestFailed } from "../Errors.js"
import * as Secrets from "../../observability/Secrets.js"
import * as Json from "../../json/Json.js"
import type { ChatRequest, ChatResponse, ChatToolCall, LlmService } from "./Chat.js"
import { isObject } from "../../json/Json.js"

type Sdk = typeof import("openai")
let sdk: Promise<Sdk> | undefined
/**
 * The `openai` package, loaded on the first LLM request: it costs ~12 MB and ~70 ms at start-up,
 * which a gateway used only for passthrough calls never needs.
 */
const loadSdk: Effect.Effect<Sdk> = Effect.promise(() => (sdk ??= import("openai")))

// ---------------------------------------------------------------------------------------------
// OpenAI layer options

export const DEFAULT_TIMEOUT_MS = 30_000
export const DEFAULT_MAX_RETRIES = 2
export const DEFAULT_MAX_RETRY_DELAY_MS = 10_000
export const OPENAI_BASE_URL = "https://api.openai.com/v1"

export interface OpenAIOptions {
  /** Per attempt, whole exchange. Default 30 s. */
  readonly timeoutMs?: number
  /** Retries after the first attempt on 408/409/429/5xx/connection failures. Default 2. */
  readonly maxRetries?: number
  /** The longest `Retry-After` worth waiting for; above it the request fails at once. Default 10 s. */
  readonly maxRetryDelayMs?: number
}

// ---------------------------------------------------------------------------------------------
// OpenAI

interface Endpoint {
  readonly baseUrl: string
  /** The base URL without its credentials, for messages. */
  readonly displayUrl: string
  readonly host: string
  /** "OpenAI", or "the LLM server at <host>" for any other endpoint. */
  readonly name: string
}

const endpointOf = (config: ResolvedConfig): Effect.Effect<Endpoint, LlmRequestFailed> => {
  const baseUrl = Option.getOrElse(config.openaiBaseUrl, () => OPENAI_BASE_URL)
  let url: URL
  try {
    url = new URL(baseUrl)
  } catch {
    return Effect.fail(
      new LlmRequestFailed({
        reason: "other",
        message: "The OpenAI base URL (OPENAI_BASE_URL / openaiBaseUrl) is not a valid URL"
      })
    )
  }
  const host = url.host
  // Credentials in the URL (`http://user:pass@host`) are sent, never shown.
  url.username = ""
  url.password = ""
  return Effect.succeed({
    baseUrl,
    displayUrl: url.href,
    host,
    name: host === "api.openai.com" ? "OpenAI" : `the LLM server at ${host}`
  })
}

const missingKey = (config: ResolvedConfig) =>
  new NotConfigured({
    missing: "OPENAI_API_KEY",
    message:
      "No OpenAI API key is configured. Set the OPENAI_API_KEY environment variable, pass " +
      "initializationOptions.OPENAI_API_KEY, or add OPENAI_API_KEY to the config file." +
      (Option.isSome(config.openaiBaseUrl)
        ? " A local OpenAI-compatible server that needs no key accepts any placeholder value."
        : " For a local OpenAI-compatible model (Ollama, llama.cpp, vLLM, or examples/fake-model.mjs) set OPENAI_BASE_URL " +
          "(e.g. http://127.0.0.1:11434/v1) and any placeholder key.")
  })

const keyHint: Record<ResolvedConfig["openaiApiKeySource"], string> = {
  env: "the OPENAI_API_KEY environment variable",
  dotenv: "OPENAI_API_KEY in the .env file",
  initializationOptions: "initializationOptions.OPENAI_API_KEY",
  file: "OPENAI_API_KEY in the config file",
  none: "OPENAI_API_KEY"
}

/** The service with the chosen timeout and retries; exported for apps that build their own layer. */
export const makeOpenAI = (options: OpenAIOptions = {}): Effect.Effect<LlmService, never, GatewayConfig> =>
  Effect.gen(function* () {
    const gateway = yield* GatewayConfig
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
    const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES
    const maxRetryDelayMs = options.maxRetryDelayMs ?? DEFAULT_MAX_RETRY_DELAY_MS

    // The SDK logs through `console` by default, and console.debug writes to stdout, which
    // carries protocol frames. Its lines go through the Effect logger instead.
    const context = yield* Effect.context<never>()
    const runLog = Effect.runSyncWith(context)
    const sdkLog =
      (log: (...message: ReadonlyArray<unknown>) => Effect.Effect<void>) =>
      (message: string, ...rest: Array<unknown>) =>
        runLog(Effect.annotateLogs(log(`openai: ${message}`, ...rest), "component", "openai"))
    const sdkLogger = {
      error: sdkLog(Effect.logError),
      warn: sdkLog(Effect.logWarning),
      info: sdkLog(Effect.logDebug),
      debug: sdkLog(Effect.logTrace)
    }

    const cache = yield* Ref.make<Option.Option<{ key: string; baseUrl: string; client: OpenAI }>>(Option.none())
    const clientFor = (sdk: Sdk, key: Redacted.Redacted<string>, baseUrl: string) =>
      Ref.modify(cache, (cached) => {
        const plain = Redacted.value(key)
        if (Option.isSome(cached) && cached.value.key === plain && cached.value.baseUrl === baseUrl) {
          return [cached.value.client, cached] as const
        }
        const client = new sdk.default({
          apiKey: plain,
          // Always explicit: otherwise the SDK falls back to process.env, bypassing the config.
          baseURL: baseUrl,
          // Retries and the timeout are ours (see the module doc); the SDK timeout is a backstop.
          maxRetries: 0,
          timeout: timeoutMs,
          logger: sdkLogger
        })
        return [client, Option.some({ key: plain, baseUrl, client })] as const
      })

    const attempt = (client: OpenAI, body: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming) =>
      Effect.tryPromise({
        try: (signal) => client.chat.completions.create(body, { signal }) as PromiseLike<unknown>,
        catch: (error) => error
      }).pipe(Effect.timeoutOrElse({ duration: timeoutMs, orElse: () => Effect.fail(new AttemptTimedOut()) }))

    /**
     * The retries of one request: 0.5 s doubling up to 8 s with 25 % jitter, or the wait the server
     * asked for; only while the failure is retryable and its asked wait is within `maxRetryDelayMs`.
     */
    const retries = Schedule.min([Schedule.exponential(Duration.millis(500)), Schedule.spaced(Duration.seconds(8))]).pipe(
      Schedule.setInputType<Classified>(),
      // 25 % jitter, downwards: each wait between 75 % and 100 % of the backoff.
      Schedule.modifyDelay(({ duration }) => Effect.map(Random.next, (random) => Duration.times(duration, 0.75 + 0.25 * random))),
      Schedule.modifyDelay(({ input, duration }) =>
        Effect.succeed(input.retryAfterMs === undefined ? duration : Duration.millis(input.retryAfterMs))
      ),
      Schedule.while(
        ({ input, attempt }) =>
          attempt <= maxRetries && input.retryable && (input.retryAfterMs === undefined || input.retryAfterMs <= maxRetryDelayMs)
      ),
      // Said only when it does retry: a step that gives up never reaches a tap after `while`.
      Schedule.tap(({ input, duration, attempt }) =>
        Effect.logInfo(
          `LLM request failed (${input.error.reason}), retrying in ${Math.round(Duration.toMillis(duration))} ms`
        ).pipe(Effect.annotateLogs({ attempt, maxRetries }))
      )
    )

    const withRetries = (
      send: Effect.Effect<unknown, unknown>,
      classify: (error: unknown) => Classified
    ): Effect.Effect<unknown, LlmRequestFailed> =>
      send.pipe(
        Effect.mapError(classify),
        Effect.retry(retries),
        Effect.mapError((failure) =>
          failure.retryable && failure.retryAfterMs !== undefined && failure.retryAfterMs > maxRetryDelayMs
            ? new LlmRequestFailed({
                reason: failure.error.reason,
                status: failure.error.status,
                message: `${failure.error.message} (the server asked to retry after ${Math.ceil(failure.retryAfterMs / 1000)} s)`
              })
            : failure.error
        )
      )

    const chat = Effect.fn("Llm.chat")(function* (request: ChatRequest) {
      const config = yield* gateway.current
      const key = yield* Option.match(config.openaiApiKey, {
        onNone: () => Effect.fail(missingKey(config)),
        onSome: Effect.succeed
      })
      const endpoint = yield* endpointOf(config)
      const sdk = yield* loadSdk
      const client = yield* clientFor(sdk, key, endpoint.baseUrl)
      const body = requestBody(config.model, request)
      yield* Effect.annotateCurrentSpan({ model: config.model, tools: request.tools.length, host: endpoint.host })
      yield* Effect.logDebug("LLM request").pipe(
        Effect.annotateLogs({ model: config.model, tools: request.tools.length, host: endpoint.host })
      )
      yield* Effect.logTrace("LLM request body", body)

      const completion = yield* withRetries(attempt(client, body), (error) =>
        classify(sdk, error, { endpoint, timeoutMs, keySource: config.openaiApiKeySource })
      )
      yield* Effect.logTrace("LLM response body", completion)
      const response = yield* parseCompletion(completion, endpoint)
      yield* Effect.logDebug("LLM response").pipe(
        Effect.annotateLogs({
          model: response.model ?? config.model,
          toolCalls: response.toolCalls.map((call) => call.name)
        })
      )
      return response
    }, Effect.withLogSpan("llm"))

    return { chat }
  })

const requestBody = (model: string, request: ChatRequest): OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming => ({
  model,
  messages: request.messages.map((m): OpenAI.Chat.Completions.ChatCompletionMessageParam => {
    switch (m.role) {
      case "assistant":
        return {
          role: "assistant",
          content: m.content,
          ...(m.toolCalls.length === 0
            ? {}
            : {
                tool_calls: m.toolCalls.map((call) => ({
                  id: call.id,
                  type: "function" as const,
                  function: { name: call.name, arguments: call.arguments }
                }))
              })
        }
      case "tool":
        return { role: "tool", tool_call_id: m.toolCallId, content: m.content }
      default:
        return { role: m.role, content: m.content }
    }
  }),
  ...(request.tools.length === 0
    ? {}
    : {
        tools: request.tools.map((tool) => ({
          type: "function" as const,
          function: {
            name: tool.function.name,
            ...(tool.function.description === undefined ? {} : { description: tool.function.description }),
            ...(tool.function.parameters === undefined ? {} : { parameters: tool.function.parameters })
          }
        })),
        tool_choice:
          request.toolChoice === undefined
            ? ("auto" as const)
            : { type: "function" as const, function: { name: request.toolChoice } }
      })
})

// ---------------------------------------------------------------------------------------------
// Errors

class AttemptTimedOut {
  readonly _tag = "AttemptTimedOut"
}

interface Classified {
  readonly error: LlmRequestFailed
  readonly retryable: boolean
  readonly retryAfterMs?: number
}

const MAX_DETAIL = 300

/** Servers echo part of a rejected key ("sk-proj-****abcd"); registered secrets go whole. */
const sanitize = (text: string): string => Secrets.scrub(text).replace(/\bsk-[A-Za-z0-9_*.-]{3,}/g, "sk-<redacted>")

const detailOf = (text: string): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > MAX_DETAIL ? `${flat.slice(0, MAX_DETAIL)}...` : flat
}

const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

/** The server's own words: `error.message` of an OpenAI-style body, else the SDK's text. */
const serverMessage = (error: APIError): string => {
  const message = Json.stringField(error.error, "message")
  if (message !== undefined && message !== "") return detailOf(message)
  return detailOf(error.message.replace(/^\d{3}\s*/, ""))
}

/** The innermost cause's text: undici says "fetch failed", its cause says ECONNREFUSED. */
const rootCause = (error: unknown): string => {
  let current: unknown = error
  let text = error instanceof Error ? error.message : String(error)
  for (let depth = 0; depth < 5 && current instanceof Error && current.cause !== undefined; depth++) {
    current = current.cause
    if (current instanceof Error && current.message !== "") text = current.message
  }
  return detailOf(text)
}

const retryAfterMs = (headers: Headers | undefined): number | undefined => {
  const ms = headers?.get("retry-after-ms")
  if (ms) {
    const n = parseFloat(ms)
    if (!Number.isNaN(n)) return Math.max(0, n)
  }
  const after = headers?.get("retry-after")
  if (after) {
    const seconds = parseFloat(after)
    if (!Number.isNaN(seconds)) return Math.max(0, seconds * 1000)
    const date = Date.parse(after)
    if (!Number.isNaN(date)) return Math.max(0, date - Date.now())
  }
  return undefined
}

const isRetryableStatus = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500

const classify = (
  sdk: Sdk,
  error: unknown,
  context: { endpoint: Endpoint; timeoutMs: number; keySource: ResolvedConfig["openaiApiKeySource"] }
): Classified => {
  const { endpoint, timeoutMs } = context
  const who = capitalize(endpoint.name)
  const fail = (
    reason: LlmRequestFailed["reason"],
    message: string,
    extra: { status?: number; retryable?: boolean; retryAfterMs?: number | undefined } = {}
  ): Classified => ({
    error: new LlmRequestFailed({
      reason,
      message: sanitize(message),
      ...(extra.status === undefined ? {} : { status: extra.status })
    }),
    retryable: extra.retryable ?? false,
    ...(extra.retryAfterMs === undefined ? {} : { retryAfterMs: extra.retryAfterMs })
  })

  const timedOut = () => fail("timeout", `${who} did not answer within ${Duration.format(Duration.millis(timeoutMs))}`)
  if (error instanceof AttemptTimedOut || error instanceof sdk.APIConnectionTimeoutError) return timedOut()
  if (error instanceof sdk.APIConnectionError) {
    return fail("network", `Could not reach ${endpoint.name} (${endpoint.displayUrl}): ${rootCause(error)}`, {
      retryable: true
    })
  }
  if (error instanceof sdk.APIError && typeof error.status === "number") {
    const status = error.status
    const shouldRetry = error.headers?.get("x-should-retry")
    const retryable = shouldRetry === "true" ? true : shouldRetry === "false" ? false : isRetryableStatus(status)
    const after = retryAfterMs(error.headers)
    if (status === 401) {
      // The body of a 401 quotes part of the key; it is left out.
      return fail("auth", `${who} rejected the API key (401); check ${keyHint[context.keySource]}`, { status })
    }
    if (status === 403) {
      return fail("auth", `${who} refused the request (403): ${serverMessage(error)}`, { status })
    }
    if (status === 429) {
      const quota = error.code === "insufficient_quota"
      return fail(
        "rate_limit",
        `${who} ${quota ? "reports the account's quota exhausted" : "is rate limiting requests"} (429): ${serverMessage(error)}`,
        { status, retryable: retryable && !quota, retryAfterMs: after }
      )
    }
    if (status >= 500) {
      return fail("server", `${who} failed with a server error (${status}): ${serverMessage(error)}`, {
        status,
        retryable,
        retryAfterMs: after
      })
    }
    if (status === 408) return { ...timedOut(), retryable, ...(after === undefined ? {} : { retryAfterMs: after }) }
    return fail("other", `${who} rejected the request (${status}): ${serverMessage(error)}`, {
      status,
      retryable,
      retryAfterMs: after
    })
  }
  if (error instanceof SyntaxError) {
    return fail("bad_response", `${who} returned a body that is not JSON: ${detailOf(error.message)}`)
  }
  return fail("other", `The request to ${endpoint.name} failed: ${rootCause(error)}`)
}

// ---------------------------------------------------------------------------------------------
// Responses

/**
 * Reads a completion by hand: the body comes from whatever server the base URL names, so
 * nothing about it is trusted. Compatible servers differ in small ways that are accepted:
 * arguments sent as an object rather than JSON text, a tool call without an id.
 */
/**
 * Tool calls written as text in the Hermes/Qwen form; undefined unless every block is a call (a
 * model quoting the syntax in prose is not calling anything).
 */
const TOOL_CALL_BLOCK = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g
const textToolCalls = (text: string): { readonly calls: Array<ChatToolCall>; readonly rest: string } | undefined => {
  const calls: Array<ChatToolCall> = []
  for (const [, json] of text.matchAll(TOOL_CALL_BLOCK)) {
    let call: unknown
    try {
      call = JSON.parse(json!)
    } catch {
      return undefined
    }
    if (!isObject(call) || typeof call.name !== "string" || call.name === "") return undefined
    const args = call.arguments ?? call.parameters
    calls.push({
      id: `call_text_${calls.length}`,
      name: call.name,
      arguments: typeof args === "string" ? args : args === undefined || args === null ? "{}" : JSON.stringify(args)
    })
  }
  return calls.length === 0 ? undefined : { calls, rest: text.replace(TOOL_CALL_BLOCK, "").trim() }
}

const parseCompletion = (body: unknown, endpoint: Endpoint): Effect.Effect<ChatResponse, LlmRequestFailed> => {
  const bad = (what: string) =>
    Effect.fail(
      new LlmRequestFailed({
        reason: "bad_response",
        message: sanitize(`${capitalize(endpoint.name)} returned a malformed Chat Completion: ${what}`)
      })
    )
  if (typeof body === "string") return bad(`expected a JSON object, got text "${detailOf(body).slice(0, 80)}"`)
  if (!isObject(body)) return bad(`expected a JSON object, got ${body === null ? "null" : typeof body}`)
  const choices = body.choices
  if (!Array.isArray(choices) || choices.length === 0) return bad("no choices")
  const message = isObject(choices[0]) ? choices[0].message : undefined
  if (!isObject(message)) return bad("choices[0].message is missing")

  const rawCalls = message.tool_calls ?? []
  if (!Array.isArray(rawCalls)) return bad("choices[0].message.tool_calls is not an array")
  const toolCalls: Array<ChatToolCall> = []
  for (const [i, call] of rawCalls.entries()) {
    // Custom (free-form) tool calls are never offered, so only function calls count.
    if (isObject(call) && call.type !== undefined && call.type !== "function") continue
    const fn = isObject(call) ? call.function : undefined
    if (!isObject(fn) || typeof fn.name !== "string" || fn.name === "") {
      return bad(`choices[0].message.tool_calls[${i}] has no function name`)
    }
    const args = fn.arguments
    toolCalls.push({
      id: isObject(call) && typeof call.id === "string" && call.id !== "" ? call.id : `call_${i}`,
      name: fn.name,
      arguments: typeof args === "string" ? args : args === undefined || args === null ? "{}" : JSON.stringify(args)
    })
  }
  let content =
    typeof message.content === "string" ? message.content : typeof message.refusal === "string" ? message.refusal : null
  // Local servers without a tool-call parser for their model (Hermes, Qwen) leave the calls in the
  // text: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, one block per call.
  if (toolCalls.length === 0 && content !== null && content.includes("<tool_call>")) {
    const written = textToolCalls(content)
    if (written !== undefined) {
      toolCalls.push(...written.calls)
      content = written.rest === "" ? null : written.rest
    }
  }
  const usage = isObject(body.usage) ? body.usage : undefined
  const count = (u: unknown) => (typeof u === "number" && Number.isFinite(u) ? u : 0)
  return Effect.succeed({
    toolCalls,
    content,
    ...(typeof body.model === "string" ? { model: body.model } : {}),
    ...(usage === undefined
      ? {}
      : {
          usage: {
            promptTokens: count(usage.prompt_tokens),
            completionTokens: count(usage.completion_tokens),
            totalTokens: count(usage.total_tokens)
          }
        })
  })
}
