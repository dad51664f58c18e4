/**
 * The aggregate's tools: `tools/list` (the gateway's own, as the policies and the client allow,
 * then every backend's as the session's profile sees them, or, past `maxListedTools`, the search
 * and call tools and what the session found: see Listing), `tools/call` (the gateway's own work,
 * a search, else the call pipeline, `agentify_call_tool` included) and `agentify/orchestrateTask`.
 */
import { Context, Effect, Layer } from "effect"
import type { GatewayError } from "../../protocol/Errors.js"
import type { RequestContext } from "../../jsonrpc/Peer.js"
import type { CurrentCaller } from "../pipeline/Caller.js"
import type { Session } from "../session/Session.js"
import { Backends } from "../../backend/Backends.js"
import { GatewayConfig, type ResolvedConfig } from "../../config/Config.js"
import { Orchestrator } from "../../orchestration/Orchestrator.js"
import * as Audit from "../pipeline/Audit.js"
import { Forwarder } from "../pipeline/Forwarding.js"
import { CallPipeline } from "../pipeline/Pipeline.js"
import { OwnTasks } from "../routing/RunTasks.js"
import { type Mode, Sessions } from "../session/Sessions.js"
import * as Methods from "./Methods.js"
import * as Params from "./Params.js"
import { type View, Views } from "./View.js"
import { ORCHESTRATE_TOOL } from "../../orchestration/Orchestrator.js"
import * as RunCode from "../../orchestration/code/Code.js"
import { Apps, type CatalogEntry } from "../../catalog/ToolCatalog.js"
import * as PolicyChecks from "../pipeline/PolicyChecks.js"
import * as Tasks from "../routing/Tasks.js"
import * as OwnTools from "./OwnTools.js"
import * as Listing from "./Listing.js"
import * as Searches from "./Searches.js"
import { notification } from "../../jsonrpc/JsonRpc.js"

/** What the aggregate's tools use of the gateway: its own work's, and whether one client owns it. */
export interface Deps extends OwnTools.Deps {
  readonly mode: Mode
}

// Per catalog array, per (client renders apps, extension declared for clients): the same array for
// the same catalog, so that the ranking's index (cached per array) is built once per catalog version.
const listables = new WeakMap<ReadonlyArray<CatalogEntry>, Map<string, ReadonlyArray<CatalogEntry>>>()

/** The entries a client sees listed (see Apps.listedFor): the catalog's own array when none is left out. */
const listableOf = (
  entries: ReadonlyArray<CatalogEntry>,
  rendersApps: boolean,
  declaredForClients: boolean
): ReadonlyArray<CatalogEntry> => {
  let byFlags = listables.get(entries)
  if (byFlags === undefined) listables.set(entries, (byFlags = new Map()))
  const key = `${rendersApps} ${declaredForClients}`
  let listable = byFlags.get(key)
  if (listable === undefined) {
    const kept = entries.filter((e) => Apps.listedFor(e.tool, rendersApps, declaredForClients))
    byFlags.set(key, (listable = kept.length === entries.length ? entries : kept))
  }
  return listable
}

