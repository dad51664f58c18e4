/**
 * The turn loop of one orchestration (tools mode): the model is asked, its calls run (concurrently
 * when it made several), their results go back to it as tool messages, until it answers in text or
 * `maxSteps` turns were taken. The last tool result is the result, with the steps and the model's
 * answer in `_meta`.
 *
 * A run's state (the conversation, the steps, the one repair, the bound on a turn's calls told
 * once, the dry run, the tokens, what the model read) is one `Loop`, each part of a turn a method.
 */
import { Effect, Result } from "effect"
import { BackendError } from "../protocol/Errors.js"
import { isCallToolResult, resultText } from "../protocol/Mcp.js"
import type { OrchestrationStep } from "../observability/Events.js"
import * as Secrets from "../observability/Secrets.js"
import { objectField } from "../json/Json.js"
import * as Meta from "../json/Meta.js"
import * as Arguments from "./Arguments.js"
import { InvalidPlan, NoActionDetermined } from "./Errors.js"
import * as Intent from "./Intent.js"
import type { ChatMessage, ChatResponse, ChatTool, ChatToolCall, LlmClient } from "./model/Llm.js"
import { type Offer, parseArguments, type Plan, requiredProperties, SEARCH_TOOL } from "./Offer.js"
import type * as Call from "./Planned.js"
import { runStep } from "./Planned.js"
import type { CallRefused, Confirm, Decision, FlowFacts, Keeping } from "../call/Vocabulary.js"
import * as Planning from "./Planning.js"
import type { Prepared, Recording } from "./Prepare.js"
import * as Provenance from "./Provenance.js"
import * as Results from "./Results.js"
import {
  addUsage,
  agreedToRun,
  boundTold,
  declinedResult,
  dryRunRefused,
  dryRunResult,
  inTurn,
  needsConfirmation,
  noAction,
  notRun as notRunOf,
  type OnStep,
  type StepRecord,
  tooManyCalls,
  type TurnCall,
  type TurnOutcome,
  withSteps,
  withStepsRan
} from "./Steps.js"

/** One model turn; the first is what the debug UI's record shows. */
export const ask = (
  llm: LlmClient["Service"],
  query: string,
  messages: ReadonlyArray<ChatMessage>,
  offer: Offer | ReadonlyArray<ChatTool>,
  record?: Recording,
  results?: Results.Results
) =>
  Effect.gen(function* () {
    const asked = Date.now()
    // Reading on is offered once a result was cut.
    const offered = "functions" in offer ? offer.functions() : offer
    const tools = results?.anyKept() ? [...offered, Results.readResultFunction] : offered
    const response = yield* llm.chat({ query, messages: [...messages], tools })
    if (record !== undefined) {
      record.llmMs = (record.llmMs ?? 0) + (Date.now() - asked)
      record.model = response.model
      record.usage = addUsage(record.usage, response.usage)
      if (record.choice === undefined) {
        record.explanation = response.content
        const first = response.toolCalls.find((c) => c.name !== Planning.PLAN_FUNCTION)
        if (first !== undefined) record.choice = { name: first.name, arguments: first.arguments }
      }
    }
    return response
  })

/** The model's call resolved to a backend call, or why it cannot run. */
export const planCall = (offer: Offer, call: ChatToolCall, record?: Recording) =>
  Effect.gen(function* () {
    const args = yield* Effect.fromResult(parseArguments(call.name, call.arguments))
    const chosen = yield* Effect.fromResult(offer.plan(call.name, args))
    if (chosen.inputSchema !== undefined) {
      const callArgs = objectField(chosen.mcpParams, "arguments") ?? {}
      // Uncheckable schema: at least its required properties (own ones: not `toString`).
      const problems =
        (yield* Arguments.check(chosen.functionName, chosen.inputSchema, callArgs)) ??
        requiredProperties(chosen.inputSchema)
          .filter((p) => !Object.hasOwn(callArgs, p))
          .map((p) => `(root): must have required property '${p}'`)
      if (problems.length > 0) {
        return yield* new InvalidPlan({
          message: `The model's arguments for '${call.name}' do not fit its inputSchema: ${problems.join("; ")}`,
          toolName: call.name,
          arguments: args,
          problems
        })
      }
    }
    yield* Effect.logInfo("orchestration plan", { backendId: chosen.backendId, method: chosen.mcpMethod, tool: call.name })
    yield* Effect.logDebug("orchestration arguments", { arguments: args })
    if (record !== undefined && record.plan === undefined) {
      record.plan = { backendId: chosen.backendId, method: chosen.mcpMethod, params: chosen.mcpParams }
    }
    return { chosen, args }
  })

