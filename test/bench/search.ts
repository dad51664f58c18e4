/**
 * Searches at their worst (issue 64): a query of 2,000 characters of distinct words the tools use,
 * `limit` 50, what `agentify_search_tools` ranks with (the task ranking, matches only).
 *
 *   in process   the built library's ranking (dist/index.js, as the gateway runs it) over
 *                LiveMCPBench's 527 tools and over 20,000 synthetic ones: CPU and wall ms per search
 *                (CPU: what the search costs, whatever else the machine is doing)
 *   gateway      the built CLI with LiveMCPBench's 70 servers as stand-ins, once every tool is
 *                searchable: a search's round trip, one at a time; then 50 searches sent at once by one
 *                session with a ping every 5 ms beside them: the slowest ping (beside a ping's cost
 *                alone, measured just before), and when the last search was answered
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { pathToFileURL } from "node:url"
import type * as Library from "../../src/index.js"
import { syntheticBackends } from "./catalog.js"
import { percentile, RpcClient, sortedCopy } from "./client.js"
import { search, serversOf } from "./manyServers.js"

export interface SearchOptions {
  readonly bin: string
  readonly root: string
  readonly env: NodeJS.ProcessEnv
  readonly quick: boolean
}

const LIMIT = 50
const round2 = (n: number) => Math.round(n * 100) / 100
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Row {
  readonly server: string
  readonly tool: string
  readonly description?: string
  readonly inputSchema?: unknown
}

const rowsOf = (root: string): ReadonlyArray<Row> =>
  (JSON.parse(readFileSync(join(root, "test", "eval", "data", "livemcpbench", "tools.json"), "utf8")) as { tools: Array<Row> })
    .tools

/**
 * The `n`-th worst-case query: 2,000 characters of distinct words the tools' descriptions use (so
 * that each reaches postings), a different run of them for each `n`.
 */
export const worstQuery = (words: ReadonlyArray<string>, n: number): string => {
  let query = ""
  for (let i = n * 61; query.length < 2_000; i++) query += `${words[(i * 7_919) % words.length]} `
  return query.slice(0, 2_000)
}

const wordsOf = (rows: ReadonlyArray<Row>): ReadonlyArray<string> => [
  ...new Set(rows.flatMap((r) => (r.description ?? "").toLowerCase().match(/[a-z]{3,}/g) ?? []))
]

const summary = (samples: ReadonlyArray<number>) => {
  const sorted = sortedCopy(samples)
  return { p50: round2(percentile(sorted, 50)), p99: round2(percentile(sorted, 99)), max: round2(percentile(sorted, 100)) }
}

/** Each search's CPU and wall ms over `entries`, after a warm-up (the index built, the code compiled). */
const inProcess = (
  library: typeof Library,
  entries: ReadonlyArray<Library.ToolCatalog.CatalogEntry>,
  words: ReadonlyArray<string>,
  runs: number
) => {
  const indexStarted = performance.now()
  library.ToolCatalog.matchingTask(entries, "warm up", LIMIT)
  const indexMs = round2(performance.now() - indexStarted)
  for (let i = 0; i < 20; i++) library.ToolCatalog.matchingTask(entries, worstQuery(words, 10_000 + i), LIMIT)
  const cpu: Array<number> = []
  const wall: Array<number> = []
  for (let i = 0; i < runs; i++) {
    const query = worstQuery(words, i)
    const cpuStarted = process.cpuUsage()
    const started = performance.now()
    library.ToolCatalog.matchingTask(entries, query, LIMIT)
    wall.push(performance.now() - started)
    const used = process.cpuUsage(cpuStarted)
    cpu.push((used.user + used.system) / 1_000)
  }
  return { tools: entries.length, indexMs, cpuMs: summary(cpu), wallMs: summary(wall) }
}

