/**
 * Orchestration: a natural-language request becomes the backend calls that do it.
 *
 *   params -> tools offered to the model -> Chat Completions request -> plans -> checked plans
 *   -> backend calls -> their results back to the model -> ... -> its answer; the last result
 *
 * At most `maxSteps` model turns (a request's, else the config's; 1 is the single shot).
 *
 * Longer than most modules: the turn loop's state (the conversation, the steps, the one repair, the
 * bound on a turn's calls told once, the dry run, the tokens) is shared by every part of a turn.
 * What a request's run works with (its params checked, the offer, the conversation) is in `Prepare`;
 * what it offers and how a call becomes a plan are in `Offer`; the pieces of a turn (how its calls
 * run, what they give back) in `Steps`; what the model reads back in `Results`; what it is told in
 * `Prompts`; the code-mode loop in `CodeMode`.
 *
 * Each step fails with its own tagged error, so the code a client sees says which step failed:
 * -32602 params, -32002 not configured, -32003 LLM or plan, -32000 no action, -32004 backend.
 */
import { Context, Effect, Either, FiberRef, Layer, Option } from "effect"
import * as AuditRun from "../observability/AuditRun.js"
import { Backends } from "../backend/Backends.js"
import * as Call from "./Planned.js"
import { GatewayConfig, type Profile } from "../config/Config.js"
import { BackendError, type InvalidParams, type NotConfigured } from "../protocol/Errors.js"
import { type CallHeld, InvalidPlan, type LlmRequestFailed, NoActionDetermined } from "./Errors.js"
import { type ChatMessage, type ChatResponse, type ChatTool, type ChatToolCall, LlmClient } from "./Llm.js"
import * as Secrets from "../observability/Secrets.js"
import * as Arguments from "./Arguments.js"
import { isCallToolResult, resultText } from "../protocol/Mcp.js"
import { Events, none as noEvents, type OrchestrationStep } from "../observability/Events.js"

import { type Offer, parseArguments, type Plan, requiredProperties, SEARCH_TOOL } from "./Offer.js"
import {
  addUsage,
  type Confirm,
  declinedResult,
  dryRunRefused,
  dryRunResult,
  inTurn,
  agreedToRun,
  needsConfirmation,
  noAction,
  type OnStep,
  type StepRecord,
  boundTold,
  notRun as notRunOf,
  tooManyCalls,
  type TurnCall,
  type TurnOutcome,
  withSteps,
  withStepsRan
} from "./Steps.js"
import * as Results from "./Results.js"
import * as CodeMode from "./CodeMode.js"
import * as Provenance from "./Provenance.js"
import * as Planning from "./Planning.js"
import * as Intent from "./Intent.js"
import * as Prepare from "./Prepare.js"
import * as Meta from "../values/Meta.js"
import { objectField } from "../values/Json.js"

export { type Plan, SEARCH_TOOL } from "./Offer.js"
export { ORCHESTRATE_TOOL, SINGLE_STEP_PROMPT, SYSTEM_PROMPT, userMessage } from "./Prompts.js"
export { type Confirm, needsConfirmation, type OnStep, type StepRecord } from "./Steps.js"
import type { OrchestrateRequest } from "./Request.js"
export { type OrchestrateRequest, validateParams } from "./Request.js"

type Recording = Prepare.Recording

export type OrchestrationError =
  InvalidParams | NotConfigured | LlmRequestFailed | InvalidPlan | NoActionDetermined | BackendError

// ---------------------------------------------------------------------------------------------
// The service

/**
 * Runs a plan's request other than a tool call on a backend (`routing: "backend"`: a read, a
 * prompt, a listing; see Offer's MODEL_METHODS); `CallHeld` when the caller's policies refuse it.
 */
export type Execute = (backendId: string, method: string, params: unknown) => Effect.Effect<unknown, BackendError | CallHeld>

/** How an orchestration runs for its caller; each part optional. */
export interface RunOptions {
  /**
   * Runs each tool call through the call pipeline; the gateway runs it as the session's call.
   * Default: the pipeline of the orchestrator's context, as nobody's call.
   */
  readonly call?: Call.RunPlanned | undefined
  /** Runs a plan's other requests (`routing: "backend"` may name any method). Default: straight on the backend. */
  readonly execute?: Execute | undefined
  /** Told as each step starts (the gateway sends progress notifications). */
  readonly onStep?: OnStep | undefined
  /** Asks the user before a tool `confirmTools` gates runs; without it such a tool is refused. */
  readonly confirm?: Confirm | undefined
  /** The model sees and may call only the profile's tools. */
  readonly profile?: Profile | undefined
}

