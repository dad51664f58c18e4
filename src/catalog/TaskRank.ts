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
 * - and, with `embeddings` configured, the semantic ranking of the request (catalog/semantic/Embeddings).
 *
 * The lists are fused by reciprocal rank fusion (Cormack et al., 2009: each list adds w / (60 +
 * rank)), robust without weights tuned between them. Deterministic; each ranking uses the index
 * cached per tool list, so a task costs a few rankings of a few tenths of a millisecond each.
 */
import { backendDescriptionOf, type CatalogEntry } from "./Naming.js"
import { intentsOf } from "./Intents.js"
import { NEEDS, needsOf } from "./Needs.js"
import { bounded, MAX_RANKED_QUERY_CHARS } from "./Analysis.js"
import { matchingEntries, prepareRanking, type RankContext, scoreSummaries, type Summary } from "./Rank.js"

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
/** What the work has shown since the request that ranks with it: the latest few (a script may call hundreds of tools). */
const MAX_FOLLOWED = 8

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
    return { name: backendId, parts: [about, ...said].filter((t): t is string => t !== undefined && t !== "") }
  })
  const servers = { summaries, entries: byServer }
  serversCache.set(entries, servers)
  return servers
}

/** How many servers' summaries are weighed by their tools, per intent. */
const SERVER_CANDIDATES = 4

/**
 * The servers that best match `text` (at most SERVERS_PER_INTENT, near the best), each with its
 * tools that match `text` themselves. A server's summary is weighted by how its tools match (the
 * share of them that match at all), so that one tool whose description is stuffed with common words
 * does not carry its whole server into every request.
 */
const serversFor = (
  entries: ReadonlyArray<CatalogEntry>,
  text: string
): Array<{ readonly name: string; readonly matching: ReadonlyArray<CatalogEntry> }> => {
  const servers = serversOf(entries)
  if (servers.summaries.length < 2) return []
  const weighed = scoreSummaries(servers.summaries, text, SERVER_CANDIDATES)
    .map(({ summary, score }) => {
      const own = servers.entries.get(summary.name) ?? []
      const matching = matchingEntries(own, text, own.length)
      return { name: summary.name, matching, score }
    })
    .sort((a, b) => b.score - a.score)
  const best = weighed[0]?.score ?? 0
  return weighed.slice(0, SERVERS_PER_INTENT).filter((s) => s.score > 0 && s.score >= best * SERVER_SHARE)
}

/** The servers (backend ids) whose summaries, weighted by their tools, best match `text`. */
export const serversMatching = (entries: ReadonlyArray<CatalogEntry>, text: string): ReadonlyArray<string> =>
  serversFor(entries, bounded(text, MAX_RANKED_QUERY_CHARS)).map((s) => s.name)

/**
 * The tools of the servers that best match `text` that match it themselves: a tool that matches
 * nothing of the request is not brought in by its server alone (a sibling "Uploads data." of a
 * matched tool stays out).
 */
const serverList = (entries: ReadonlyArray<CatalogEntry>, text: string): Array<CatalogEntry> =>
  serversFor(entries, text).flatMap((s) => s.matching.slice(0, LIST_DEPTH))

// Per entries array: a need's phrase is the same for every request, so its list is too.
const needsCache = new WeakMap<ReadonlyArray<CatalogEntry>, Map<string, ReadonlyArray<CatalogEntry>>>()

/** The tools for a need's phrase, ranked once per catalog. */
const needList = (entries: ReadonlyArray<CatalogEntry>, wants: string): ReadonlyArray<CatalogEntry> => {
  let lists = needsCache.get(entries)
  if (lists === undefined) needsCache.set(entries, (lists = new Map()))
  let list = lists.get(wants)
  if (list === undefined) lists.set(wants, (list = matchingEntries(entries, wants, LIST_DEPTH)))
  return list
}

/**
 * Builds what a task's ranking of `entries` uses, now: the tools' index, the servers' summaries and
 * theirs, and each need's list. Called as the tool lists change, so that the first request after a
 * change finds them ready (at 20,000 tools they take about a second to build).
 */
export const prepareTaskRanking = (entries: ReadonlyArray<CatalogEntry>): void => {
  prepareRanking(entries)
  const servers = serversOf(entries)
  if (servers.summaries.length >= 2) scoreSummaries(servers.summaries, "", 1)
  for (const need of NEEDS) needList(entries, need.wants)
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
 * `semantic`: the tools most like the request by their vectors, best first. Only tools that match
 * something of the request are offered (the model searches for more); a request that matches
 * nothing at all gets the tools in their listed order, so that the model has something to work with.
 */
export const rankTask = (
  entries: ReadonlyArray<CatalogEntry>,
  request: string,
  k: number,
  context?: RankContext | null,
  follow: ReadonlyArray<string> = [],
  semantic: ReadonlyArray<CatalogEntry> = []
): Array<CatalogEntry> => {
  const matching = matchingTask(entries, request, k, context, follow, semantic)
  return matching.length > 0 || k <= 0 ? matching : entries.slice(0, k)
}

/**
 * `rankTask`'s tools that match something of the request (or are like it, by their vectors): none
 * for a request that matches nothing. What a search returns: a search that finds nothing says so.
 */
export const matchingTask = (
  entries: ReadonlyArray<CatalogEntry>,
  fullRequest: string,
  k: number,
  context?: RankContext | null,
  fullFollow: ReadonlyArray<string> = [],
  semantic: ReadonlyArray<CatalogEntry> = []
): Array<CatalogEntry> => {
  if (k <= 0 || entries.length === 0) return []
  // What ranking reads of the request and of what followed it (each ranking reads no more either).
  const request = bounded(fullRequest, MAX_RANKED_QUERY_CHARS)
  const follow = fullFollow.slice(-MAX_FOLLOWED).map((text) => bounded(text, MAX_RANKED_QUERY_CHARS))
  const whole = matchingEntries(entries, request, Math.max(k, LIST_DEPTH), context)
  const intents = intentsOf(request)
  const parts = intents.length > 1 ? intents : []
  const lists = [
    { list: whole, weight: WHOLE_WEIGHT },
    { list: semantic.slice(0, LIST_DEPTH), weight: SEMANTIC_WEIGHT },
    ...[...parts, ...follow].map((part) => ({ list: matchingEntries(entries, part, LIST_DEPTH, context), weight: 1 })),
    ...needsOf(request).map((need) => ({ list: needList(entries, need.wants), weight: NEED_WEIGHT })),
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
