/**
 * The pieces of an orchestration's turns: what each call gave (for the model and for `_meta`), how
 * a turn's calls run together, the confirmation policy, and the results a run or a dry run returns.
 */
import { Effect, Semaphore } from "effect"
import * as Capabilities from "../catalog/Capabilities.js"
import type { ConfirmTools } from "../config/Config.js"
import * as Secrets from "../observability/Secrets.js"
import { BackendError } from "../protocol/Errors.js"
import { InvalidPlan, LlmRequestFailed, NoActionDetermined } from "./Errors.js"
import type { ChatMessage, ChatResponse, ChatToolCall } from "./model/Chat.js"
import type { Plan } from "./Offer.js"
import { field } from "../json/Json.js"
import * as Meta from "../json/Meta.js"
import type { Confirm } from "../call/Vocabulary.js"

/**
 * Whether `confirmTools` asks the user before this tool runs, by its annotations read with MCP's
 * defaults (a tool that says nothing may write and may destroy: see catalog/Capabilities).
 */
export const needsConfirmation = (mode: ConfirmTools, annotations: Readonly<Record<string, unknown>> | undefined): boolean => {
  if (mode === "never") return false
  const capabilities = Capabilities.of("", annotations, undefined)
  return mode === "destructive" ? capabilities.destructive : !capabilities.readOnly
}

/**
 * Whether a turn's call may run: asked of the user when `confirmTools` says so, before anything of
 * the turn runs. A client that cannot be asked makes the plan invalid, saying how to change that.
 */
export const agreedToRun =
  (confirmTools: ConfirmTools, confirm: Confirm | undefined) =>
  ({ planned, args }: TurnCall): Effect.Effect<"run" | "declined", InvalidPlan> => {
    if (planned === undefined || !needsConfirmation(confirmTools, planned.chosen.annotations)) return Effect.succeed("run")
    const tool = planned.chosen.functionName
    const asked =
      confirm === undefined ? Effect.succeed("unavailable" as const) : confirm({ tool, arguments: Secrets.scrubArguments(args) })
    return Effect.flatMap(asked, (answer) =>
      answer === "unavailable"
        ? Effect.fail(
            new InvalidPlan({
              message: `'${tool}' runs only after the user agrees (confirmTools: "${confirmTools}"), and this client cannot be asked (it declared no elicitation); confirmTools: "never" in the gateway's configuration runs it without asking`,
              toolName: tool,
              arguments: Secrets.scrubArguments(args)
            })
          )
        : Effect.succeed(answer === "accepted" ? ("run" as const) : ("declined" as const))
    )
  }

/** One step's call, as `_meta["agentify/steps"]` shows it (arguments scrubbed of secrets). */
export interface StepRecord {
  readonly tool: string
  readonly arguments: unknown
  readonly isError: boolean
  readonly ms: number
  /** The user declined to run it: it did not run. */
  readonly declined?: true
  /** The flow guard held it, and why: it did not run. */
  readonly held?: string
}

/** What a call that did not run leaves: the user declined it, or the flow guard held it (`held`: why). */
export const notRun = (tool: string, args: unknown, why: { readonly held: string } | "declined") => {
  const held = why === "declined" ? undefined : why.held
  const record: StepRecord = {
    tool,
    arguments: Secrets.scrubArguments(args),
    isError: true,
    ms: 0,
    ...(held === undefined ? { declined: true as const } : { held })
  }
  return {
    record,
    outcome: held === undefined ? ("declined" as const) : ("held" as const),
    detail: held,
    content:
      held === undefined
        ? `Not run: the user declined to run ${tool}. Do not call it again; answer without it.`
        : `${held} Do not call it again for this; answer with what you have.`
  }
}

/** One call of a turn: a search the gateway answers (`planned` undefined), or a planned backend call. */
export interface TurnCall {
  readonly call: ChatToolCall
  readonly args: Record<string, unknown>
  readonly planned: { readonly chosen: Plan; readonly args: Record<string, unknown> } | undefined
}