export class Orchestrator extends Context.Tag("mcp-agentify/Orchestrator")<
  Orchestrator,
  {
    /** Runs `{query, context}` to the last tool's result (unchanged, with the steps in `_meta`). */
    readonly orchestrate: (request: OrchestrateRequest, options?: RunOptions) => Effect.Effect<unknown, OrchestrationError>
    /** The plan the model makes for `{query, context}`, without running it. */
    readonly plan: (
      request: OrchestrateRequest,
      profile?: Profile
    ) => Effect.Effect<Plan, Exclude<OrchestrationError, BackendError> | BackendError>
  }
>() {
  static layer: Layer.Layer<Orchestrator, never, GatewayConfig | Backends | LlmClient | Call.PlannedCalls> = Layer.scoped(
    Orchestrator,
    Effect.gen(function* () {
      const gatewayConfig = yield* GatewayConfig
      const backends = yield* Backends
      const plannedCalls = yield* Call.PlannedCalls
      const llm = yield* LlmClient
      // Optional: an orchestrator built without the hub publishes nothing.
      const events = Option.getOrElse(yield* Effect.serviceOption(Events), () => noEvents)

      // What one request's orchestration works with (see Prepare); tool vectors kept warm.
      const prepare = yield* Prepare.make(gatewayConfig, backends)

      /** One model turn; the first is what the debug UI's record shows. */
      const ask = (
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
      const planCall = (offer: Offer, call: ChatToolCall, record?: Recording) =>
        Effect.gen(function* () {
          const args = yield* parseArguments(call.name, call.arguments)
          const chosen = yield* offer.plan(call.name, args)
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

      /** The first step's plan, run by nobody (`plan`, and `dryRun`). */
      const firstPlan = (query: string, messages: ReadonlyArray<ChatMessage>, offer: Offer, record?: Recording) =>
        Effect.gen(function* () {
          const response = yield* ask(query, messages, offer, record)
          if (response.toolCalls.length !== 1) return yield* noAction(query, response)
          return (yield* planCall(offer, response.toolCalls[0]!, record)).chosen
        })

      const plan = Effect.fn("Orchestrator.plan")(function* (params: OrchestrateRequest, profile?: Profile) {
        const { query, offer, messages } = yield* prepare(params, profile)
        return yield* firstPlan(query, messages, offer)
      })

      /**
       * The loop: the model is asked, its calls run (concurrently when it made several), their
       * results go back to it as tool messages, until it answers in text or `maxSteps` turns were
       * taken. The last tool result is the result, with the steps and the model's answer in `_meta`.
       */
      const run = Effect.fn("Orchestrator.orchestrate")(function* (
        params: OrchestrateRequest,
        execute: Execute,
        callPlanned: Call.RunPlanned,
        onStep: OnStep | undefined,
        confirm: Confirm | undefined,
        profile: Profile | undefined,
        record?: Recording
      ) {
        const {
          query,
          offer,
          plannable,
          index,
          messages,
          maxSteps,
          dryRun,
          confirmTools,
          flowGuard,
          results,
          maxCallsPerTurn,
          code
        } = yield* prepare(params, profile, record)
        if (code !== undefined) {
          const result = yield* CodeMode.orchestrate({
            ask: (tools) => ask(query, messages, tools, record),
            query,
            messages,
            fn: code.fn,
            refresh: code.refresh,
            maxSteps,
            dryRun,
            results,
            catalog: () => code.view,
            namespaceOf: code.namespaceOf,
            settings: code.settings,
            confirmTools,
            confirm,
            call: callPlanned,
            onStep
          })
          if (record !== undefined) Object.assign(record, CodeMode.recordOf(result))
          return result
        }
        /** For the debug UI: each call of each step as it went. */
        const note = (entry: OrchestrationStep) => {
          if (record !== undefined) record.steps = [...(record.steps ?? []), entry]
        }
        let current = 0
        const agreed = agreedToRun(confirmTools, confirm)
        // What the model reads, indexed as it reads it: where each later call's values came from;
        // and the functions it named from the request alone, before reading anything.
        const ledger = new Provenance.Ledger(messages.map((m) => m.content ?? "").join("\n"))
        // The plan travels with the first turn (agentify_plan offered beside the tools): none with
        // flowGuard "off", a single shot or a dry run.
        const planTool = maxSteps > 1 && !dryRun && flowGuard !== "off" ? Planning.planFunctionWith(index) : undefined
        let plan: Planning.PlanOf | undefined
        const plannableSet = new Set(plannable)
        // Whether the request itself asks to keep or pass on what it reads (see Intent).
        const keeps = Intent.keepsWhatItReads(query)
        const steps: Array<StepRecord> = []
        let last: { readonly result: unknown; readonly chosen: Plan } | undefined
        let answer: string | undefined
        let dry: Plan | undefined
        let dryRefused: InvalidPlan | undefined
        /** A turn whose calls could not run, told to the model once so that it may correct them. */
        let invalid: InvalidPlan | undefined
        let repaired = false
        /** Tokens over every turn, when the endpoint says. */
        let usage: ChatResponse["usage"] = undefined
        /** Whether the model was told that its turn made more calls than `maxCallsPerTurn`. */
        let toldBound = false

        /** A search the model asked for: answered here, its finds offered from the next turn on. */
        const searched = (call: ChatToolCall, args: Record<string, unknown>) =>
          Effect.sync((): TurnOutcome => {
            const wanted = typeof args.query === "string" ? args.query : ""
            const found = wanted.trim() === "" ? [] : offer.search!(wanted)
            steps.push({ tool: SEARCH_TOOL, arguments: Secrets.scrubArguments(args), isError: false, ms: 0 })
            note({
              step: current,
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

        /** `agentify_read_result`: more of a result that was cut, answered here. */
        const readOn = (call: ChatToolCall, args: Record<string, unknown>) =>
          Effect.gen(function* () {
            steps.push({ tool: Results.READ_RESULT_TOOL, arguments: Secrets.scrubArguments(args), isError: false, ms: 0 })
            note({ step: current, tool: Results.READ_RESULT_TOOL, arguments: args, outcome: "search", ms: 0 })
            const text = results.read(args)
            // Read on, it is read: indexed as coming from the result it is part of.
            const source = results.sourceOf(args)
            if (source !== undefined) yield* ledger.record(source, text)
            return { call, content: results.asData(text), ran: undefined } satisfies TurnOutcome
          })

        /** A call the gateway answers itself: a search, or reading on. */
        const answeredHere = (call: ChatToolCall): boolean =>
          (call.name === SEARCH_TOOL && offer.search !== undefined) ||
          (call.name === Results.READ_RESULT_TOOL && results.anyKept())

        /**
         * A turn with more calls than `maxCallsPerTurn`: none of them runs (not even their arguments are
         * read: a model's fan-out of thousands must cost nothing). The model is told once and may try
         * again with fewer; a second such turn, or one with no turn left after it, is -32003.
         */
        const overBound = (step: number, response: ChatResponse) =>
          Effect.gen(function* () {
            const made = response.toolCalls.length
            const refusal = tooManyCalls(response, maxCallsPerTurn)
            if (toldBound || step === maxSteps || dryRun) return yield* refusal
            toldBound = true
            yield* Effect.logWarning("orchestration: the model made more calls in one turn than allowed; none ran", {
              calls: made,
              maxCallsPerTurn
            })
            note({
              step,
              tool: response.toolCalls[0]!.name,
              arguments: { calls: made },
              outcome: "invalid",
              ms: 0,
              detail: refusal.message
            })
            messages.push(...boundTold(response, maxCallsPerTurn))
            return "more" as const
          })

        /** One model turn and the calls it made; "done" when the model answered without calling. */
        const turn = (step: number) =>
          Effect.gen(function* () {
            current = step
            const asked = yield* ask(
              query,
              messages,
              step === 1 && planTool !== undefined ? [...offer.functions(), planTool] : offer,
              record,
              results
            )
            usage = addUsage(usage, asked.usage)
            let response = asked
            if (step === 1 && planTool !== undefined) {
              // Everything the first turn calls was chosen before any data: the plan, with what
              // agentify_plan named; the tools agentify_plan names join the offer.
              plan = Planning.fromFirstTurn(asked.toolCalls, plannableSet)
              const added = offer.follow?.(Planning.namedIn(asked.toolCalls, plannableSet)) ?? []
              if (added.length > 0) yield* Effect.logDebug("the plan widened the offer", { added })
              const planCalls = asked.toolCalls.filter((c) => c.name === Planning.PLAN_FUNCTION)
              response = { ...asked, toolCalls: asked.toolCalls.filter((c) => c.name !== Planning.PLAN_FUNCTION) }
              if (planCalls.length > 0 && response.toolCalls.length === 0) {
                // Only the plan: noted, and the model goes on with its first calls.
                messages.push({ role: "assistant", content: asked.content, toolCalls: planCalls })
                for (const c of planCalls)
                  messages.push({ role: "tool", toolCallId: c.id, content: "Plan noted: make the calls." })
                return "more" as const
              }
            }
            if (response.toolCalls.length === 0) {
              // It gave up on correcting its call: that call's problem is the answer.
              if (last === undefined && invalid !== undefined) return yield* invalid
              // The user declined what it wanted to run, and it answered: that is the answer.
              if (last === undefined && !steps.some((s) => s.declined === true)) return yield* noAction(query, response)
              answer = response.content ?? undefined
              return "done" as const
            }
            // The seed's single shot: exactly one call.
            if (maxSteps === 1 && response.toolCalls.length !== 1) return yield* noAction(query, response)
            if (response.toolCalls.length > maxCallsPerTurn) return yield* overBound(step, response)
            const checked = yield* Effect.forEach(response.toolCalls, (call) =>
              Effect.either(
                answeredHere(call)
                  ? Effect.map(parseArguments(call.name, call.arguments), (args): TurnCall => ({
                      call,
                      args,
                      planned: undefined
                    }))
                  : Effect.map(planCall(offer, call, record), (planned): TurnCall => ({ call, args: planned.args, planned }))
              )
            )
            const refused = checked.find(Either.isLeft)?.left
            if (refused !== undefined) {
              // One repair turn per orchestration, when a step is left for it: the model reads what
              // is wrong with each call (nothing of the turn runs) and may call again.
              if (dryRun) {
                dryRefused = refused
                return "done" as const
              }
              if (repaired || step === maxSteps) return yield* refused
              repaired = true
              invalid = refused
              for (const outcome of checked) {
                if (Either.isLeft(outcome)) {
                  const { toolName, arguments: given, message } = outcome.left
                  note({ step, tool: toolName, arguments: given, outcome: "invalid", ms: 0, detail: message })
                }
              }
              yield* Effect.logInfo("orchestration: the model's call is invalid, asking it to correct it", {
                problem: refused.message
              })
              messages.push({ role: "assistant", content: response.content, toolCalls: results.replayed(response.toolCalls) })
              checked.forEach((outcome, i) =>
                messages.push({
                  role: "tool",
                  toolCallId: response.toolCalls[i]!.id,
                  content: Either.isLeft(outcome)
                    ? `Not run: ${outcome.left.message}. Correct the call and make it again.`
                    : "Not run: another call of this turn was invalid. Make it again if it is still needed."
                })
              )
              return "more" as const
            }
            const calls = checked.map((outcome) => (outcome as Either.Right<InvalidPlan, TurnCall>).right)
            invalid = undefined
            const firstCall = calls.find((c) => c.planned !== undefined)?.planned
            if (dryRun && firstCall !== undefined) {
              dry = firstCall.chosen
              return "done" as const
            }
            // A tool call is asked about once, in the call pipeline, naming every reason; another
            // request (`routing: "backend"`) is asked for here, one after the other, before the turn runs.
            const decisions = yield* Effect.forEach(calls, (c) =>
              c.planned?.chosen.mcpMethod === "tools/call" ? Effect.succeed("run" as const) : agreed(c)
            )
            if (onStep !== undefined) {
              yield* onStep(
                step,
                maxSteps,
                calls.map((c) => c.planned?.chosen.functionName ?? SEARCH_TOOL)
              )
            }
            // Where each call's values came from, as of what the model had read when it made them.
            const read = [...ledger.read]
            const flows = calls.map(({ args }): Call.FlowFacts => ({
              read,
              origins: ledger.originsOf(args),
              plan: plan?.tools ?? [],
              keeps
            }))
            /** A call that did not run: the user declined it, or the flow guard held it. */
            const notRun = (call: ChatToolCall, tool: string, args: unknown, why: { held: string } | "declined") =>
              Effect.sync((): TurnOutcome => {
                const told = notRunOf(tool, args, why)
                steps.push(told.record)
                note({ step, tool, arguments: args, outcome: told.outcome, ms: 0, detail: told.detail })
                return { call, content: told.content, ran: undefined }
              })
            const runCall = (
              { call, args, planned }: TurnCall,
              i: number
            ): Effect.Effect<TurnOutcome, BackendError | InvalidPlan> =>
              planned === undefined
                ? call.name === Results.READ_RESULT_TOOL
                  ? readOn(call, args)
                  : searched(call, args)
                : decisions[i] === "declined"
                  ? notRun(call, planned.chosen.functionName, args, "declined")
                  : Effect.gen(function* () {
                      const { chosen } = planned
                      const started = Date.now()
                      const result = yield* chosen.mcpMethod === "tools/call"
                        ? Call.runStep(callPlanned, chosen, args, flows[i])
                        : execute(chosen.backendId, chosen.mcpMethod, chosen.mcpParams)
                      const isError = isCallToolResult(result) && result.isError === true
                      const ms = Date.now() - started
                      steps.push({ tool: chosen.functionName, arguments: Secrets.scrubArguments(args), isError, ms })
                      note({ step, tool: chosen.functionName, arguments: args, outcome: isError ? "error" : "ok", ms })
                      const source = { backendId: chosen.backendId, tool: chosen.functionName, arguments: args }
                      const content = results.toolMessage(result, source)
                      yield* ledger.record(source, content)
                      return { call, content: results.asData(content), ran: { chosen, result } }
                    }).pipe(
                      Effect.catchTag("CallHeld", (held) =>
                        notRun(
                          call,
                          planned.chosen.functionName,
                          args,
                          held.rules.length === 0 ? "declined" : { held: held.message }
                        )
                      )
                    )
            const outcomes = yield* inTurn(calls, runCall)
            messages.push({ role: "assistant", content: response.content, toolCalls: results.replayed(response.toolCalls) })
            for (const { call, content } of outcomes) messages.push({ role: "tool", toolCallId: call.id, content })
            last = [...outcomes].reverse().find((o) => o.ran !== undefined)?.ran ?? last
            return "more" as const
          }).pipe(Effect.withSpan("Orchestrator.step", { attributes: { "agentify.step": step } }))
        for (let step = 1; step <= maxSteps; step++) {
          if ((yield* turn(step).pipe(Effect.mapError((error) => withStepsRan(error, steps)))) === "done") break
        }
        if (dry !== undefined) return dryRunResult(dry, needsConfirmation(confirmTools, dry.annotations), usage)
        if (dryRefused !== undefined) return dryRunRefused(dryRefused)
        // Nothing ran because the user said no: their decision, with the model's words on it.
        if (last === undefined && !dryRun && steps.some((s) => s.declined === true)) {
          return declinedResult(steps, answer, usage)
        }
        // Every turn only searched (or, dry, never planned a call): nothing ran.
        if (last === undefined || dryRun) {
          return yield* new NoActionDetermined({
            query,
            toolCalls: 0,
            modelMessage: `no tool was called within ${maxSteps} steps`
          })
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

      const orchestrate = (params: OrchestrateRequest, options: RunOptions = {}) => {
        const { execute = backends.executeOnBackend, onStep, confirm, profile } = options
        // Nobody's call: the pipeline of this orchestrator's context, asking through `confirm`.
        const callPlanned: Call.RunPlanned = options.call ?? ((p) => plannedCalls.run(p, confirm))
        if (!events.active()) return run(params, execute, callPlanned, onStep, confirm, profile)
        const started = Date.now()
        const record: Recording = { query: "", context: null, routing: "", offered: [] }
        // The run as the debug UI shows it, with its audit log id when that is on.
        const publish = (
          auditId: string | undefined,
          outcome: { result: unknown } | { error: { code: number; message: string } }
        ) =>
          Effect.sync(() =>
            events.publish({
              _tag: "Orchestration",
              at: started,
              ...record,
              ...(auditId === undefined ? {} : { auditId }),
              ...outcome,
              totalMs: Date.now() - started
            })
          )
        return Effect.flatMap(FiberRef.get(AuditRun.current), (auditId) =>
          run(params, execute, callPlanned, onStep, confirm, profile, record).pipe(
            Effect.tapBoth({
              onFailure: (error) => publish(auditId, { error: { code: error.code, message: error.message } }),
              onSuccess: (result) => publish(auditId, { result })
            })
          )
        )
      }

      return { orchestrate, plan }
    })
  )
}
