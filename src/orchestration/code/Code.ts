/**
 * Code mode: one script that calls many tools, run in the sandbox (see sandbox/), for a client's
 * model (`agentify_run_code`) and for the gateway's own (`mode: "code"`). Every call it makes goes
 * through the call pipeline (see call/) as a `script` call: only the tools its profile and filters
 * let it see (a hidden tool does not exist in `tools`), arguments checked against the inputSchema
 * before a backend sees them, `confirmTools` asked of the user, the call forwarded as the
 * session's own. A dry run calls read-only tools for real and holds back every other call, listing
 * it: a preview of what the script would change.
 *
 * The sandbox (QuickJS and its worker) is loaded on the first run: a gateway never asked to run
 * code never reads it.
 */
import { Effect, Result, Schema } from "effect"
import * as AuditRun from "../../observability/AuditRun.js"
import * as Call from "../Planned.js"
import * as Vocabulary from "../../call/Vocabulary.js"
import * as Provenance from "../Provenance.js"
import { Events, type OrchestrationStep } from "../../observability/Events.js"
import type { CodeMode } from "../../config/Config.js"
import type { Catalog, CatalogEntry } from "../../catalog/ToolCatalog.js"
import * as Secrets from "../../observability/Secrets.js"
import { formatIssues } from "../../config/Config.js"
import { type CallToolResult, isCallToolResult, resultText, textResult } from "../../protocol/Mcp.js"
import { InvalidParams } from "../../protocol/Errors.js"
import { matchingEntries } from "../../catalog/ToolCatalog.js"
import * as Declarations from "../../sandbox/Declarations.js"
import type * as Sandbox from "../../sandbox/Sandbox.js"
import { field, objectOr } from "../../json/Json.js"

export const RUN_CODE_TOOL_NAME = "agentify_run_code"

/** The sandbox's module once a first run loaded it (QuickJS and its thread are not read before). */
let loadedSandbox: typeof Sandbox | undefined

/** How much of the description may be declarations before it lists names and points to `searchTools`. */
const MAX_DECLARATION_CHARS = 24_000
/** How many tools `searchTools` declares. */
const SEARCH_RESULTS = 8

const RunCodeParams = Schema.Struct({
  code: Schema.String.pipe(Schema.check(Schema.makeFilter((s) => s.trim().length > 0 || "must be a non-empty string"))),
  dryRun: Schema.optional(Schema.Boolean),
  timeoutMs: Schema.optional(
    Schema.Number.pipe(
      Schema.check(
        Schema.makeFilter(
          (n) => (Number.isInteger(n) && n >= 1 && n <= 600_000) || "must be a whole number of milliseconds from 1 to 600000"
        )
      )
    )
  )
})
const decodeParams = Schema.decodeUnknownResult(RunCodeParams, { errors: "all", reportInput: true })

/** How each tool of a catalog is reached from a script. */
export const scriptTools = (
  catalog: Catalog,
  namespaceOf: (backendId: string) => string
): ReadonlyArray<Declarations.ScriptTool & { readonly entry: CatalogEntry }> =>
  catalog.entries.map((entry) => ({
    ...Declarations.pathOf(entry.name, namespaceOf(entry.backendId)),
    exposed: entry.name,
    description: entry.source.description,
    inputSchema: entry.tool.inputSchema,
    outputSchema: field(entry.tool, "outputSchema"),
    entry
  }))

/** The tool as a client lists it: its description carries the declarations of what it can call. */
export const runCodeTool = (tools: ReadonlyArray<Declarations.ScriptTool>) => ({
  name: RUN_CODE_TOOL_NAME,
  description: [
    'Runs a JavaScript script (the body of an async function; TypeScript annotations are stripped) in a sandbox where the tools below are async functions: `await tools.<namespace>.<tool>(args)` or `await callTool("<name>", args)`. A call resolves to the tool\'s structuredContent, else its text; a failed call rejects with an Error (use try/catch). Filter and combine data inside the script and return only what is needed: the returned value (JSON) is the result, console.log is captured. dryRun: true runs read-only tools and holds back every other call, listing it.',
    "",
    Declarations.forDescription(tools, MAX_DECLARATION_CHARS)
  ].join("\n"),
  inputSchema: {
    type: "object",
    properties: {
      code: { type: "string", description: "The body of an async function: await the tools, return the result." },
      dryRun: { type: "boolean", description: "Run read-only tools only; list every other call without running it." },
      timeoutMs: { type: "integer", minimum: 1, maximum: 600_000, description: "Wall time for the run (default: the gateway's)." }
    },
    required: ["code"]
  },
  annotations: { title: "Run a script that calls the tools", readOnlyHint: false, destructiveHint: true, openWorldHint: true }
})