/** What a call of a turn gave: the tool message for the model, and the backend result if one ran. */
export interface TurnOutcome {
  readonly call: ChatToolCall
  readonly content: string
  readonly ran: { readonly chosen: Plan; readonly result: unknown } | undefined
}

/** How many calls of one turn run at once, whatever the model asked (`maxCallsPerTurn` bounds how many it may ask). */
export const MAX_CONCURRENT_CALLS = 8

/**
 * Runs a turn's calls: concurrently across backends, and on one backend concurrently only when
 * every call of the turn to it is annotated read-only; otherwise one after the other in the model's
 * order (servers are not all safe for concurrent writes: two concurrent `create_entities` on
 * server-memory keep only one). At most `MAX_CONCURRENT_CALLS` at once. The outcomes come back in
 * the calls' order.
 */
export const inTurn = <E>(
  calls: ReadonlyArray<TurnCall>,
  run: (call: TurnCall, i: number) => Effect.Effect<TurnOutcome, E>
): Effect.Effect<ReadonlyArray<TurnOutcome>, E> =>
  Effect.flatMap(Semaphore.make(MAX_CONCURRENT_CALLS), (permits) => inGroups(calls, (c, i) => permits.withPermits(1)(run(c, i))))

const inGroups = <E>(
  calls: ReadonlyArray<TurnCall>,
  run: (call: TurnCall, i: number) => Effect.Effect<TurnOutcome, E>
): Effect.Effect<ReadonlyArray<TurnOutcome>, E> => {
  const groups = new Map<string, Array<number>>()
  calls.forEach((c, i) => {
    const key = c.planned === undefined ? `search-${i}` : c.planned.chosen.backendId
    groups.set(key, [...(groups.get(key) ?? []), i])
  })
  const outcomes: Array<TurnOutcome> = []
  return Effect.forEach(
    groups.values(),
    (indices) =>
      Effect.forEach(indices, (i) => Effect.map(run(calls[i]!, i), (outcome) => void (outcomes[i] = outcome)), {
        concurrency: indices.every((i) => calls[i]!.planned?.chosen.annotations?.readOnlyHint === true) ? "unbounded" : 1
      }),
    { concurrency: "unbounded", discard: true }
  ).pipe(Effect.as(outcomes))
}

/** Told as each step starts: its number, the bound, the tools it calls (progress notifications). */
export type OnStep = (step: number, maxSteps: number, tools: ReadonlyArray<string>) => Effect.Effect<void>

/** The last result, unchanged but for what the orchestration adds to its `_meta`. */
export const withSteps = (
  result: unknown,
  steps: ReadonlyArray<StepRecord>,
  answer: string | undefined,
  usage: ChatResponse["usage"]
): unknown => {
  if (typeof result !== "object" || result === null || Array.isArray(result)) return result
  return Meta.merge(result, {
    "agentify/steps": steps,
    ...(answer === undefined || answer.trim() === "" ? {} : { "agentify/answer": answer }),
    ...(usage === undefined ? {} : { "agentify/usage": usage })
  })
}

/** -32003 for a turn with more calls than `maxCallsPerTurn`: none of them ran. */
export const tooManyCalls = (response: ChatResponse, maxCallsPerTurn: number): InvalidPlan => {
  const made = response.toolCalls.length
  return new InvalidPlan({
    message: `The model made ${made} tool calls in one turn, more than maxCallsPerTurn (${maxCallsPerTurn}) allows; none of them ran`,
    toolName: response.toolCalls[0]!.name,
    problems: [`${made} calls in one turn; maxCallsPerTurn is ${maxCallsPerTurn}`]
  })
}

/**
 * The model told, once, that its turn made too many calls. Its calls are not replayed: each would
 * need an answer, thousands of them.
 */
