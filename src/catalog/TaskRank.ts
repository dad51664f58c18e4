/**
 * Ranking for tasks: which tools to offer the model for a request that may need several of them,
 * among hundreds. One ranking of the whole request lets its strongest words take every place ("analyze
 * Apple's stock ... in a PPT" loses the slide tools), so the places are shared out:
 *
 * - the whole request's ranking (see Rank), whose first `KEPT_FIRST` stay first: what a single-tool
 *   request is offered does not change;
 * - each intent's (see Intents): a five-step task gets tools for all five steps;
 * - each need the request implies but does not name (see Needs): a file to write, today's date;
 * - servers first (two-stage, as MCP-Zero): each backend summarised by its tools, ranked for each
 *   intent; the tools of the servers that match best join, so a server whose tools do not repeat
 *   the request's words is still found by what it is about;
 * - what the work has shown since (`follow`: the tools a plan named, the model's searches);
 * - and, with `embeddings` configured, the semantic ranking of the request (orchestration/Embeddings).
 *
 * The lists are fused by reciprocal rank fusion (Cormack et al., 2009: each list adds w / (60 +
 * rank)), robust without weights tuned between them. Deterministic; each ranking uses the index
 * cached per tool list, so a task costs a few rankings of a few tenths of a millisecond each.
 */
import { backendDescriptionOf, type CatalogEntry } from "./Naming.js"
import { intentsOf } from "./Intents.js"
import { needsOf } from "./Needs.js"
import { matchingEntries, type RankContext, rankEntries, scoreSummaries, type Summary } from "./Rank.js"

/** The whole request's first picks, kept first whatever the other lists say (a task of several steps; of one). */
export const KEPT_FIRST = 5
export const KEPT_FIRST_ONE_STEP = 16
/** How deep each intent's, need's and server's list goes. */
const LIST_DEPTH = 12
/** Reciprocal rank fusion's constant. */
const RRF_K = 60
/** Each list's weight in the fusion: a need the request implies is strong evidence (the request's words cannot say it). */
const WHOLE_WEIGHT = 1
const NEED_WEIGHT = 2
/** The semantic ranking (embeddings, when configured) counts as the request's own list does, twice over its depth. */
const SEMANTIC_WEIGHT = 2
/** Servers taken per intent, and how close to the best one's score a server must come. */
const SERVERS_PER_INTENT = 2
const SERVER_SHARE = 0.6
/** The tools of a matched server that join when none of its tools matches the intent itself. */
const SERVER_TOOLS_UNMATCHED = 3

interface Servers {
  readonly summaries: ReadonlyArray<Summary>
  /** Each server's entries, in their listed order. */
  readonly entries: ReadonlyMap<string, ReadonlyArray<CatalogEntry>>
}

// Per entries array, as the ranking index is.
const serversCache = new WeakMap<ReadonlyArray<CatalogEntry>, Servers>()

/** What each server is about: its configured description, its tools' names and first sentences. */
const serversOf = (entries: ReadonlyArray<CatalogEntry>): Servers => {
  const cached = serversCache.get(entries)
  if (cached !== undefined) return cached
  const byServer = new Map<string, Array<CatalogEntry>>()
  for (const entry of entries) {
    const list = byServer.get(entry.backendId)
    if (list === undefined) byServer.set(entry.backendId, [entry])
    else list.push(entry)
  }
  const summaries = [...byServer].map(([backendId, tools]): Summary => {
    const said = tools.map((e) => {
      const description = (e.source.description ?? "").trim()
      const first = /^[\s\S]*?[.!?\u3002](?=\s|$)/.exec(description)?.[0] ?? description
      return `${e.toolName.replace(/[_-]+/g, " ")}. ${first.slice(0, 200)}`
    })
    // What the configuration says the backend is about comes first (see Naming's backendDescriptionOf).
    const about = tools[0] === undefined ? undefined : backendDescriptionOf(tools[0])
    return { name: backendId, text: [about, ...said].filter((t) => t !== undefined && t !== "").join(" ") }
  })
  const servers = { summaries, entries: byServer }
  serversCache.set(entries, servers)
  return servers
}

/** The servers (backend ids) whose summaries best match `text`: at most SERVERS_PER_INTENT, near the best. */
export const serversMatching = (entries: ReadonlyArray<CatalogEntry>, text: string): ReadonlyArray<string> => {
  const servers = serversOf(entries)
  if (servers.summaries.length < 2) return []
  const scored = scoreSummaries(servers.summaries, text, SERVERS_PER_INTENT)
  const best = scored[0]?.score ?? 0
  return scored.filter((s) => s.score >= best * SERVER_SHARE).map((s) => s.summary.name)
}

/** The tools of the servers that best match `text`: those matching it first, else the first few. */
const serverList = (entries: ReadonlyArray<CatalogEntry>, text: string): Array<CatalogEntry> => {
  const servers = serversOf(entries)
  const out: Array<CatalogEntry> = []
  for (const name of serversMatching(entries, text)) {
    const own = servers.entries.get(name) ?? []
    const matching = matchingEntries(own, text, LIST_DEPTH)
    out.push(...(matching.length > 0 ? matching : own.slice(0, SERVER_TOOLS_UNMATCHED)))
  }
  return out
}

/** Fuses ranked lists by reciprocal rank fusion; ties keep the order in which items were first seen. */
const fuse = (lists: ReadonlyArray<{ readonly list: ReadonlyArray<CatalogEntry>; readonly weight: number }>) => {
  const scores = new Map<CatalogEntry, number>()
  for (const { list, weight } of lists) {
    list.forEach((entry, rank) => scores.set(entry, (scores.get(entry) ?? 0) + weight / (RRF_K + rank + 1)))
  }
  return [...scores].sort((a, b) => b[1] - a[1]).map(([entry]) => entry)
}