/** What one run works with: the prepared request, and how its calls run for its caller. */
export interface Run extends Omit<Prepared, "code"> {
  readonly llm: LlmClient["Service"]
  readonly callPlanned: Call.RunPlanned
  readonly onStep: OnStep | undefined
  readonly confirm: Confirm | undefined
  readonly record: Recording | undefined
}

class Loop {
  current = 0
  plan: Planning.PlanOf | undefined
  readonly steps: Array<StepRecord> = []
  last: { readonly result: unknown; readonly chosen: Plan } | undefined
  answer: string | undefined
  dry: Plan | undefined
  dryRefused: InvalidPlan | undefined
  /** A turn whose calls could not run, told to the model once so that it may correct them. */
  invalid: InvalidPlan | undefined
  repaired = false
  /** Tokens over every turn, when the endpoint says. */
  usage: ChatResponse["usage"] = undefined
  /** Whether the model was told that its turn made more calls than `maxCallsPerTurn`. */
  toldBound = false
  /**
   * What the model reads, indexed as it reads it: where each later call's values came from; and
   * the functions it named from the request alone, before reading anything.
   */
  readonly ledger: Provenance.Ledger
  /** The plan travels with the first turn (agentify_plan offered beside the tools): none with flowGuard "off", a single shot or a dry run. */
  readonly planTool: ChatTool | undefined
  readonly plannable: ReadonlySet<string>
  /** What the request itself asks to keep or pass on of what it reads (see Intent). */
  readonly keeps: Keeping | undefined
  readonly agreed: ReturnType<typeof agreedToRun>

  constructor(readonly run: Run) {
    this.ledger = new Provenance.Ledger(run.messages.map((m) => m.content ?? "").join("\n"))
    this.planTool = run.maxSteps > 1 && !run.dryRun && run.flowGuard !== "off" ? Planning.planFunctionWith(run.index) : undefined
    this.plannable = new Set(run.plannable)
    this.keeps = Intent.keeping(run.query)
    this.agreed = agreedToRun(run.confirmTools, run.confirm)
  }

  /** For the debug UI: each call of each step as it went. */
  note(entry: OrchestrationStep) {
    if (this.run.record !== undefined) this.run.record.steps = [...(this.run.record.steps ?? []), entry]
  }

  /** A search the model asked for: answered here, its finds offered from the next turn on. */
  searched(call: ChatToolCall, args: Record<string, unknown>) {
    return Effect.sync((): TurnOutcome => {
      const wanted = typeof args.query === "string" ? args.query : ""
      const found = wanted.trim() === "" || this.run.offer.search === undefined ? [] : this.run.offer.search(wanted)
      this.steps.push({ tool: SEARCH_TOOL, arguments: Secrets.scrubArguments(args), isError: false, ms: 0 })
      this.note({
        step: this.current,
        tool: SEARCH_TOOL,
        arguments: args,
        outcome: "search",
        ms: 0,
        detail: found.map((t) => t.name).join(", ") || "nothing found"
      })
      const content =
        found.length === 0
          ? "No further tools match; use the functions already offered, or answer that none fits."
          : JSON.stringify({ tools: found })
      return { call, content, ran: undefined }
    })
  }

  /** `agentify_read_result`: more of a result that was cut, answered here. */
  readOn(call: ChatToolCall, args: Record<string, unknown>) {
    const { results } = this.run
    return Effect.gen({ self: this }, function* () {
      this.steps.push({ tool: Results.READ_RESULT_TOOL, arguments: Secrets.scrubArguments(args), isError: false, ms: 0 })
      this.note({ step: this.current, tool: Results.READ_RESULT_TOOL, arguments: args, outcome: "search", ms: 0 })
      const text = results.read(args)
      // Read on, it is read: indexed as coming from the result it is part of.
      const source = results.sourceOf(args)
      if (source !== undefined) yield* this.ledger.record(source, text)
      return { call, content: results.asData(text), ran: undefined } satisfies TurnOutcome
    })
  }

