/**
 * Routing for tasks, on a public benchmark no one here wrote: LiveMCPBench (Mo et al., 2025,
 * arXiv 2508.01780; Apache-2.0, see data/livemcpbench/ATTRIBUTION.md). Its 527 tools of 70 real
 * MCP servers are one catalog, as a gateway with those servers would list them; each of its tasks'
 * questions is ranked over all of them as the gateway ranks a request, and the tools its
 * annotators recorded for the task are looked for in the top 5, 10 and 32 (`maxToolsPerRequest`).
 *
 * The categories Office, Lifestyle and Leisure are the ones the ranking may be tuned on; Finance,
 * Travel and Shopping are held out: measured, never tuned on, reported apart.
 *
 *     npm run eval:routing            the table, per category, and the project's single-tool sets; and
 *                                     what a client's agentify_search_tools returns for each task
 *     npm run eval:routing -- --json  the figures as JSON
 *     npm run eval:routing -- --misses  each tuned task's tools missing from the 32 (the held-out
 *                                       categories' are not shown: they are not to be tuned on)
 */
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { type BackendTools, buildCatalog, type CatalogEntry, rankEntries, rankTask } from "../../src/catalog/ToolCatalog.js"
import type { Tool } from "../../src/protocol/Mcp.js"
import { search } from "../../src/gateway/methods/Listing.js"

const here = dirname(fileURLToPath(import.meta.url))
const DATA = join(here, "data", "livemcpbench")

export const TUNED = ["Office", "Lifestyle", "Leisure"] as const
export const HELD_OUT = ["Finance", "Travel", "Shopping"] as const
const CUTS = [5, 10, 32] as const

interface Row {
  readonly server: string
  readonly tool: string
  readonly description: string
  readonly inputSchema?: unknown
}

export interface Task {
  readonly id: string
  readonly question: string
  readonly category: string
  /** The tools its annotators recorded that the corpus holds, by name (a name may be several servers'). */
  readonly tools: ReadonlyArray<string>
}

/** The corpus as a gateway's backends: one per server, its tools as listed. */
export const backends = (): ReadonlyArray<BackendTools> => {
  const rows = (JSON.parse(readFileSync(join(DATA, "tools.json"), "utf8")) as { tools: ReadonlyArray<Row> }).tools
  const byServer = new Map<string, Array<Tool>>()
  for (const row of rows) {
    const tools = byServer.get(row.server) ?? []
    tools.push({
      name: row.tool,
      description: row.description,
      inputSchema: (row.inputSchema as Tool["inputSchema"]) ?? { type: "object" }
    })
    byServer.set(row.server, tools)
  }
  return [...byServer].map(([server, tools]) => ({ backendId: server.replace(/[^a-zA-Z0-9_-]/g, "_"), tools }))
}

/** The tasks whose recorded tools the corpus holds (at least one). */
export const tasks = (names: ReadonlySet<string>): ReadonlyArray<Task> => {
  const raw = JSON.parse(readFileSync(join(DATA, "all_annotations.json"), "utf8")) as ReadonlyArray<{
    task_id: string
    Question: string
    category: string
    "Annotator Metadata": { Tools: string }
  }>
  return raw
    .map((t) => ({
      id: t.task_id,
      question: t.Question,
      category: t.category,
      tools: [
        ...new Set(
          t["Annotator Metadata"].Tools.split("\n")
            .map((line) => line.replace(/^\s*\d+\.\s*/, "").trim())
            .filter((name) => names.has(name))
        )
      ]
    }))
    .filter((t) => t.tools.length > 0)
}

export type Ranker = (entries: ReadonlyArray<CatalogEntry>, query: string, k: number) => ReadonlyArray<CatalogEntry>

export interface Figures {
  readonly tasks: number
  /** Share of a task's tools in the top k, averaged over the tasks. */
  readonly share: Readonly<Record<number, number>>
  /** Tasks with every tool they need in the top 32. */
  readonly complete: number
  readonly msPerQuery: number
}

const round = (n: number) => Math.round(n * 100) / 100

/** Ranks every task and measures what the offered tools hold of what it needs. */
/** What the gateway offers: the task ranking (see src/catalog/TaskRank). */
export const offered: Ranker = (entries, query, k) => rankTask(entries, query, k)
/** The whole request ranked as one query: what the gateway offered before the task ranking. */
export const requestOnly: Ranker = rankEntries