/**
 * The `k` tools to offer for `request`, best first: see the module's doc. `follow`: what the work
 * has shown since the request (the tools the plan named, the model's searches), ranked as intents;
 * `semantic`: the tools most like the request by their vectors, best first.
 */
export const rankTask = (
  entries: ReadonlyArray<CatalogEntry>,
  request: string,
  k: number,
  context?: RankContext | null,
  follow: ReadonlyArray<string> = [],
  semantic: ReadonlyArray<CatalogEntry> = []
): Array<CatalogEntry> => {
  if (k <= 0 || entries.length === 0) return []
  const whole = matchingEntries(entries, request, Math.max(k, LIST_DEPTH), context)
  const intents = intentsOf(request)
  const parts = intents.length > 1 ? intents : []
  const lists = [
    { list: whole, weight: WHOLE_WEIGHT },
    { list: semantic.slice(0, LIST_DEPTH), weight: SEMANTIC_WEIGHT },
    ...[...parts, ...follow].map((part) => ({ list: matchingEntries(entries, part, LIST_DEPTH, context), weight: 1 })),
    ...needsOf(request).map((need) => ({ list: matchingEntries(entries, need.wants, LIST_DEPTH), weight: NEED_WEIGHT })),
    ...[request, ...parts].map((part) => ({ list: serverList(entries, part), weight: 1 }))
  ]
  // A request of one step keeps more of its own ranking: the other lists only add what it implies.
  const oneStep = parts.length === 0 && follow.length === 0 && semantic.length === 0
  const picked = new Set<CatalogEntry>(
    whole.slice(0, Math.min(k, oneStep ? KEPT_FIRST_ONE_STEP : Math.min(KEPT_FIRST, Math.ceil(k / 2))))
  )
  for (const entry of fuse(lists)) {
    if (picked.size >= k) break
    picked.add(entry)
  }
  // Short of k: the rest of the whole request's ranking (unmatched tools last, in listed order).
  if (picked.size < k)
    for (const entry of rankEntries(entries, request, k + picked.size, context)) if (picked.size < k) picked.add(entry)
  return [...picked]
}

/** A server's line of the index within `room` characters: `server: tool, tool, ..., ... N more`. */
const indexLine = (server: string, names: ReadonlyArray<string>, room: number): string => {
  const whole = `${server}: ${names.join(", ")}`
  if (whole.length <= room) return whole
  let line = `${server}: `
  let shown = 0
  for (const name of names) {
    const left = names.length - shown - 1
    // Room for this name, and for saying how many are left after it.
    const tail = left === 0 ? 0 : `, ... ${left} more`.length
    if (line.length + (shown === 0 ? 0 : 2) + name.length + tail > room) break
    line += `${shown === 0 ? "" : ", "}${name}`
    shown++
  }
  return shown < names.length ? `${line}${shown === 0 ? "" : ", "}... ${names.length - shown} more` : line
}

/**
 * The tools not `offered`, by server, within `budget` characters: `server: tool, tool, ...`, a
 * server's list cut (saying how many more) when they do not all fit. What a plan may name beyond the
 * offer (MCP-Zero's idea: the model asks for tools by server and name).
 *
 * Every server keeps its line, cut to its share: the budget is shared out evenly, and what a short
 * line leaves over goes to the longer ones (a server of 20,000 tools among small ones shows as many
 * of its tools as the rest leave room for). Only when the servers are too many for even their
 * names and counts to fit do the last ones go, said as `... N more servers`.
 */
export const compactIndex = (entries: ReadonlyArray<CatalogEntry>, offered: ReadonlySet<string>, budget: number): string => {
  const byServer = new Map<string, Array<string>>()
  for (const entry of entries) {
    if (offered.has(entry.name)) continue
    const prefix = `${entry.backendId}__`
    const own = entry.name.startsWith(prefix) ? entry.name.slice(prefix.length) : entry.name
    const names = byServer.get(entry.backendId)
    if (names === undefined) byServer.set(entry.backendId, [own])
    else names.push(own)
  }
  // The servers whose shortest line (`server: ... N more`) fits, in order; the rest said as a count.
  const servers: Array<{ readonly server: string; readonly names: ReadonlyArray<string>; readonly shortest: number }> = []
  let left = budget
  for (const [server, names] of byServer) {
    const shortest = indexLine(server, names, 0).length + 1
    const rest = byServer.size - servers.length - 1
    if (shortest + (rest === 0 ? 0 : `... ${rest} more servers`.length) > left) break
    servers.push({ server, names, shortest })
    left -= shortest
  }
  if (servers.length < byServer.size) left -= `... ${byServer.size - servers.length} more servers`.length
  // What is left over their shortest lines, shared out (water-filling): the servers that need least
  // first, each taking at most an even share of what is left; a short line leaves the rest to others.
  const room = new Map<string, number>()
  const byNeed = servers
    .map((s) => ({ ...s, need: `${s.server}: ${s.names.join(", ")}`.length + 1 - s.shortest }))
    .sort((a, b) => a.need - b.need)
  byNeed.forEach(({ server, shortest, need }, i) => {
    const extra = Math.max(0, Math.min(need, Math.floor(left / (byNeed.length - i))))
    room.set(server, shortest - 1 + extra)
    left -= extra
  })
  const lines = servers.map(({ server, names }) => indexLine(server, names, room.get(server) ?? 0))
  if (servers.length < byServer.size) lines.push(`... ${byServer.size - servers.length} more servers`)
  return lines.join("\n")
}