export const rows = (ctx: Deps, session: Session, view_: View) => {
  const { backends } = ctx
  const { catalog, namespaceOfBackend } = view_
  const backendFacts = Tasks.factsOf(backends)
  /** Its own tools and orchestrations (see OwnTools). */
  const ownWork = OwnTools.make(ctx, session, view_)

  /** What this session may list now: the gateway's own tools, the catalog's entries and tools, the limit. */
  const listingWith = (config: ResolvedConfig) => {
    const view = catalog()
    const rendersApps = Apps.rendersApps(session.clientCapabilities)
    const entries = config.exposeBackendTools ? listableOf(view.entries, rendersApps, ctx.mode === "shared") : []
    const backendTools = entries.map((e) => Tasks.toolFor(e.tool, session, backendFacts(e.backendId)))
    // Code mode's tool declares what this session's scripts can call (its profile's tools, no app-only one).
    const runCode =
      config.codeMode === false || !PolicyChecks.mayUseOwn(ctx.policies, session, "run_code", RunCode.RUN_CODE_TOOL_NAME)
        ? []
        : [RunCode.runCodeToolFor(Apps.forModel(view), namespaceOfBackend)]
    const orchestrate = PolicyChecks.mayUseOwn(ctx.policies, session, "orchestrate", ORCHESTRATE_TOOL.name)
      ? [ORCHESTRATE_TOOL]
      : []
    // A client of the tasks extension may get either of the gateway's own as a task (see RunTasks).
    // A session-era client may ask for one with `task` (the aggregate declares task-run tool calls).
    const own =
      Tasks.wantsTask(session) || !Tasks.statelessClient(session)
        ? [...orchestrate, ...runCode].map((tool) => ({ ...tool, execution: { taskSupport: "optional" } }))
        : [...orchestrate, ...runCode]
    const limit = Listing.limitOf(session, view_.profile(), config)
    return { own, entries, backendTools, limit }
  }
  const listing = Effect.map(ctx.config.current, listingWith)

  /** This session's searches' finds (see Listing): they join its `tools/list`. */
  const found = new Listing.Found()

  /** The whole catalog when it fits the client's limit; else the search and call tools, and what was found (see Listing). */
  const listedWith = (config: ResolvedConfig) => {
    const { own, backendTools, limit } = listingWith(config)
    return Listing.listed(own, backendTools, limit, view_.profile(), found)
  }
  const listTools = Effect.map(ctx.config.current, (config) => {
    const tools = listedWith(config)
    // What the client now holds: a change is told from this list on.
    session.toolsTold = tools
    return { tools }
  })
  // What its list_changed notifications are about: this list, not the whole catalog.
  session.listedTools = () => listedWith(ctx.config.now())

  /** This session's searches, bounded in flight (see Searches). */
  const searches = Searches.make()

  /**
   * `agentify_search_tools`: the tools of what this session may see that match the query, with
   * their schemas, and the backends it could not wait for (`stillStarting`); when the catalog is
   * listed in part, they join the list and the client is told. A search that matches nothing says
   * so and changes nothing.
   */
  const searchTools = (args: unknown, context: RequestContext) =>
    Effect.flatMap(Effect.fromResult(Listing.searchArguments(args)), ({ query, limit }) =>
      searches.run(
        Effect.gen(function* () {
          // Backends still starting are waited for, within their start-up timeout; those that were
          // not ready by then are named, so that the caller knows what the answer could not cover.
          const stillStarting = yield* backends.settle
          const { own, entries, backendTools, limit: listLimit } = yield* listing
          const similar = entries.length > limit ? yield* ctx.orchestrator.similar(entries, query, limit) : []
          const ranked = Listing.search(entries, query, limit, similar)
          if (ranked.length === 0) return Listing.answer([], stillStarting)
          const tools = ranked.map((e) => {
            const tool = Tasks.toolFor(e.tool, session, backendFacts(e.backendId))
            return { name: tool.name, description: tool.description ?? "", inputSchema: tool.inputSchema }
          })
          if (own.length + backendTools.length > listLimit) {
            const names = () => Listing.listed(own, backendTools, listLimit, view_.profile(), found).map((t) => t.name)
            const before = names().join("\u0000")
            found.add(
              tools.map((t) => t.name),
              Listing.roomFor(own.length, backendTools, listLimit, view_.profile())
            )
            // With the reply's stream where it has one (an HTTP POST's), else the session's own.
            const changed = notification("notifications/tools/list_changed", {})
            if (names().join("\u0000") !== before) {
              if (!context.send(changed)) session.send(changed)
              // Told: a backend's change that leaves this list as it is now says nothing more.
              session.toolsTold = session.listedTools?.()
            }
          }
          return Listing.answer(tools, stillStarting)
        })
      )
    )

  /**
   * `agentify_call_tool`: the client's own `tools/call` of the tool it names (its `_meta` and
   * `task` kept), through every stage of the pipeline as that call; never one of the gateway's own.
   */
  const callThrough = (p: Params.CallToolParams, context: RequestContext) =>
    Effect.flatMap(
      Effect.fromResult(Listing.callArguments(p.arguments, [ORCHESTRATE_TOOL.name, RunCode.RUN_CODE_TOOL_NAME])),
      ({ name, arguments: args }) => {
        const { arguments: _outer, ...rest } = p
        const params = { ...rest, name, ...(args === undefined ? {} : { arguments: args }) }
        return ctx.pipeline.run({ context, via: p.task === undefined ? "client" : "task", name, params })
      }
    )

  // A plain function rather than a traced generator: this is the passthrough hot path, where a
  // span per call (and the stack captured for it) cost more than the rest of the gateway's work.
  const callTool = (p: Params.CallToolParams, context: RequestContext): Effect.Effect<unknown, GatewayError, CurrentCaller> => {
    const own = ownWork.call(p, context)
    if (own !== undefined) return own
    if (p.name === Listing.SEARCH_TOOL_NAME) return searchTools(p.arguments, context)
    if (p.name === Listing.CALL_TOOL_NAME) return callThrough(p, context)
    // Forwarded unchanged but for the backend's own tool name (_meta, a progressToken, included).
    return ctx.pipeline.run({ context, via: p.task === undefined ? "client" : "task", name: p.name, params: p })
  }

  return {
    "tools/list": Methods.constant(listTools),
    "tools/call": Methods.method(Params.CallToolParams, callTool),
    "agentify/orchestrateTask": Methods.relayed(ownWork.orchestrateTask)
  }
}

export class ToolRows extends Context.Service<
  ToolRows,
  { readonly rows: (session: Session, view: View) => ReturnType<typeof rows> }
>()("mcp-agentify/ToolRows") {
  /** Built from the services it uses (its layer, or the gateway's methods layer: see Gateway). */
  static readonly make: Effect.Effect<
    ToolRows["Service"],
    never,
    GatewayConfig | Backends | Sessions | Orchestrator | OwnTasks | Audit.Audit | CallPipeline | Views | Forwarder
  > = Methods.rowsOf(
    Effect.all({
      mode: Effect.map(Sessions, (sessions) => sessions.mode),
      config: GatewayConfig,
      backends: Backends,
      orchestrator: Orchestrator,
      runTasks: OwnTasks,
      audit: Audit.Audit,
      pipeline: CallPipeline,
      policies: Effect.map(Views, (views) => views.policies),
      forward: Effect.map(Forwarder, (forwarder) => forwarder.forward)
    }),
    rows
  )
  static readonly layer: Layer.Layer<
    ToolRows,
    never,
    GatewayConfig | Backends | Sessions | Orchestrator | OwnTasks | Audit.Audit | CallPipeline | Views | Forwarder
  > = Layer.effect(ToolRows, ToolRows.make)
}