  /** A call the gateway answers itself: a search, or reading on. */
  answeredHere(call: ChatToolCall): boolean {
    return (
      (call.name === SEARCH_TOOL && this.run.offer.search !== undefined) ||
      (call.name === Results.READ_RESULT_TOOL && this.run.results.anyKept())
    )
  }

  /**
   * A turn with more calls than `maxCallsPerTurn`: none of them runs (not even their arguments are
   * read: a model's fan-out of thousands must cost nothing). The model is told once and may try
   * again with fewer; a second such turn, or one with no turn left after it, is -32003.
   */
  overBound(step: number, response: ChatResponse) {
    const { maxCallsPerTurn, maxSteps, dryRun, messages } = this.run
    return Effect.gen({ self: this }, function* () {
      const made = response.toolCalls.length
      const refusal = tooManyCalls(response, maxCallsPerTurn)
      if (this.toldBound || step === maxSteps || dryRun) return yield* refusal
      this.toldBound = true
      yield* Effect.logWarning("orchestration: the model made more calls in one turn than allowed; none ran", {
        calls: made,
        maxCallsPerTurn
      })
      this.note({
        step,
        tool: response.toolCalls[0]?.name ?? "",
        arguments: { calls: made },
        outcome: "invalid",
        ms: 0,
        detail: refusal.message
      })
      messages.push(...boundTold(response, maxCallsPerTurn))
      return "more" as const
    })
  }

  /**
   * The first turn with the plan offered: everything it calls was chosen before any data (the plan,
   * with what agentify_plan named; the tools agentify_plan names join the offer). Its calls other
   * than the plan, or "more" when it made only the plan (noted, and the model goes on).
   */
  planned(asked: ChatResponse): Effect.Effect<ChatResponse | "more"> {
    const { offer, messages } = this.run
    return Effect.gen({ self: this }, function* () {
      this.plan = Planning.fromFirstTurn(asked.toolCalls, this.plannable)
      const added = offer.follow?.(Planning.namedIn(asked.toolCalls, this.plannable)) ?? []
      if (added.length > 0) yield* Effect.logDebug("the plan widened the offer", { added })
      const planCalls = asked.toolCalls.filter((c) => c.name === Planning.PLAN_FUNCTION)
      const response = { ...asked, toolCalls: asked.toolCalls.filter((c) => c.name !== Planning.PLAN_FUNCTION) }
      if (planCalls.length === 0 || response.toolCalls.length > 0) return response
      messages.push({ role: "assistant", content: asked.content, toolCalls: planCalls })
      for (const c of planCalls) messages.push({ role: "tool", toolCallId: c.id, content: "Plan noted: make the calls." })
      return "more" as const
    })
  }

  /**
   * A turn with an invalid call: one repair turn per orchestration, when a step is left for it: the
   * model reads what is wrong with each call (nothing of the turn runs) and may call again.
   */
  repair(
    step: number,
    response: ChatResponse,
    checked: ReadonlyArray<Result.Result<TurnCall, InvalidPlan>>,
    refused: InvalidPlan
  ) {
    const { dryRun, maxSteps, messages, results } = this.run
    return Effect.gen({ self: this }, function* () {
      if (dryRun) {
        this.dryRefused = refused
        return "done" as const
      }
      if (this.repaired || step === maxSteps) return yield* refused
      this.repaired = true
      this.invalid = refused
      for (const outcome of checked) {
        if (Result.isFailure(outcome)) {
          const { toolName, arguments: given, message } = outcome.failure
          this.note({ step, tool: toolName, arguments: given, outcome: "invalid", ms: 0, detail: message })
        }
      }
      yield* Effect.logInfo("orchestration: the model's call is invalid, asking it to correct it", { problem: refused.message })
      messages.push({ role: "assistant", content: response.content, toolCalls: results.replayed(response.toolCalls) })
      checked.forEach((outcome, i) =>
        messages.push({
          role: "tool",
          toolCallId: response.toolCalls[i]?.id ?? "",
          content: Result.isFailure(outcome)
            ? `Not run: ${outcome.failure.message}. Correct the call and make it again.`
            : "Not run: another call of this turn was invalid. Make it again if it is still needed."
        })
      )
      return "more" as const
    })
  }