/**
 * The tool as a session with this view of the catalog lists it, made once per view: a view stands
 * until the tools change (a backend lists again, a reload), and declaring a thousand tools is work.
 */
const listed = new WeakMap<Catalog, ReturnType<typeof runCodeTool>>()
export const runCodeToolFor = (catalog: Catalog, namespaceOf: (backendId: string) => string) => {
  let tool = listed.get(catalog)
  if (tool === undefined) listed.set(catalog, (tool = runCodeTool(scriptTools(catalog, namespaceOf))))
  return tool
}

export interface Deps {
  readonly catalog: () => Catalog
  readonly namespaceOf: (backendId: string) => string
  readonly settings: Exclude<CodeMode, false>
  /** Each call the script makes, through the call pipeline as the session's (see call/). */
  readonly call: Call.RunPlanned
  /**
   * Tools held back (quarantined) that this client would otherwise see: present in `tools` so that
   * calling one says why it is held and how to trust it, rather than "not a function".
   */
  readonly held?: () => ReadonlyArray<{ readonly exposed: string; readonly backendId: string }>
  /**
   * Where the values of code mode's scripts came from, across its turns: the ledger of what was read
   * (its trusted text the request, and the first script), and the plan (the tools the first script
   * called). Without it (a client's own script) the script's text is trusted and it has no plan.
   */
  readonly provenance?:
    | {
        readonly ledger: Provenance.Ledger
        readonly plan: () => ReadonlyArray<string> | undefined
        /** What the request asked to keep or pass on of what it reads (see Intent). */
        readonly keeps: Vocabulary.Keeping | undefined
      }
    | undefined
}

/**
 * The script with its TypeScript stripped (esbuild, loaded only for this), or undefined when it is
 * not TypeScript either. It is a function's body (`return`, `await` at its top): stripped as one.
 */
const stripTypes = async (code: string): Promise<string | undefined> => {
  try {
    const esbuild = await import("esbuild")
    const head = "async function __script() {\n"
    const out = (await esbuild.transform(`${head}${code}\n}`, { loader: "ts", format: "esm", target: "es2022" })).code
    const start = out.indexOf("{\n")
    const end = out.lastIndexOf("}")
    return out.startsWith("async function __script()") && start >= 0 && end > start ? out.slice(start + 2, end) : undefined
  } catch {
    return undefined
  }
}

/** A call's arguments as the result lists them: scrubbed of secrets, a long one cut. */
const shown = (args: Record<string, unknown>): unknown => {
  const scrubbed = Secrets.scrubArguments(args)
  const text = JSON.stringify(scrubbed) ?? ""
  return text.length <= 1_000 ? scrubbed : { "[cut]": `arguments of ${text.length} characters` }
}

/** A tool's value as a script gets it: structuredContent, else the text of its text blocks. */
const valueOf = (result: CallToolResult): unknown =>
  result.structuredContent !== undefined ? result.structuredContent : resultText(result)

/** The run for the debug UI (as an orchestration of its own: the script, its calls, logs and limit). */
const publish = (code: string, outcome: Sandbox.Outcome, totalMs: number) =>
  Effect.flatMap(Effect.zip(Events, AuditRun.current), ([events, auditId]) =>
    Effect.sync(() => {
      if (!events.active()) return
      const steps = outcome.calls.map((c): OrchestrationStep => ({
        step: 1,
        tool: c.tool,
        arguments: c.arguments ?? {},
        outcome: c.dryRun === true ? "held" : c.isError ? "error" : "ok",
        ms: c.ms
      }))
      events.publish({
        _tag: "Orchestration",
        at: Date.now() - totalMs,
        query: RUN_CODE_TOOL_NAME,
        context: null,
        routing: "code",
        offered: [],
        code,
        logs: outcome.logs,
        steps,
        ...(auditId === undefined ? {} : { auditId }),
        ...(outcome.ok
          ? { result: outcome.value }
          : { error: { code: -32003, message: `${outcome.name}: ${outcome.message}` }, limit: outcome.limit }),
        totalMs
      })
    })
  )

/** Runs one script for a client; its failures are results with `isError`, naming the error, its line and the calls made. */
export const run = (params: unknown, deps: Deps): Effect.Effect<CallToolResult, InvalidParams> =>
  Effect.withSpan("agentify_run_code")(runOnce(params, deps))