export const measure = (
  ranker: Ranker = offered,
  only?: ReadonlyArray<string>
): { readonly all: Figures; readonly byCategory: ReadonlyMap<string, Figures>; readonly misses: ReadonlyArray<string> } => {
  const catalog = buildCatalog(backends())
  const names = new Set(catalog.entries.map((e) => e.toolName))
  const chosen = tasks(names).filter((t) => only === undefined || only.includes(t.category))
  // The index is built once per tool list, as the gateway does; the first query pays it.
  ranker(catalog.entries, "warm up", 32)
  const per: Array<{ task: Task; found: Record<number, number>; ms: number }> = []
  const misses: Array<string> = []
  for (const task of chosen) {
    const started = performance.now()
    const ranked = ranker(catalog.entries, task.question, 32)
    const ms = performance.now() - started
    const found: Record<number, number> = {}
    for (const k of CUTS) {
      const offered = new Set(ranked.slice(0, k).map((e) => e.toolName))
      found[k] = task.tools.filter((t) => offered.has(t)).length / task.tools.length
    }
    const offered = new Set(ranked.map((e) => e.toolName))
    const missing = task.tools.filter((t) => !offered.has(t))
    if (missing.length > 0) misses.push(`[${task.category}] ${task.question}\n    missing: ${missing.join(", ")}`)
    per.push({ task, found, ms })
  }
  const figures = (of: ReadonlyArray<(typeof per)[number]>): Figures => ({
    tasks: of.length,
    share: Object.fromEntries(CUTS.map((k) => [k, round(of.reduce((n, p) => n + p.found[k]!, 0) / Math.max(1, of.length))])),
    complete: of.filter((p) => p.found[32] === 1).length,
    msPerQuery: round(of.reduce((n, p) => n + p.ms, 0) / Math.max(1, of.length))
  })
  const categories = [...new Set(per.map((p) => p.task.category))]
  return {
    all: figures(per),
    byCategory: new Map(categories.map((c) => [c, figures(per.filter((p) => p.task.category === c))])),
    misses
  }
}

const row = (name: string, f: Figures) =>
  `| ${name} | ${f.tasks} | ${f.share[5]} / ${f.share[10]} / ${f.share[32]} | ${f.complete} of ${f.tasks} | ${f.msPerQuery} |`

/**
 * A client's `agentify_search_tools` with the task's question (gateway/methods/Listing `search`):
 * the share of the task's tools among the first 5 and 10 it returns, a search of `limit` 5 and one
 * of `limit` 10, as a client asks them (lexical: no embeddings here).
 */
export const clientSearch = (
  only?: ReadonlyArray<string>
): { readonly tasks: number; readonly at5: number; readonly at10: number } => {
  const catalog = buildCatalog(backends())
  const names = new Set(catalog.entries.map((e) => e.toolName))
  const chosen = tasks(names).filter((t) => only === undefined || only.includes(t.category))
  const share = (task: Task, limit: number) => {
    const returned = new Set(search(catalog.entries, task.question, limit).map((e) => e.toolName))
    return task.tools.filter((t) => returned.has(t)).length / task.tools.length
  }
  const mean = (limit: number) => round(chosen.reduce((n, t) => n + share(t, limit), 0) / Math.max(1, chosen.length))
  return { tasks: chosen.length, at5: mean(5), at10: mean(10) }
}

const searchRow = (name: string, f: ReturnType<typeof clientSearch>) => `| ${name} | ${f.tasks} | ${f.at5} / ${f.at10} |`

/** The client's search, per category as the table above. */
export const searchTable = (): string =>
  [
    "| agentify_search_tools (a client's search) | tasks | share of a task's tools in the first 5 / 10 returned |",
    "|---|---|---|",
    searchRow("all", clientSearch()),
    searchRow(`tuned on (${TUNED.join(", ")})`, clientSearch(TUNED)),
    searchRow(`held out (${HELD_OUT.join(", ")})`, clientSearch(HELD_OUT)),
    ...[...TUNED, ...HELD_OUT].map((c) =>
      searchRow(`  ${c}${(HELD_OUT as ReadonlyArray<string>).includes(c) ? " (held out)" : ""}`, clientSearch([c]))
    )
  ].join("\n")

export const table = (): string => {
  const lines = [
    "| LiveMCPBench (527 tools) | tasks | share of a task's tools in the top 5 / 10 / 32 | every tool in the 32 | ms per query |",
    "|---|---|---|---|---|"
  ]
  for (const [name, ranker] of [
    ["the request as one query (before)", requestOnly],
    ["the task ranking (offered now)", offered]
  ] as const) {
    const { all, byCategory } = measure(ranker)
    lines.push(
      `| **${name}** | | | | |`,
      row("all", all),
      row(`tuned on (${TUNED.join(", ")})`, measure(ranker, TUNED).all),
      row(`held out (${HELD_OUT.join(", ")})`, measure(ranker, HELD_OUT).all),
      ...[...TUNED, ...HELD_OUT].map((c) =>
        row(`  ${c}${(HELD_OUT as ReadonlyArray<string>).includes(c) ? " (held out)" : ""}`, byCategory.get(c)!)
      )
    )
  }
  return lines.join("\n")
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes("--json")) {
    const { all, byCategory } = measure()
    const search = { all: clientSearch(), tuned: clientSearch(TUNED), heldOut: clientSearch(HELD_OUT) }
    process.stdout.write(`${JSON.stringify({ all, byCategory: Object.fromEntries(byCategory), search }, null, 2)}\n`)
  } else {
    process.stdout.write(`${table()}\n\n${searchTable()}\n`)
    if (process.argv.includes("--misses")) process.stdout.write(`\n${measure(offered, TUNED).misses.join("\n")}\n`)
  }
}
