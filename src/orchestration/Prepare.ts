/**
 * What one request's orchestration works with, decided before the model is asked: the request's
 * params checked, the backends ready, what the session's profile sees, the offer (the task ranking,
 * with the semantic one when `embeddings` are configured, or one function per backend), the plan's
 * index, the conversation's first messages and the limits of this run. And, with `embeddings`, the
 * tool vectors kept warm as the tool lists change.
 */
import { Effect, Stream } from "effect"
import type { BackendsService } from "../backend/Backends.js"
import { Apps, type CatalogEntry, catalogOf, inProfile, scoreEntries } from "../catalog/ToolCatalog.js"
import { compactIndex, prepareTaskRanking } from "../catalog/TaskRank.js"
import { type GatewayConfig, namespaceOf, type Profile, type ResolvedConfig } from "../config/Config.js"
import type { OrchestrationRecord } from "../observability/Events.js"
import { BackendError, InvalidParams, NotConfigured } from "../protocol/Errors.js"
import type { ChatMessage } from "./model/Llm.js"
import * as CodeMode from "./code/CodeMode.js"
import { WrittenFiles } from "../store/WrittenFiles.js"
import * as Embeddings from "../catalog/semantic/Embeddings.js"
import { backendsIn, offerBackends, offerTools, SEARCH_TOOL } from "./Offer.js"
import { SINGLE_STEP_PROMPT, SYSTEM_PROMPT, userMessage } from "./Prompts.js"
import { type OrchestrateRequest, validateParams } from "./Request.js"
import * as Results from "./Results.js"

/** An orchestration's record while it runs. */
export type Recording = { -readonly [K in keyof Omit<OrchestrationRecord, "totalMs">]: OrchestrationRecord[K] }

/** How much of agentify_plan's description the tools not offered may take (about 2,000 tokens). */
const PLAN_INDEX_CHARS = 8_000

/**
 * What requests rank with, made off their path: the tool vectors (with `embeddings`) and the task
 * ranking's index, the servers' summaries and the needs' lists (seconds at 20,000 tools). On the
 * lists as they are now, then as they change: tools known from an earlier run are listed before
 * anything changes (their backends wait for a use), and their vectors and index are due too.
 */
const prepareAsListsChange = (
  gatewayConfig: GatewayConfig["Service"],
  backends: BackendsService,
  embedderFor: (config: ResolvedConfig) => Embeddings.Embedder | undefined
) =>
  Effect.gen(function* () {
    const lists = Stream.concat(Stream.succeed(undefined), backends.toolsChanged).pipe(Stream.debounce("200 millis"))
    yield* lists.pipe(
      Stream.runForEach(() =>
        Effect.flatMap(gatewayConfig.current, (config) => {
          const embedder = embedderFor(config)
          return embedder === undefined ? Effect.void : embedder.warm(catalogOf(backends.toolsSync()).entries)
        })
      ),
      Effect.forkScoped
    )
    yield* lists.pipe(
      Stream.runForEach(() =>
        Effect.flatMap(gatewayConfig.current, (config) =>
          Effect.sync(() => {
            const entries = Apps.forModel(catalogOf(backends.toolsSync())).entries
            if (config.routing !== "backend" && entries.length > config.maxToolsPerRequest) prepareTaskRanking(entries)
          })
        )
      ),
      Effect.forkScoped
    )
  })