/** The run's limits: the call's own `timeoutMs`, else the gateway's settings, else the sandbox's defaults. */
const limitsOf = (given: Deps["settings"], timeoutMs: number | undefined, defaults: Sandbox.Limits): Sandbox.Limits => ({
  timeoutMs: timeoutMs ?? given.timeoutMs ?? defaults.timeoutMs,
  memoryMb: given.memoryMb ?? defaults.memoryMb,
  maxCalls: given.maxCalls ?? defaults.maxCalls,
  maxConcurrentCalls: given.maxConcurrentCalls ?? defaults.maxConcurrentCalls,
  maxOutputBytes: given.maxOutputBytes ?? defaults.maxOutputBytes,
  maxRuns: given.maxRuns ?? defaults.maxRuns,
  maxQueuedRuns: given.maxQueuedRuns ?? defaults.maxQueuedRuns
})

type ScriptTool = ReturnType<typeof scriptTools>[number]

/** What one run's calls share: what they may call, where values came from, and what was stopped. */
interface RunState {
  readonly deps: Deps
  readonly byName: ReadonlyMap<string, ScriptTool>
  /** Every value handed into the sandbox, recognised when it comes back in a call's arguments. */
  readonly ledger: Provenance.Ledger
  readonly plan: ReadonlyArray<string> | undefined
  readonly dryRun: boolean
  /**
   * Calls that reached a backend and were stopped as the run ended (the sandbox lists the rest):
   * they count among the calls made, since the backend may have acted on them.
   */
  readonly stopped: Array<Sandbox.CallRecord>
}

/**
 * One call the script makes, through the call pipeline as a `script` call: the value the script
 * gets (or why it rejects) and the call as the result lists it. What it reads goes into the ledger.
 */
const callOnce = (run: RunState, name: string, args: unknown): Effect.Effect<Sandbox.CallAnswer> =>
  Effect.gen(function* () {
    const { deps, ledger, stopped } = run
    const tool = run.byName.get(name)
    const given = objectOr(args)
    const decisions: Array<Vocabulary.Decision> = []
    // What the pipeline's forward stage said: sent to the backend, or held back by the preview.
    const sent = () => Vocabulary.wasSent(decisions)
    const held = () => Vocabulary.wasHeldBack(decisions)
    const started = Date.now()
    // A client's own script is its request: what it writes of what it reads, its author chose.
    const keeps = deps.provenance === undefined ? "everything" : deps.provenance.keeps
    const flow = { read: [...ledger.read], origins: ledger.originsOf(given), plan: run.plan, keeps }
    const outcome = yield* Effect.result(
      deps.call({
        via: "script",
        flow,
        name,
        target: tool === undefined ? undefined : { backendId: tool.entry.backendId, own: tool.entry.toolName, entry: tool.entry },
        params: { name, arguments: given },
        preview: run.dryRun,
        decisions
      })
    ).pipe(
      Effect.onInterrupt(() =>
        Effect.sync(() => {
          // Stopped as the run ended: listed if it had reached its backend.
          if (sent())
            stopped.push({ tool: name, arguments: shown(given), ms: Date.now() - started, isError: true, interrupted: true })
        })
      )
    )
    const ms = sent() ? Date.now() - started : 0
    // Every value handed into the sandbox is data, an error's text as much as a result: what a
    // backend says when it fails (a page's 404 text) may carry instructions too.
    const readError = (text: string) =>
      tool === undefined
        ? Effect.void
        : Effect.asVoid(ledger.record({ backendId: tool.entry.backendId, tool: name, arguments: given }, text))
    if (Result.isFailure(outcome)) {
      if (outcome.failure._tag === "BackendError") yield* readError(outcome.failure.message)
      // Refused before any backend was chosen (unknown, hidden, quarantined): not one of its calls.
      const unknown = decisions.some((d) => d.stage === "find" && d.refused === true)
      return {
        ok: false,
        message: outcome.failure.message,
        record: unknown ? undefined : { tool: name, arguments: shown(given), ms, isError: true }
      }
    }
    const result = outcome.success
    // A preview held it back (checked, not run): listed as such.
    if (held())
      return { ok: true, value: result, record: { tool: name, arguments: shown(given), ms: 0, isError: false, dryRun: true } }
    if (!isCallToolResult(result))
      return { ok: true, value: result, record: { tool: name, arguments: shown(given), ms, isError: false } }
    if (result.isError === true) {
      const message = resultText(result) || `${name} reported an error`
      yield* readError(message)
      return {
        ok: false,
        message,
        record: { tool: name, arguments: shown(given), ms, isError: true }
      }
    }
    const value = valueOf(result)
    if (tool !== undefined) {
      yield* ledger.record({ backendId: tool.entry.backendId, tool: name, arguments: given }, JSON.stringify(value) ?? "")
    }
    return { ok: true, value, record: { tool: name, arguments: shown(given), ms, isError: false } }
  })

