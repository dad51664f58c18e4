/**
 * What the model is offered in one orchestration, and how its calls become plans: one function per
 * backend tool (the best-ranked when not all fit, with `agentify_search_tools` for the rest) or one
 * per backend (`routing: "backend"`), and the checks a call passes before it is a plan.
 */
import * as Invisible from "../text/Invisible.js"
import { Result } from "effect"
import type { BackendTools } from "../backend/Backends.js"
import {
  backendFunctions,
  type Catalog,
  type CatalogEntry,
  type ChatTool,
  matchingEntries,
  profileServes,
  promptAdmitted,
  rankTask,
  resourceAdmitted,
  toolFunctions
} from "../catalog/ToolCatalog.js"
import type { TaskContext } from "../protocol/Mcp.js"
import type { Profile } from "../config/Config.js"
import { InvalidPlan } from "./Errors.js"
import { isObject, objectField } from "../json/Json.js"
import * as Depth from "../json/Depth.js"

/** The one backend call the model chose. */
export interface Plan {
  readonly backendId: string
  readonly mcpMethod: string
  readonly mcpParams: Record<string, unknown>
  /** The function name the model called, as offered to it. */
  readonly functionName: string
  /** The tool's inputSchema, which the model's arguments are checked against before the call. */
  readonly inputSchema?: Record<string, unknown> | undefined
  /** The tool's annotations (readOnlyHint, destructiveHint): whether the user must agree first. */
  readonly annotations?: Readonly<Record<string, unknown>> | undefined
}

const annotationsOf = (tool: unknown): Readonly<Record<string, unknown>> | undefined => {
  return objectField(tool, "annotations")
}

export interface Offer {
  /** The functions offered now (they grow as the model searches). */
  readonly functions: () => ReadonlyArray<ChatTool>
  /** Resolves a function the model called into a plan, or says why it cannot run. */
  readonly plan: (name: string, args: Record<string, unknown>) => Result.Result<Plan, InvalidPlan>
  /**
   * `agentify_search_tools`: the next best tools for a query, offered from the next turn on, as the
   * model reads them; undefined when every tool is offered already (then the function is not).
   */
  readonly search?: (query: string) => ReadonlyArray<{ readonly name: string; readonly description: string }>
  /**
   * The offer follows the work: tools named since the request (the plan's, by their listed names)
   * join it in full from the next turn, at most as many as the ranking offered (`maxToolsPerRequest`:
   * the rest stay reachable through `agentify_search_tools`); offered tools stay offered. Undefined
   * when every tool is offered already.
   */
  readonly follow?: (named: ReadonlyArray<string>) => ReadonlyArray<string>
}

/** Offered beside the best-ranked tools when not all fit: how the model reaches the others. */
export const SEARCH_TOOL = "agentify_search_tools"
/** How many tools one search adds. */
const SEARCH_RESULTS = 8
const searchFunction: ChatTool = {
  type: "function",
  function: {
    name: SEARCH_TOOL,
    description:
      "Finds further tools of the gateway's MCP servers when none of the functions offered fits the task: describe what the tool should do. The best matches are returned (name and description) and can be called from the next turn on.",
    parameters: {
      type: "object",
      properties: { query: { type: "string", description: "What the tool should do, in plain words." } },
      required: ["query"]
    }
  }
}

/** When every tool fits, every query offers the same functions: built once per catalog. */
const functionsCache = new WeakMap<Catalog, ReadonlyArray<ChatTool>>()
const allFunctions = (catalog: Catalog): ReadonlyArray<ChatTool> => {
  let functions = functionsCache.get(catalog)
  if (functions === undefined) functionsCache.set(catalog, (functions = toolFunctions(catalog.entries)))
  return functions
}

/** `routing: "tool"`: one function per backend tool; the best matches first when they do not all fit. */
export const offerTools = (
  catalog: Catalog,
  query: string,
  context: TaskContext | null | undefined,
  max: number,
  semantic: ReadonlyArray<CatalogEntry> = []
): Offer => {
  const all = catalog.entries.length <= max
  // A task's ranking over the catalog's own array (its index is cached per array): every intent of
  // the request, what it implies, the servers that match it and its semantic ranking get their share.
  const entries: ReadonlyArray<CatalogEntry> = all
    ? catalog.entries
    : rankTask(catalog.entries, query, max, context, [], semantic)
  const offered: ReadonlyMap<string, CatalogEntry> = all ? catalog.byName : new Map(entries.map((e) => [e.name, e]))
  let functions: ReadonlyArray<ChatTool> = all ? allFunctions(catalog) : [...toolFunctions(entries), searchFunction]
  /** Adds entries to the offer (only reached when not all fit: `offered` is this offer's own Map then). */
  const add = (more: ReadonlyArray<CatalogEntry>) => {
    for (const e of more) (offered as Map<string, CatalogEntry>).set(e.name, e)
    functions = [...functions, ...toolFunctions(more)]
  }
  // Only tools that match: a search that finds nothing adds nothing (the model is told so).
  const search = (wanted: string) => {
    const more = matchingEntries(catalog.entries, wanted, offered.size + SEARCH_RESULTS, context)
      .filter((e) => !offered.has(e.name))
      .slice(0, SEARCH_RESULTS)
    add(more)
    return more.map((e) => ({ name: e.name, description: Invisible.strip(e.tool.description ?? "") }))
  }
  // What a plan named that was not offered joins in full: the model asked for it by name. At most
  // `max` of them (in the order named): a plan naming the whole catalog must not send it all to the
  // model with every turn; the rest it finds with agentify_search_tools.
  const follow = (named: ReadonlyArray<string>) => {
    const more = [...new Set(named)]
      .map((name) => catalog.byName.get(name))
      .filter((e): e is CatalogEntry => e !== undefined && !offered.has(e.name))
      .slice(0, max)
    add(more)
    return more.map((e) => e.name)
  }
  return {
    functions: () => functions,
    ...(all ? {} : { search, follow }),
    plan: (name, args) => {
      const entry = offered.get(name)
      if (entry === undefined) {
        return Result.fail(
          new InvalidPlan({ message: `The model chose a tool that was not offered: '${name}'`, toolName: name, arguments: args })
        )
      }
      return Result.succeed({
        backendId: entry.backendId,
        mcpMethod: "tools/call",
        mcpParams: { name: entry.toolName, arguments: args },
        functionName: name,
        inputSchema: entry.tool.inputSchema,
        annotations: annotationsOf(entry.tool)
      })
    }
  }
}