  /** A call that did not run: the user declined it, or the flow guard held it. */
  notRun(step: number, call: ChatToolCall, tool: string, args: unknown, why: { held: string } | "declined") {
    return Effect.sync((): TurnOutcome => {
      const told = notRunOf(tool, args, why)
      this.steps.push(told.record)
      this.note({ step, tool, arguments: args, outcome: told.outcome, ms: 0, detail: told.detail })
      return { call, content: told.content, ran: undefined }
    })
  }

  /** One planned call of a turn, run for the caller through the pipeline (a tool call, or another request of the allow-list). */
  runPlanned(step: number, { call, args, planned }: TurnCall & { planned: NonNullable<TurnCall["planned"]> }, flow: FlowFacts) {
    const { callPlanned, results } = this.run
    const { chosen } = planned
    return Effect.gen({ self: this }, function* () {
      const started = Date.now()
      const decisions: Array<Decision> = []
      const result = yield* runStep(callPlanned, chosen, args, flow, decisions)
      const isError = isCallToolResult(result) && result.isError === true
      const ms = Date.now() - started
      this.steps.push({ tool: chosen.functionName, arguments: Secrets.scrubArguments(args), isError, ms })
      // A call that ran once the user agreed (to a hold, or to confirmTools) is told apart from one that needed no one.
      const agreed = decisions.find((d) => d.stage === "ask" && d.refused !== true && d.said.startsWith("the user agreed"))
      this.note({
        step,
        tool: chosen.functionName,
        arguments: args,
        outcome: isError ? "error" : agreed === undefined ? "ok" : "approved",
        ms,
        ...(agreed === undefined ? {} : { detail: agreed.said })
      })
      const source = { backendId: chosen.backendId, tool: chosen.functionName, arguments: args }
      const content = results.toolMessage(result, source)
      yield* this.ledger.record(source, content)
      return { call, content: results.asData(content), ran: { chosen, result } } satisfies TurnOutcome
    }).pipe(
      Effect.catchTag("CallHeld", (held) =>
        this.notRun(step, call, chosen.functionName, args, held.rules.length === 0 ? "declined" : { held: held.message })
      )
    )
  }

  /** A turn's checked calls, run (asked about first when they are not tool calls), their results told to the model. */
  runTurn(step: number, response: ChatResponse, calls: ReadonlyArray<TurnCall>) {
    const { onStep, maxSteps, messages, results } = this.run
    return Effect.gen({ self: this }, function* () {
      // A tool call is asked about once, in the call pipeline, naming every reason; another
      // request (`routing: "backend"`) is asked for here, one after the other, before the turn runs.
      const decisions = yield* Effect.forEach(calls, (c) =>
        c.planned?.chosen.mcpMethod === "tools/call" ? Effect.succeed("run" as const) : this.agreed(c)
      )
      if (onStep !== undefined) {
        yield* onStep(
          step,
          maxSteps,
          calls.map((c) => c.planned?.chosen.functionName ?? SEARCH_TOOL)
        )
      }
      // Where each call's values came from, as of what the model had read when it made them.
      const read = [...this.ledger.read]
      const flowOf = (args: unknown): FlowFacts => ({
        read,
        origins: this.ledger.originsOf(args),
        plan: this.plan?.tools ?? [],
        keeps: this.keeps
      })
      const outcomes = yield* inTurn(
        calls,
        (turnCall, i): Effect.Effect<TurnOutcome, BackendError | InvalidPlan | CallRefused> => {
          const { call, args, planned } = turnCall
          if (planned === undefined)
            return call.name === Results.READ_RESULT_TOOL ? this.readOn(call, args) : this.searched(call, args)
          if (decisions[i] === "declined") return this.notRun(step, call, planned.chosen.functionName, args, "declined")
          return this.runPlanned(step, { ...turnCall, planned }, flowOf(args))
        }
      )
      messages.push({ role: "assistant", content: response.content, toolCalls: results.replayed(response.toolCalls) })
      for (const { call, content } of outcomes) messages.push({ role: "tool", toolCallId: call.id, content })
      this.last = [...outcomes].reverse().find((o) => o.ran !== undefined)?.ran ?? this.last
      return "more" as const
    })
  }