/** `searchTools`: the declarations of the tools that match `query`; the script is told when none does. */
const searchIn =
  (deps: Deps, tools: ReadonlyArray<ScriptTool>) =>
  (query: string): string => {
    const found = new Set(matchingEntries(deps.catalog().entries, query, SEARCH_RESULTS).map((e) => e.name))
    const matches = tools.filter((t) => found.has(t.exposed))
    return matches.length === 0 ? "// no tool matches" : (Declarations.declarations(matches) ?? "")
  }

/** The names the script may call: its tools, and the held ones (calling one says why it is held). */
const namesOf = (deps: Deps, tools: ReadonlyArray<ScriptTool>, byName: ReadonlyMap<string, ScriptTool>) => [
  ...tools.map((t) => [t.namespace, t.key, t.exposed] as const),
  ...(deps.held?.() ?? [])
    .filter((h) => !byName.has(h.exposed))
    .map((h) => {
      const path = Declarations.pathOf(h.exposed, deps.namespaceOf(h.backendId))
      return [path.namespace, path.key, h.exposed] as const
    })
]

/** What the client gets of a run: the script's value and what it logged and called, or its error named. */
const resultOf = (outcome: Sandbox.Outcome, calls: ReadonlyArray<Sandbox.CallRecord>, dryRun: boolean): CallToolResult => {
  if (outcome.ok) {
    const text = outcome.text ? (outcome.value as string) : JSON.stringify(outcome.value, null, 2)
    return {
      content: [{ type: "text", text }],
      structuredContent: { result: outcome.value, logs: outcome.logs, calls, ...(dryRun ? { dryRun: true } : {}) }
    }
  }
  const where = outcome.line === undefined ? "" : ` (line ${outcome.line})`
  const limit = outcome.limit === undefined ? "" : ` [limit: ${outcome.limit}]`
  const text = `${outcome.name}${where}: ${outcome.message}${limit}; ${calls.length} tool call${calls.length === 1 ? "" : "s"} made`
  return {
    ...textResult(text, true),
    structuredContent: {
      error: { name: outcome.name, message: outcome.message, line: outcome.line, limit: outcome.limit },
      logs: outcome.logs,
      calls
    }
  }
}

const runOnce = (params: unknown, deps: Deps): Effect.Effect<CallToolResult, InvalidParams> =>
  Effect.gen(function* () {
    const began = Date.now()
    const decoded = decodeParams(params ?? {})
    if (Result.isFailure(decoded)) {
      const issues = formatIssues(decoded.failure)
      return yield* new InvalidParams({ message: `Invalid arguments for ${RUN_CODE_TOOL_NAME}: ${issues.join("; ")}`, issues })
    }
    const { code, dryRun = false, timeoutMs } = decoded.success
    const Sandbox = loadedSandbox ?? (loadedSandbox = yield* Effect.promise(() => import("../../sandbox/Sandbox.js")))
    const limits = limitsOf(deps.settings, timeoutMs, Sandbox.DEFAULT_LIMITS)
    const tools = scriptTools(deps.catalog(), deps.namespaceOf)
    const byName = new Map(tools.map((t) => [t.exposed, t]))
    const run: RunState = {
      deps,
      byName,
      ledger: deps.provenance?.ledger ?? new Provenance.Ledger(code),
      plan: deps.provenance?.plan(),
      dryRun,
      stopped: []
    }
    const host: Sandbox.Host = {
      call: (name, args) =>
        Effect.withSpan("RunCode.call", { attributes: { "gen_ai.tool.name": name } })(callOnce(run, name, args)),
      search: searchIn(deps, tools)
    }
    const names = namesOf(deps, tools, byName)
    let outcome = yield* Sandbox.run(code, names, limits, host)
    // TypeScript: run again with its annotations stripped (esbuild, loaded only for this).
    if (!outcome.ok && outcome.name === "SyntaxError" && outcome.calls.length === 0) {
      const stripped = yield* Effect.promise(() => stripTypes(code))
      if (stripped !== undefined && stripped.trim() !== code.trim()) outcome = yield* Sandbox.run(stripped, names, limits, host)
    }
    yield* Effect.logInfo("code mode run", {
      ok: outcome.ok,
      calls: outcome.calls.length,
      ...(outcome.ok ? {} : { error: outcome.name, ...(outcome.limit === undefined ? {} : { limit: outcome.limit }) })
    })
    const calls = [...outcome.calls, ...run.stopped].map((c) => ({ ...c }))
    yield* publish(code, outcome, Date.now() - began)
    return resultOf(outcome, calls, dryRun)
  })