export const requiredProperties = (schema: Record<string, unknown>): Array<string> =>
  Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : []

/**
 * The methods the model may ask a backend for in `routing: "backend"`: what reads and calls, each
 * judged as the client's own request would be (a tool call by the call pipeline, a read or a
 * prompt by the policies). Nothing else reaches a backend: not the lifecycle, not subscriptions,
 * not a level or a task of the session's.
 */
export const MODEL_METHODS: ReadonlySet<string> = new Set([
  "tools/call",
  "tools/list",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "prompts/list",
  "prompts/get",
  "completion/complete"
])

/** `routing: "backend"` (the seed's shape): one function per backend taking `{mcp_method, mcp_params}`. */
export const offerBackends = (backends: ReadonlyArray<BackendTools>): Offer => {
  const byId = new Map(backends.map((b) => [b.backendId, b]))
  const functions = backendFunctions(backends)
  return {
    functions: () => functions,
    plan: (name, args) => {
      const backend = byId.get(name)
      if (backend === undefined) {
        return Result.fail(
          new InvalidPlan({
            message: `The model chose a backend that was not offered: '${name}'`,
            toolName: name,
            arguments: args
          })
        )
      }
      const method = args.mcp_method
      const params = args.mcp_params ?? {}
      if (typeof method !== "string" || !MODEL_METHODS.has(method)) {
        return Result.fail(
          new InvalidPlan({
            message: `The model gave no usable mcp_method for backend '${name}' (one of ${[...MODEL_METHODS].join(", ")})`,
            toolName: name,
            arguments: args
          })
        )
      }
      if (!isObject(params)) {
        return Result.fail(
          new InvalidPlan({ message: `mcp_params for backend '${name}' is not a JSON object`, toolName: name, arguments: args })
        )
      }
      const mcpParams = params
      // What the backend's filters hide, the model cannot reach by the method's own name either.
      const hidden =
        (method.startsWith("resources/") &&
          typeof mcpParams.uri === "string" &&
          !resourceAdmitted(backend.exposure, mcpParams.uri)) ||
        (method === "prompts/get" && typeof mcpParams.name === "string" && !promptAdmitted(backend.exposure, mcpParams.name))
      if (hidden) {
        return Result.fail(
          new InvalidPlan({
            message: `Backend '${name}' does not expose what ${method} names (its configuration filters it)`,
            toolName: name,
            arguments: args
          })
        )
      }
      if (method === "tools/call") {
        const tool = backend.tools.find((t) => t.name === mcpParams.name)
        if (tool === undefined) {
          return Result.fail(
            new InvalidPlan({
              message: `Backend '${name}' has no tool '${String(mcpParams.name)}'`,
              toolName: name,
              arguments: args
            })
          )
        }
        const callArgs = mcpParams.arguments ?? {}
        if (typeof callArgs !== "object" || callArgs === null || Array.isArray(callArgs)) {
          return Result.fail(
            new InvalidPlan({
              message: `The arguments for '${tool.name}' are not a JSON object`,
              toolName: name,
              arguments: args
            })
          )
        }
        return Result.succeed({
          backendId: name,
          mcpMethod: method,
          mcpParams: { ...mcpParams, arguments: callArgs },
          functionName: name,
          inputSchema: tool.inputSchema,
          annotations: annotationsOf(tool)
        })
      }
      return Result.succeed({ backendId: name, mcpMethod: method, mcpParams, functionName: name })
    }
  }
}

/** The model's arguments: JSON text that must hold an object ("" counts as `{}`, as some models send). */
export const parseArguments = (name: string, raw: string): Result.Result<Record<string, unknown>, InvalidPlan> => {
  if (raw.trim() === "") return Result.succeed({})
  let value: unknown
  try {
    value = Depth.parse(raw)
  } catch {
    return Result.fail(
      new InvalidPlan({ message: `The model's arguments for '${name}' are not valid JSON`, toolName: name, arguments: raw })
    )
  }
  return isObject(value)
    ? Result.succeed(value)
    : Result.fail(
        new InvalidPlan({
          message: `The model's arguments for '${name}' are not a JSON object`,
          toolName: name,
          arguments: value
        })
      )
}

/**
 * The backends as a catalog view shows them, for routing "backend": those it serves, each with
 * only the tools it exposes (under their own names, as that routing calls them).
 */
export const backendsIn = (view: Catalog, ready: ReadonlyArray<BackendTools>, profile: Profile | undefined) => {
  const exposed = new Set(view.entries.map((e) => `${e.backendId}\u0000${e.toolName}`))
  return ready
    .filter((b) => profileServes(profile, b.backendId))
    .map((b) => ({ ...b, tools: b.tools.filter((t) => exposed.has(`${b.backendId}\u0000${t.name}`)) }))
}