export const boundTold = (response: ChatResponse, maxCallsPerTurn: number): ReadonlyArray<ChatMessage> => {
  const made = response.toolCalls.length
  return [
    { role: "assistant", content: response.content ?? `(${made} tool calls, not run)`, toolCalls: [] },
    {
      role: "system",
      content: `None of your ${made} tool calls ran: one turn may make at most ${maxCallsPerTurn}. Make at most ${maxCallsPerTurn} calls, the most needed first; later turns can make more.`
    }
  ]
}

/**
 * Nothing ran because the user declined what the model wanted to run: an answer, not a failure. The
 * model's closing words follow (as `agentify/answer`), the declined tools are named.
 */
export const declinedResult = (
  steps: ReadonlyArray<StepRecord>,
  answer: string | undefined,
  usage: ChatResponse["usage"]
): unknown => {
  const declined = [...new Set(steps.filter((s) => s.declined === true).map((s) => s.tool))]
  return withSteps(
    {
      content: [{ type: "text", text: `Nothing ran: the user declined to run ${declined.join(", ")}.` }],
      structuredContent: { declined }
    },
    steps,
    answer,
    usage
  )
}

/**
 * A failure after some step ran carries the steps (`data.steps`): a client must learn that a file
 * was written even when the next model turn failed.
 */
export const withStepsRan = <E extends { readonly _tag: string }>(
  error: E,
  steps: ReadonlyArray<StepRecord>
): E | LlmRequestFailed | InvalidPlan | BackendError | NoActionDetermined => {
  if (steps.length === 0) return error
  if (error instanceof LlmRequestFailed) {
    return new LlmRequestFailed({ reason: error.reason, message: error.message, status: error.status, steps })
  }
  if (error instanceof InvalidPlan) {
    const { message, toolName, arguments: args, problems } = error
    return new InvalidPlan({ message, toolName, arguments: args, problems, steps })
  }
  if (error instanceof BackendError) {
    const { backendId, reason, summary, method, detail } = error
    return new BackendError({ backendId, reason, summary, method, detail, steps })
  }
  if (error instanceof NoActionDetermined) {
    return new NoActionDetermined({ query: error.query, modelMessage: error.modelMessage, toolCalls: error.toolCalls, steps })
  }
  return error
}

/** `dryRun`: the first planned call, run by nobody. */
export const dryRunResult = (chosen: Plan, needsConfirmation: boolean, usage: ChatResponse["usage"]) => {
  const plan = {
    tool: chosen.functionName,
    backendId: chosen.backendId,
    method: chosen.mcpMethod,
    arguments: Secrets.scrubArguments(chosen.mcpMethod === "tools/call" ? field(chosen.mcpParams, "arguments") : chosen.mcpParams)
  }
  return {
    content: [{ type: "text", text: `Would call ${plan.tool} with ${JSON.stringify(plan.arguments)} (dry run: nothing ran)` }],
    structuredContent: { dryRun: true, plan, valid: true, needsConfirmation },
    ...(usage === undefined ? {} : { _meta: { "agentify/usage": usage } })
  }
}

/** `dryRun` of a call that would not run: what the model planned, and why it is refused. */
export const dryRunRefused = (refused: InvalidPlan) => ({
  content: [{ type: "text", text: `Would not run: ${refused.message} (dry run: nothing ran)` }],
  structuredContent: {
    dryRun: true,
    plan: { tool: refused.toolName, arguments: Secrets.scrubArguments(refused.arguments) },
    valid: false,
    problems: refused.problems ?? [refused.message]
  }
})

export const noAction = (query: string, response: ChatResponse) =>
  new NoActionDetermined({
    query,
    toolCalls: response.toolCalls.length,
    ...(response.content ? { modelMessage: response.content } : {})
  })

export const addUsage = (a: ChatResponse["usage"], b: ChatResponse["usage"]): ChatResponse["usage"] =>
  a === undefined
    ? b
    : b === undefined
      ? a
      : {
          promptTokens: a.promptTokens + b.promptTokens,
          completionTokens: a.completionTokens + b.completionTokens,
          totalTokens: a.totalTokens + b.totalTokens
        }
