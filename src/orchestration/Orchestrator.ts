/**
 * Orchestration: a natural-language request becomes the backend calls that do it.
 *
 *   params -> tools offered to the model -> Chat Completions request -> plans -> checked plans
 *   -> backend calls -> their results back to the model -> ... -> its answer; the last result
 *
 * At most `maxSteps` model turns (a request's, else the config's; 1 is the single shot).
 *
 * The service: a request prepared, then run by tools mode's turn loop (`Loop`) or code mode's
 * (`CodeMode`), its record published for the debug UI. What a request's run works with (its params checked, the offer, the conversation) is in `Prepare`;
 * what it offers and how a call becomes a plan are in `Offer`; the pieces of a turn (how its calls
 * run, what they give back) in `Steps`; what the model reads back in `Results`; what it is told in
 * `Prompts`.
 *
 * Each step fails with its own tagged error, so the code a client sees says which step failed:
 * -32602 params, -32002 not configured, -32003 LLM or plan, -32000 no action, -32004 backend.
 */
import { Context, Effect, Layer } from "effect"
import * as AuditRun from "../observability/AuditRun.js"
import { Backends } from "../backend/Backends.js"
import * as Call from "./Planned.js"
import { GatewayConfig, type Profile } from "../config/Config.js"
import type { BackendError, InvalidParams, NotConfigured } from "../protocol/Errors.js"
import type { InvalidPlan, LlmRequestFailed, NoActionDetermined } from "./Errors.js"
import { type ChatMessage, LlmClient } from "./model/Llm.js"
import { Events } from "../observability/Events.js"
import type { Offer, Plan } from "./Offer.js"
import type { CatalogEntry } from "../catalog/ToolCatalog.js"
import { noAction, type OnStep } from "./Steps.js"
import type { CallRefused, Confirm } from "../call/Vocabulary.js"
import * as CodeMode from "./code/CodeMode.js"
import * as Prepare from "./Prepare.js"
import * as Loop from "./Loop.js"

export { type Plan, SEARCH_TOOL } from "./Offer.js"
export { ORCHESTRATE_TOOL, SINGLE_STEP_PROMPT, SYSTEM_PROMPT, userMessage } from "./Prompts.js"
export { needsConfirmation, type OnStep, type StepRecord } from "./Steps.js"
export type { Confirm } from "../call/Vocabulary.js"
import type { OrchestrateRequest } from "./Request.js"
export { type OrchestrateRequest, validateParams } from "./Request.js"

type Recording = Prepare.Recording

/** What an orchestration fails with; a step refused by a quota keeps the quota's refusal (-32029, retry after). */
export type OrchestrationError =
  InvalidParams | NotConfigured | LlmRequestFailed | InvalidPlan | NoActionDetermined | BackendError | CallRefused

// ---------------------------------------------------------------------------------------------
// The service

/** How an orchestration runs for its caller; each part optional. */
export interface RunOptions {
  /**
   * Runs each step through the call pipeline (a tool call, or with `routing: "backend"` any request
   * of the allow-list); the gateway runs it as the session's call. Default: the pipeline of the
   * orchestrator's context, as nobody's call.
   */
  readonly call?: Call.RunPlanned | undefined
  /** Told as each step starts (the gateway sends progress notifications). */
  readonly onStep?: OnStep | undefined
  /** Asks the user before a tool `confirmTools` gates runs; without it such a tool is refused. */
  readonly confirm?: Confirm | undefined
  /** The model sees and may call only the profile's tools. */
  readonly profile?: Profile | undefined
}

export class Orchestrator extends Context.Service<
  Orchestrator,
  {
    /** Runs `{query, context}` to the last tool's result (unchanged, with the steps in `_meta`). */
    readonly orchestrate: (request: OrchestrateRequest, options?: RunOptions) => Effect.Effect<unknown, OrchestrationError>
    /** The plan the model makes for `{query, context}`, without running it. */
    readonly plan: (
      request: OrchestrateRequest,
      profile?: Profile
    ) => Effect.Effect<Plan, Exclude<OrchestrationError, BackendError> | BackendError>
    /** The `k` tools most like `query` by their vectors (`embeddings`), best first; none without them. Never fails. */
    readonly similar: (
      entries: ReadonlyArray<CatalogEntry>,
      query: string,
      k: number
    ) => Effect.Effect<ReadonlyArray<CatalogEntry>>
  }
>()("mcp-agentify/Orchestrator") {
  static layer: Layer.Layer<Orchestrator, never, GatewayConfig | Backends | LlmClient | Call.PlannedCalls> = Layer.effect(
    Orchestrator,
    Effect.gen(function* () {
      const gatewayConfig = yield* GatewayConfig
      const backends = yield* Backends
      const plannedCalls = yield* Call.PlannedCalls
      const llm = yield* LlmClient
      // Optional: an orchestrator built without the hub publishes nothing.
      const events = yield* Events

      // What one request's orchestration works with (see Prepare); tool vectors kept warm.
      const { prepare, similar } = yield* Prepare.make(gatewayConfig, backends)

      /** The first step's plan, run by nobody (`plan`, and `dryRun`). */
      const firstPlan = (query: string, messages: ReadonlyArray<ChatMessage>, offer: Offer, record?: Recording) =>
        Effect.gen(function* () {
          const response = yield* Loop.ask(llm, query, messages, offer, record)
          const [only, ...more] = response.toolCalls
          if (only === undefined || more.length > 0) return yield* noAction(query, response)
          return (yield* Loop.planCall(offer, only, record)).chosen
        })

      const plan = Effect.fn("Orchestrator.plan")(function* (params: OrchestrateRequest, profile?: Profile) {
        const { query, offer, messages } = yield* prepare(params, profile)
        return yield* firstPlan(query, messages, offer)
      })

      /** Code mode's loop, or tools mode's (see Loop), on what the request was prepared into. */
      const run = Effect.fn("Orchestrator.orchestrate")(function* (
        params: OrchestrateRequest,
        callPlanned: Call.RunPlanned,
        onStep: OnStep | undefined,
        confirm: Confirm | undefined,
        profile: Profile | undefined,
        record?: Recording
      ) {
        const { code, ...prepared } = yield* prepare(params, profile, record)
        if (code === undefined) return yield* Loop.run({ ...prepared, llm, callPlanned, onStep, confirm, record })
        const { query, messages, maxSteps, dryRun, results, confirmTools } = prepared
        const result = yield* CodeMode.orchestrate({
          ask: (tools) => Loop.ask(llm, query, messages, tools, record),
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
      })

      const orchestrate = (params: OrchestrateRequest, options: RunOptions = {}) => {
        const { onStep, confirm, profile } = options
        // Nobody's call: the pipeline of this orchestrator's context, asking through `confirm`.
        const callPlanned: Call.RunPlanned = options.call ?? ((p) => plannedCalls.run(p, confirm))
        if (!events.active()) return run(params, callPlanned, onStep, confirm, profile)
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
        return Effect.flatMap(AuditRun.current, (auditId) =>
          run(params, callPlanned, onStep, confirm, profile, record).pipe(
            Effect.tapError((error) => publish(auditId, { error: { code: error.code, message: error.message } })),
            Effect.tap((result) => publish(auditId, { result }))
          )
        )
      }

      return { orchestrate, plan, similar }
    })
  )
}
