/**
 * The LLM service answering from rules (first match wins), for tests and for apps that embed the
 * gateway: no network, no key, and `ScriptedLlm` to see what was asked.
 */
import { Context, type Duration, Effect, Ref } from "effect"
import type { ChatRequest, ChatResponse, ChatToolCall, LlmError, LlmService } from "./Chat.js"

// ---------------------------------------------------------------------------------------------
// Scripted layer options

/** A substring of the query (case-insensitive), a pattern tested on the query, or a predicate. */
export type ScriptMatch = string | RegExp | ((request: ChatRequest) => boolean)

export type ScriptReply =
  /** One tool call. An object is JSON-stringified; a string is sent raw (to test invalid JSON). */
  | { readonly tool: string; readonly arguments?: unknown }
  | { readonly toolCalls: ReadonlyArray<{ readonly name: string; readonly arguments?: unknown }> }
  /** An answer without a tool call. */
  | { readonly text: string }
  | { readonly fail: LlmError }
  | ((request: ChatRequest) => Effect.Effect<ChatResponse, LlmError>)

export interface ScriptRule {
  readonly match: ScriptMatch
  readonly reply: ScriptReply
  /**
   * The orchestration step it answers: 1 (the default) is the first request, 2 the one after the
   * first tool results, ...; "any" answers every step. A step no rule answers gets the fallback
   * (by default no tool call and no text: the orchestration ends with the last tool result).
   * "plan" gives the plan (its reply an `agentify_plan` call) with a first turn that calls tools;
   * without such a rule that plan names every function offered.
   */
  readonly step?: number | "any" | "plan"
  /** Waits before replying; interruptible, so cancellation can be tested. */
  readonly delay?: Duration.Input
}

export interface ScriptedOptions {
  /** Reported as `ChatResponse.model`. Default "scripted". */
  readonly model?: string
  /** The reply when no rule matches. Default: no tool call and no text. */
  readonly fallback?: ScriptReply
  /** How many of the latest requests `ScriptedLlm.requests` keeps. Default 1,000. */
  readonly keepRequests?: number
  /** Called with every request before it is answered, for apps that are not Effect code. */
  readonly onRequest?: (request: ChatRequest) => void
}

/** The scripted layer's controls; `layerScripted` provides it beside `LlmClient`. */
export class ScriptedLlm extends Context.Service<
  ScriptedLlm,
  {
    /** The requests received so far (the latest `keepRequests`), oldest first. */
    readonly requests: Effect.Effect<ReadonlyArray<ChatRequest>>
    /** Replaces the rules for the requests that follow. */
    readonly setRules: (rules: ReadonlyArray<ScriptRule>) => Effect.Effect<void>
    /** Forgets the recorded requests. */
    readonly clear: Effect.Effect<void>
  }
>()("mcp-agentify/ScriptedLlm") {}

// ---------------------------------------------------------------------------------------------
// Scripted

/** Which step of an orchestration a request is: 1 + the model turns already in its conversation. */
export const stepOf = (request: ChatRequest): number => 1 + request.messages.filter((m) => m.role === "assistant").length

const PLAN = "agentify_plan"

/** A first turn that offers `agentify_plan` (see Planning): the model gives its plan with its calls. */
const plans = (request: ChatRequest): boolean => stepOf(request) === 1 && request.tools.some((t) => t.function.name === PLAN)

const matches = (rule: ScriptRule, request: ChatRequest): boolean =>
  rule.step !== "plan" && (rule.step === "any" || (rule.step ?? 1) === stepOf(request)) && matchesQuery(rule.match, request)

/** The plan a scripted model gives unless told otherwise: every function offered. */
const planEverything = (request: ChatRequest): { readonly name: string; readonly arguments: unknown } => ({
  name: PLAN,
  arguments: {
    tools: request.tools.map((t) => t.function.name).filter((name) => name !== PLAN),
    why: "scripted: every function offered"
  }
})

const matchesQuery = (match: ScriptMatch, request: ChatRequest): boolean =>
  typeof match === "string"
    ? request.query.toLowerCase().includes(match.toLowerCase())
    : match instanceof RegExp
      ? request.query.search(match) !== -1 // `search` ignores `lastIndex`, so a /g pattern is safe
      : match(request)

const stringifyArguments = (args: unknown): string => (typeof args === "string" ? args : JSON.stringify(args ?? {}))

/** The scripted service and its controls, for apps that assemble their own context. */
export const makeScripted = (
  rules: ReadonlyArray<ScriptRule>,
  options: ScriptedOptions = {}
): Effect.Effect<{ readonly client: LlmService; readonly control: ScriptedLlm["Service"] }> =>
  Effect.gen(function* () {
    const rulesRef = yield* Ref.make(rules)
    // Appended in place (copying per call would cost O(n²) over a long run), and bounded so an
    // app that embeds the scripted layer for long does not grow without limit.
    const recorded: Array<ChatRequest> = []
    const keep = options.keepRequests ?? 1_000
    const nextId = yield* Ref.make(0)
    const model = options.model ?? "scripted"

    const callId = Ref.getAndUpdate(nextId, (n) => n + 1).pipe(Effect.map((n) => `call_scripted_${n}`))
    const calls = (list: ReadonlyArray<{ readonly name: string; readonly arguments?: unknown }>) =>
      Effect.forEach(list, (call) =>
        Effect.map(callId, (id): ChatToolCall => ({ id, name: call.name, arguments: stringifyArguments(call.arguments) }))
      )

    const answer = (reply: ScriptReply, request: ChatRequest): Effect.Effect<ChatResponse, LlmError> => {
      if (typeof reply === "function") return reply(request)
      if ("fail" in reply) return Effect.fail(reply.fail)
      if ("text" in reply) return Effect.succeed({ toolCalls: [], content: reply.text, model })
      const list = "toolCalls" in reply ? reply.toolCalls : [{ name: reply.tool, arguments: reply.arguments }]
      return Effect.map(calls(list), (toolCalls) => ({ toolCalls, content: null, model }))
    }

    const chat = Effect.fn("Llm.chat")(function* (request: ChatRequest) {
      recorded.push(request)
      if (recorded.length > keep * 2) recorded.splice(0, recorded.length - keep)
      options.onRequest?.(request)
      const rule = (yield* Ref.get(rulesRef)).find((r) => matches(r, request))
      yield* Effect.logDebug("LLM request (scripted)").pipe(
        Effect.annotateLogs({ tools: request.tools.length, matched: rule !== undefined })
      )
      if (rule === undefined) {
        return options.fallback === undefined ? { toolCalls: [], content: null, model } : yield* answer(options.fallback, request)
      }
      if (rule.delay !== undefined) yield* Effect.sleep(rule.delay)
      const response = yield* answer(rule.reply, request)
      // A first turn that calls tools gives its plan with them: a "plan" rule's, else every function offered.
      if (!plans(request) || response.toolCalls.length === 0) return response
      const planRule = (yield* Ref.get(rulesRef)).find((r) => r.step === "plan" && matchesQuery(r.match, request))
      const reply = planRule?.reply
      const planned =
        reply !== undefined && typeof reply === "object" && "tool" in reply
          ? { name: reply.tool, arguments: reply.arguments }
          : planEverything(request)
      return { ...response, toolCalls: [...(yield* calls([planned])), ...response.toolCalls] }
    })

    return {
      client: { chat },
      control: {
        requests: Effect.sync(() => recorded.slice(-keep)),
        setRules: (next: ReadonlyArray<ScriptRule>) => Ref.set(rulesRef, next),
        clear: Effect.sync(() => {
          recorded.length = 0
        })
      }
    }
  })
