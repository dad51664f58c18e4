/**
 * The plan comes from the request: before the model reads any data it names the functions its
 * task needs, in a first turn the gateway makes it give (`tool_choice` forces `agentify_plan`).
 * After the model has read a result, a call outside the plan is held for the user's consent (the
 * flow guard's `outside-plan` rule). An endpoint that refuses a forced function is asked again
 * with the instruction in the system prompt; a model that gives no plan even then has none, and
 * every call it makes after reading a result is held.
 */
import { Effect } from "effect"
import type { ChatMessage, ChatTool, LlmError, LlmService } from "./Chat.js"

export const PLAN_FUNCTION = "agentify_plan"

/** `agentify_plan {tools, why}`: part of the gateway's contract with its model. */
export const planFunction: ChatTool = {
  type: "function",
  function: {
    name: PLAN_FUNCTION,
    description:
      "Before anything runs: name every function this request needs (by the names offered; where a function is a backend, each of its tools as <backend>__<tool>), and why. Only the request decides the plan: calls outside it, made after reading results, need the user's consent.",
    parameters: {
      type: "object",
      properties: {
        tools: { type: "array", items: { type: "string" }, description: "The functions the request needs." },
        why: { type: "string", description: "One sentence: how they accomplish the request." }
      },
      required: ["tools"]
    }
  }
}

const ASK_IN_PROMPT =
  "First, before calling anything else, call agentify_plan with the functions this request needs (tools) and why. Call nothing else in this turn."

/** What a plan turn gave: the functions named (those offered), and why. */
export interface PlanOf {
  readonly tools: ReadonlyArray<string>
  readonly why?: string | undefined
}

const planIn = (calls: ReadonlyArray<{ readonly name: string; readonly arguments: string }>, offered: ReadonlySet<string>) => {
  const call = calls.find((c) => c.name === PLAN_FUNCTION)
  if (call === undefined) return undefined
  try {
    const args = JSON.parse(call.arguments) as { tools?: unknown; why?: unknown }
    const tools = Array.isArray(args.tools) ? args.tools.filter((t): t is string => typeof t === "string" && offered.has(t)) : []
    return { tools, ...(typeof args.why === "string" ? { why: args.why } : {}) }
  } catch {
    return { tools: [] }
  }
}

/** An endpoint that refuses a forced function answers 400 or 422 (a compatible server without `tool_choice`). */
const refusedForcing = (error: LlmError): boolean =>
  error._tag === "LlmRequestFailed" && (error.status === 400 || error.status === 422)

/**
 * Asks for the plan: the request's conversation as it stands (before any result), the offered
 * functions and `agentify_plan`, forced. Undefined when the model gives none; any other failure of
 * the model's endpoint fails the orchestration as a turn's would.
 */
export const ask = (
  llm: LlmService,
  query: string,
  messages: ReadonlyArray<ChatMessage>,
  functions: ReadonlyArray<ChatTool>,
  plannable?: ReadonlyArray<string>,
  index?: string
): Effect.Effect<PlanOf | undefined, LlmError> => {
  // With backends offered (`routing: "backend"`) a plan names their tools, not the backends.
  const offered = new Set(plannable ?? functions.map((f) => f.function.name))
  // The tools not offered, by server, so that the plan may name any of them (they join the offer).
  const plan: ChatTool =
    index === undefined || index === ""
      ? planFunction
      : {
          ...planFunction,
          function: {
            ...planFunction.function,
            description: `${planFunction.function.description}\nOther tools you may name (they are offered once named), as <server>__<tool>:\n${index}`
          }
        }
  const tools = [...functions, plan]
  const inPrompt = Effect.suspend(() =>
    llm.chat({
      query,
      messages: [...messages.slice(0, 1), { role: "system", content: ASK_IN_PROMPT }, ...messages.slice(1)],
      tools
    })
  )
  return llm.chat({ query, messages, tools, toolChoice: PLAN_FUNCTION }).pipe(
    Effect.catchIf(refusedForcing, (error) =>
      Effect.zipRight(
        Effect.logInfo("the model's endpoint refused a forced plan; asking in the system prompt", { error: error.message }),
        inPrompt
      )
    ),
    Effect.map((response) => planIn(response.toolCalls, offered))
  )
}

/**
 * The plan turn of an orchestration that may read before it acts (not a single step, not a dry run);
 * `plannable`: what a plan may name (the tools listed, offered or not); `index`: the tools not
 * offered, compactly (see catalog/TaskRank's `compactIndex`), in `agentify_plan`'s description.
 */
export const turn = (
  llm: LlmService,
  query: string,
  messages: ReadonlyArray<ChatMessage>,
  functions: ReadonlyArray<ChatTool>,
  wanted: boolean,
  plannable?: ReadonlyArray<string>,
  index?: string
): Effect.Effect<PlanOf | undefined, LlmError> =>
  wanted
    ? ask(llm, query, messages, functions, plannable, index).pipe(Effect.withSpan("Orchestrator.planTurn"))
    : Effect.succeed(undefined)