  /** One model turn and the calls it made; "done" when the model answered without calling. */
  turn(step: number) {
    const { llm, query, messages, offer, record, results, maxSteps, maxCallsPerTurn, dryRun } = this.run
    return Effect.gen({ self: this }, function* () {
      this.current = step
      const first = step === 1 && this.planTool !== undefined
      const asked = yield* ask(
        llm,
        query,
        messages,
        first && this.planTool ? [...offer.functions(), this.planTool] : offer,
        record,
        results
      )
      this.usage = addUsage(this.usage, asked.usage)
      const response = first ? yield* this.planned(asked) : asked
      if (response === "more") return response
      if (response.toolCalls.length === 0) {
        // It gave up on correcting its call: that call's problem is the answer.
        if (this.last === undefined && this.invalid !== undefined) return yield* this.invalid
        // The user declined what it wanted to run, and it answered: that is the answer.
        if (this.last === undefined && !this.steps.some((s) => s.declined === true)) return yield* noAction(query, response)
        this.answer = response.content ?? undefined
        return "done" as const
      }
      // The seed's single shot: exactly one call.
      if (maxSteps === 1 && response.toolCalls.length !== 1) return yield* noAction(query, response)
      if (response.toolCalls.length > maxCallsPerTurn) return yield* this.overBound(step, response)
      const checked = yield* Effect.forEach(response.toolCalls, (call) =>
        Effect.result(
          this.answeredHere(call)
            ? Effect.map(Effect.fromResult(parseArguments(call.name, call.arguments)), (args): TurnCall => ({
                call,
                args,
                planned: undefined
              }))
            : Effect.map(planCall(offer, call, record), (planned): TurnCall => ({ call, args: planned.args, planned }))
        )
      )
      const calls = Result.all(checked)
      if (Result.isFailure(calls)) return yield* this.repair(step, response, checked, calls.failure)
      this.invalid = undefined
      const firstCall = calls.success.find((c) => c.planned !== undefined)?.planned
      if (dryRun && firstCall !== undefined) {
        this.dry = firstCall.chosen
        return "done" as const
      }
      return yield* this.runTurn(step, response, calls.success)
    }).pipe(Effect.withSpan("Orchestrator.step", { attributes: { "agentify.step": step } }))
  }

  /** After the last turn: the last result, with the steps and the model's answer; or why there is none. */
  finish() {
    const { query, maxSteps, dryRun, confirmTools } = this.run
    const { steps, answer, usage, last, plan } = this
    return Effect.gen({ self: this }, function* () {
      if (this.dry !== undefined) return dryRunResult(this.dry, needsConfirmation(confirmTools, this.dry.annotations), usage)
      if (this.dryRefused !== undefined) return dryRunRefused(this.dryRefused)
      // Nothing ran because the user said no: their decision, with the model's words on it.
      if (last === undefined && !dryRun && steps.some((s) => s.declined === true)) return declinedResult(steps, answer, usage)
      // Every turn only searched (or, dry, never planned a call): nothing ran.
      if (last === undefined || dryRun) {
        return yield* new NoActionDetermined({ query, toolCalls: 0, modelMessage: `no tool was called within ${maxSteps} steps` })
      }
      const { result, chosen } = last
      if (isCallToolResult(result) && result.isError === true) {
        const text = resultText(result)
        return yield* new BackendError({
          backendId: chosen.backendId,
          reason: "tool_error",
          method: chosen.mcpMethod,
          summary: text.length > 0 ? text : "the tool reported an error",
          detail: result,
          steps
        })
      }
      const done = withSteps(result, steps, answer, usage)
      return plan === undefined ? done : Meta.merge(done, { "agentify/plan": plan })
    })
  }
}

/** Runs the loop to its end (see the module's doc). */
export const run = (settings: Run) =>
  Effect.gen(function* () {
    const loop = new Loop(settings)
    for (let step = 1; step <= settings.maxSteps; step++) {
      if ((yield* loop.turn(step).pipe(Effect.mapError((error) => withStepsRan(error, loop.steps)))) === "done") break
    }
    return yield* loop.finish()
  })