/** The gateway with LiveMCPBench's stand-ins: a search at a time, then 50 at once beside pings. */
const throughGateway = async (options: SearchOptions, words: ReadonlyArray<string>, runs: number) => {
  const servers = serversOf(options.root)
  const stateDir = mkdtempSync(join(tmpdir(), "agentify-bench-search-"))
  const config = join(stateDir, "gateway.json")
  const standIn = join(options.root, "test", "fixtures", "livemcpbench-server.mjs")
  writeFileSync(
    config,
    JSON.stringify({
      backends: servers.map((s) => ({ id: s.id, command: process.execPath, args: [standIn, "--server", s.server] })),
      startupTimeoutMs: 120_000
    })
  )
  const gateway = new RpcClient(process.execPath, [options.bin, "--config", config], {
    cwd: stateDir,
    env: { ...options.env, AGENTIFY_STATE_DIR: stateDir }
  })
  try {
    await gateway.initialize()
    // Every server's tools searchable: a search for one tool of each finds it (polled).
    const found = new Set<string>()
    const deadline = performance.now() + 180_000
    while (found.size < servers.length && performance.now() < deadline) {
      for (const s of servers) {
        if (!found.has(s.id) && (await search(gateway, s.tool)).some((name) => name.startsWith(`${s.id}__`))) found.add(s.id)
      }
      if (found.size < servers.length) await sleep(100)
    }
    if (found.size < servers.length) throw new Error(`only ${found.size} of ${servers.length} servers searchable`)
    const call = (query: string) =>
      gateway.request("tools/call", { name: "agentify_search_tools", arguments: { query, limit: LIMIT } })
    for (let i = 0; i < 10; i++) await call(worstQuery(words, 20_000 + i))
    const oneAtATime: Array<number> = []
    for (let i = 0; i < runs; i++) {
      const reply = await call(worstQuery(words, i))
      if (reply.error !== undefined) throw new Error(`search failed: ${JSON.stringify(reply.error)}`)
      oneAtATime.push(reply.ms)
    }
    // What a ping costs alone on this machine now (a busy machine's share of a core), to read the next by.
    const alone: Array<number> = []
    for (let i = 0; i < 100; i++) {
      alone.push((await gateway.request("ping")).ms)
      await sleep(5)
    }
    // Fifty at once from this one session, and a ping every 5 ms until the last is answered.
    const started = performance.now()
    let done = false
    const all = Promise.all(Array.from({ length: 50 }, (_, i) => call(worstQuery(words, 30_000 + i)))).then((replies) => {
      done = true
      return replies
    })
    const pings: Array<number> = []
    while (!done) {
      pings.push((await gateway.request("ping")).ms)
      await sleep(5)
    }
    const replies = await all
    const lastMs = round2(Math.max(...replies.map((r) => r.at)) - started)
    return {
      tools: 527,
      oneAtATimeMs: summary(oneAtATime),
      pingAloneMs: summary(alone),
      fiftyAtOnce: { lastAnsweredMs: lastMs, pings: pings.length, pingMs: summary(pings) }
    }
  } finally {
    await gateway.close()
  }
}

export const benchSearch = async (options: SearchOptions) => {
  const library = (await import(pathToFileURL(join(options.root, "dist", "index.js")).href)) as typeof Library
  const rows = rowsOf(options.root)
  const words = wordsOf(rows)
  const byServer = new Map<string, Array<Library.Mcp.Tool>>()
  for (const row of rows) {
    const tools = byServer.get(row.server) ?? []
    tools.push({
      name: row.tool,
      description: row.description ?? "",
      inputSchema: (row.inputSchema as Library.Mcp.Tool["inputSchema"]) ?? { type: "object" }
    })
    byServer.set(row.server, tools)
  }
  const bench = library.ToolCatalog.buildCatalog(
    [...byServer].map(([server, tools]) => ({ backendId: server.replace(/[^a-zA-Z0-9_-]/g, "_"), tools }))
  )
  const large = library.ToolCatalog.buildCatalog(syntheticBackends(20_000))
  const runs = options.quick ? 50 : 200
  return {
    inProcess: [inProcess(library, bench.entries, words, runs), inProcess(library, large.entries, words, runs)],
    gateway: await throughGateway(options, words, options.quick ? 10 : 30)
  }
}
