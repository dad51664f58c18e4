/**
 * Orchestration with `mode: "code"`: the model is offered one function, `run_code {code}`, whose
 * description declares the best-ranked tools (the rest reachable with `searchTools` inside the
 * script), and writes one script that calls them; the gateway runs it as `agentify_run_code` does
 * (see Code), under the same rules. A script that fails goes back to the model as the tool message,
 * for a repair within `maxSteps`; the last successful run is the result, with the script in
 * `_meta["agentify/code"]` and its calls in `_meta["agentify/steps"]`. A dry run runs read-only
 * tools only and returns the script with its held-back calls.
 */
import { Effect } from "effect"
import type { Catalog } from "../../catalog/ToolCatalog.js"
import { type CatalogEntry, rankTask } from "../../catalog/ToolCatalog.js"
import type { CodeMode, ConfirmTools } from "../../config/Config.js"
import { type BackendError, type NotConfigured } from "../../protocol/Errors.js"
import { InvalidPlan, NoActionDetermined, type LlmRequestFailed } from "../Errors.js"
import type { CallToolResult, TaskContext } from "../../protocol/Mcp.js"
import type { OrchestrationStep } from "../../observability/Events.js"
import * as Declarations from "../../sandbox/Declarations.js"
import type { ChatMessage, ChatResponse, ChatTool } from "../model/Chat.js"
import * as Code from "./Code.js"
import * as Provenance from "../Provenance.js"
import * as Intent from "../Intent.js"
import { DATA_RULE } from "../Prompts.js"
import type * as Results from "../Results.js"
import { addUsage, type OnStep, type StepRecord, withSteps } from "../Steps.js"
import type { Confirm } from "../../call/Vocabulary.js"
import * as Meta from "../../json/Meta.js"
import { field, numberField, stringField } from "../../json/Json.js"

export const RUN_CODE_FUNCTION = "run_code"

export const CODE_PROMPT = [
  "You are the orchestrator of an MCP gateway. You act by writing one JavaScript script that calls the gateway's tools, passed to the function run_code.",
  'The script is the body of an async function: `await tools.<namespace>.<tool>(args)` calls a tool and resolves to its structuredContent, else its text; a failed call rejects with an Error. Combine and filter the data inside the script and `return` only what the user needs (JSON). Declarations of the best-matching tools are in run_code\'s description; `await searchTools("what it does")` returns declarations of others.',
  "The script's result comes back to you: if it failed, correct it and call run_code again; when the task is done, answer in one or two sentences without calling anything.",
  "Use the context to fill in parameters: resolve relative paths against the current working directory, read 'this file' as the active document, and use the selected text where the request refers to it.",
  "If the request is ambiguous or not supported by any tool, call nothing and say briefly what is missing.",
  DATA_RULE
].join("\n")

/**
 * The one function offered, declaring the `maxTools` tools that best match the task (see
 * catalog/TaskRank); `used`: tools the scripts called so far, declared whatever the ranking says,
 * and ranked with the request (a later script sees a set re-ranked with what the work has shown).
 */
export const runCodeFunction = (
  catalog: Catalog,
  query: string,
  context: TaskContext | null | undefined,
  maxTools: number,
  namespaceOf: (backendId: string) => string,
  used: ReadonlyArray<string> = [],
  semantic: ReadonlyArray<CatalogEntry> = []
): ChatTool => {
  const kept = used.filter((name) => catalog.byName.has(name))
  const about = kept.map((name) => {
    const entry = catalog.byName.get(name)!
    return `${entry.baseName.replace(/[_-]+/g, " ")} ${entry.tool.description ?? ""}`.slice(0, 300)
  })
  const best = new Set(
    catalog.entries.length <= maxTools
      ? catalog.entries.map((e) => e.name)
      : [...kept, ...rankTask(catalog.entries, query, maxTools, context, about, semantic).map((e) => e.name)].slice(
          0,
          Math.max(maxTools, kept.length)
        )
  )
  const declared = Code.scriptTools(catalog, namespaceOf).filter((t) => best.has(t.exposed))
  const rest = catalog.entries.length - declared.length
  return {
    type: "function",
    function: {
      name: RUN_CODE_FUNCTION,
      description: [
        "Runs one JavaScript script (the body of an async function) whose calls of the tools below run for real; returns what the script returns, its console.log lines and its calls.",
        rest > 0
          ? `${rest} more tools are not declared here: \`await searchTools("query")\` in the script returns their declarations.`
          : "",
        Declarations.API,
        Declarations.declarations(declared) ?? ""
      ]
        .filter((line) => line !== "")
        .join("\n"),
      parameters: {
        type: "object",
        properties: { code: { type: "string", description: "The script: the body of an async function." } },
        required: ["code"]
      }
    }
  }
}

export interface Deps {
  readonly query: string
  readonly messages: Array<ChatMessage>
  readonly fn: ChatTool
  /** The function again, its tools re-ranked with those the scripts called so far (see `runCodeFunction`). */
  readonly refresh?: ((used: ReadonlyArray<string>) => ChatTool) | undefined
  readonly maxSteps: number
  readonly dryRun: boolean
  readonly results: Results.Results
  readonly catalog: () => Catalog
  readonly namespaceOf: (backendId: string) => string
  readonly settings: Exclude<CodeMode, false>
  readonly confirmTools: ConfirmTools
  readonly confirm: Confirm | undefined
  /** Each call of a script, through the call pipeline. */
  readonly call: Code.Deps["call"]
  readonly ask: (tools: ReadonlyArray<ChatTool>) => Effect.Effect<ChatResponse, LlmRequestFailed | NotConfigured>
  readonly onStep: OnStep | undefined
}