export const make = (gatewayConfig: GatewayConfig["Service"], backends: BackendsService) =>
  Effect.gen(function* () {
    /** The embedder of the configured `embeddings`, or none. */
    const embedderFor = Embeddings.forConfig((yield* WrittenFiles).wrote)
    yield* prepareAsListsChange(gatewayConfig, backends, embedderFor)

    const readyBackends = (config: ResolvedConfig) =>
      Effect.gen(function* () {
        const enabled = config.backends.filter((b) => b.enabled)
        if (enabled.length === 0) {
          return yield* new NotConfigured({
            missing: "backends",
            message:
              "No backend is configured: list at least one enabled backend in the config file (--config or AGENTIFY_CONFIG) or in initializationOptions.backends"
          })
        }
        const ready = backends.toolsSync()
        if (ready.length === 0) {
          const states = yield* backends.states
          const detail = states.map((s) => `${s.id}: ${s.state}${s.lastError ? ` (${s.lastError})` : ""}`).join("; ")
          return yield* new BackendError({
            backendId: enabled.map((b) => b.id).join(", "),
            reason: "not_ready",
            summary: `no backend is ready${detail ? ` — ${detail}` : ""}`
          })
        }
        return ready
      })

    /** What one request's orchestration works with, decided before the model is asked. */
    const prepare = Effect.fn("Orchestrator.prepare")(function* (
      params: OrchestrateRequest,
      profile: Profile | undefined,
      record?: Recording
    ) {
      const { query, context, maxSteps, dryRun, maxResultChars, maxCallsPerTurn, mode } = yield* Effect.fromResult(
        validateParams(params)
      )
      if (record !== undefined) Object.assign(record, { query, context })
      const config = yield* gatewayConfig.current
      const ready = yield* readyBackends(config)
      // What the session's profile sees (everything without one): the tools, or the backends;
      // never a tool only its MCP App may call.
      const view = Apps.forModel(inProfile(catalogOf(ready), profile))
      const catalog = config.routing === "backend" ? undefined : view
      // With `embeddings`: the tools most like the request by their vectors (none when the endpoint cannot say).
      const embeddings =
        catalog === undefined || catalog.entries.length <= config.maxToolsPerRequest ? undefined : embedderFor(config)
      const semantic = embeddings === undefined ? [] : yield* embeddings.rank(view.entries, query, config.maxToolsPerRequest)
      const offer =
        catalog === undefined
          ? offerBackends(backendsIn(view, ready, profile))
          : offerTools(catalog, query, context, config.maxToolsPerRequest, semantic)
      // What the model is sent, in its order (fused with the semantic ranking when there is one),
      // with the lexical score of those the lexical ranking alone would have offered.
      const offeredTools = () => {
        const scores = new Map(
          scoreEntries(view.entries, query, config.maxToolsPerRequest, context).map((s) => [s.name, s.score])
        )
        return offer
          .functions()
          .filter((f) => f.function.name !== SEARCH_TOOL)
          .map(({ function: { name } }) => {
            const score = scores.get(name)
            return score === undefined ? { name } : { name, score }
          })
      }
      yield* Effect.annotateCurrentSpan({ routing: config.routing, offered: offer.functions().length })
      if (record !== undefined) {
        record.routing = config.routing
        record.offered = catalog === undefined ? offer.functions().map((f) => ({ name: f.function.name })) : offeredTools()
      }
      const steps = maxSteps ?? config.maxSteps
      const code = (mode ?? config.orchestrationMode) === "code"
      if (code && config.codeMode === false) {
        return yield* new InvalidParams({
          message: `Invalid params: mode "code" runs scripts, and codeMode is false in the gateway's configuration`,
          issues: ["mode: code mode is turned off (codeMode: false)"]
        })
      }
      const messages: Array<ChatMessage> = [
        { role: "system", content: code ? CodeMode.CODE_PROMPT : steps === 1 ? SINGLE_STEP_PROMPT : SYSTEM_PROMPT },
        { role: "user", content: userMessage(query, context) }
      ]
      const namespaceOfBackend = (backendId: string) => {
        const backend = backends.configOf(backendId)
        return backend === undefined ? backendId : namespaceOf(backend)
      }
      return {
        query,
        offer,
        // What a plan may name: any tool the view lists (with backends offered, their tools), not
        // only those offered: the tools it names join the offer (see Offer's `follow`).
        plannable: view.entries.map((e) => e.name),
        // ... and the tools not offered, by server, within a budget, in agentify_plan's description.
        index:
          catalog === undefined || offer.follow === undefined
            ? undefined
            : compactIndex(view.entries, new Set(offer.functions().map((f) => f.function.name)), PLAN_INDEX_CHARS),
        messages,
        maxSteps: steps,
        dryRun: dryRun === true,
        confirmTools: config.confirmTools,
        flowGuard: config.flowGuard,
        results: Results.make(maxResultChars ?? config.maxResultChars),
        maxCallsPerTurn: maxCallsPerTurn ?? config.maxCallsPerTurn,
        /** Code mode: the one function offered, and what its scripts run with. */
        code:
          code && config.codeMode !== false
            ? {
                fn: CodeMode.runCodeFunction(view, query, context, config.maxToolsPerRequest, namespaceOfBackend, [], semantic),
                refresh: (used: ReadonlyArray<string>) =>
                  CodeMode.runCodeFunction(view, query, context, config.maxToolsPerRequest, namespaceOfBackend, used, semantic),
                view,
                namespaceOf: namespaceOfBackend,
                settings: config.codeMode
              }
            : undefined
      }
    })

    /**
     * The tools most like `query` by their vectors, best first: none without `embeddings` (or when
     * the endpoint cannot say). A client's `agentify_search_tools` fuses them as a request's are.
     */
    const similar = (entries: ReadonlyArray<CatalogEntry>, query: string, k: number) =>
      Effect.flatMap(gatewayConfig.current, (config) => {
        const embedder = embedderFor(config)
        return embedder === undefined ? Effect.succeed<ReadonlyArray<CatalogEntry>>([]) : embedder.rank(entries, query, k)
      })

    return { prepare, similar }
  })

/** What one request's orchestration works with (see `make`'s `prepare`). */
export type Prepared = Effect.Success<ReturnType<Effect.Success<ReturnType<typeof make>>["prepare"]>>