/** What the debug UI's record of an orchestration shows of a code-mode result: the script and its calls. */
export const recordOf = (result: unknown): { code?: string; steps: ReadonlyArray<OrchestrationStep> } => {
  const code = Meta.get(result, "agentify/code")
  const steps = (Meta.get(result, "agentify/steps") as ReadonlyArray<StepRecord> | undefined) ?? []
  return {
    ...(typeof code === "string" ? { code } : {}),
    steps: steps.map((s) => ({ step: 1, tool: s.tool, arguments: s.arguments, outcome: s.isError ? "error" : "ok", ms: s.ms }))
  }
}

/** The script a run_code call carries, or "" when its arguments hold none. */
const scriptOf = (args: string): string => {
  try {
    return stringField(JSON.parse(args), "code") ?? ""
  } catch {
    return ""
  }
}

/** The turns of a code-mode orchestration, to the last successful run's result. */
export const orchestrate = (
  deps: Deps
): Effect.Effect<unknown, LlmRequestFailed | NotConfigured | InvalidPlan | NoActionDetermined | BackendError> =>
  Effect.gen(function* () {
    const steps: Array<StepRecord> = []
    let usage: ChatResponse["usage"] = undefined
    let last: { readonly result: CallToolResult; readonly code: string } | undefined
    let failed: { readonly code: string; readonly text: string } | undefined
    let answer: string | undefined
    // The request is trusted; the first script too (written before any data was read), and the tools
    // it called are the plan: a later script, written after reading results, is held outside it.
    const ledger = new Provenance.Ledger(deps.messages.map((m) => m.content ?? "").join("\n"))
    let plan: ReadonlyArray<string> | undefined
    const keeps = Intent.keeping(deps.query)
    let fn = deps.fn
    for (let step = 1; step <= deps.maxSteps; step++) {
      const response = yield* deps.ask([fn])
      usage = addUsage(usage, response.usage)
      if (response.toolCalls.length === 0) {
        if (last === undefined && failed !== undefined) break
        if (last === undefined) {
          return yield* new NoActionDetermined({
            query: deps.query,
            toolCalls: 0,
            ...(response.content ? { modelMessage: response.content } : {})
          })
        }
        answer = response.content ?? undefined
        break
      }
      // One script per turn: the first run_code call runs, any other is told to wait.
      const [call, ...others] = response.toolCalls
      const code = scriptOf(call!.arguments)
      // A script is written from the request alone until something was read: a result or an error
      // a tool gave back (a round whose calls all failed has read their errors). A script that
      // failed by itself, having called nothing, read nothing: its repair is still the request's.
      const first = ledger.read.length === 0
      if (first) ledger.trust(code)
      if (deps.onStep !== undefined) yield* deps.onStep(step, deps.maxSteps, [RUN_CODE_FUNCTION])
      const run =
        call!.name !== RUN_CODE_FUNCTION || code.trim() === ""
          ? undefined
          : yield* Code.run(
              { code, dryRun: deps.dryRun },
              {
                catalog: deps.catalog,
                namespaceOf: deps.namespaceOf,
                settings: deps.settings,
                call: deps.call,
                provenance: { ledger, plan: () => plan, keeps }
              }
            ).pipe(Effect.orElseSucceed(() => undefined))
      const listed = field(run?.structuredContent, "calls")
      const calls = (Array.isArray(listed) ? listed : []).map((c: unknown): StepRecord => ({
        tool: stringField(c, "tool") ?? "",
        arguments: field(c, "arguments") ?? {},
        isError: field(c, "isError") === true,
        ms: numberField(c, "ms") ?? 0
      }))
      steps.push(...calls)
      // The next script sees the tools re-ranked with those called so far (still declared).
      if (deps.refresh !== undefined && calls.length > 0) fn = deps.refresh([...new Set(steps.map((c) => c.tool))])
      // The calls of the script written before anything was read are the plan, whatever they gave back.
      if (first && ledger.read.length > 0) plan = [...new Set(calls.map((c) => c.tool))]
      const content =
        run === undefined
          ? `Not run: call ${RUN_CODE_FUNCTION} with {"code": "<the script>"}.`
          : run.isError === true
            ? `The script failed: ${run.content.map((c: unknown) => stringField(c, "text") ?? "").join("\n")}. Correct it and call ${RUN_CODE_FUNCTION} again.`
            : deps.results.asData(deps.results.toolMessage(run))
      deps.messages.push({ role: "assistant", content: response.content, toolCalls: deps.results.replayed(response.toolCalls) })
      deps.messages.push({ role: "tool", toolCallId: call!.id, content })
      for (const other of others) {
        deps.messages.push({ role: "tool", toolCallId: other.id, content: "Not run: one script per turn." })
      }
      if (run !== undefined && run.isError !== true) {
        last = { result: run, code }
        failed = undefined
        if (deps.dryRun) break
      } else failed = { code, text: content }
    }
    if (last === undefined) {
      return yield* new InvalidPlan({
        message: failed === undefined ? "the model wrote no script within maxSteps" : failed.text,
        toolName: RUN_CODE_FUNCTION,
        arguments: failed === undefined ? undefined : { code: failed.code },
        steps
      })
    }
    return Meta.merge(withSteps(last.result, steps, answer, usage), { "agentify/code": last.code })
  })
