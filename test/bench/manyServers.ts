/**
 * Many servers: LiveMCPBench's 70 servers as stand-in processes built on the MCP SDK
 * (test/fixtures/livemcpbench-server.mjs, serving the real tool lists of
 * test/eval/data/livemcpbench), behind one gateway, in its default configuration ("onUse") against
 * today's behaviour (`start: "always"`, every backend at `initialize`) in the same run; each on a
 * fresh state directory (first start) and again on the same one (second start).
 *
 * Measured per run: time to `initialize` (from spawn), `ping` while the backends start, time until every server's tools are
 * searchable (a search for one tool of each server finds it), processes and resident memory of the
 * gateway's tree after `initialize` and after a session that used 3 servers, the first call of a
 * backend not started against a call of a started one, and `tools/list`'s size and bytes.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { RpcClient } from "./client.js"
import { descendants, rssKiB } from "../support/process.js"

export interface ManyServersOptions {
  readonly bin: string
  readonly root: string
  readonly env: NodeJS.ProcessEnv
}

interface Run {
  readonly mode: "onUse" | "always"
  readonly start: "first" | "second"
  readonly initializeMs: number
  /** `ping` while the backends start (right after `initialize`, 20 in a row): the slowest, ms. */
  readonly pingMaxMs: number
  readonly searchableMs: number
  readonly afterInitialize: { readonly processes: number; readonly rssMiB: number }
  readonly afterSession: { readonly processes: number; readonly rssMiB: number }
  readonly firstCallMs: number
  readonly startedCallMs: number
  readonly listedTools: number
  readonly listedBytes: number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const round1 = (n: number) => Math.round(n * 10) / 10

/** The gateway and every process below it (its watchdog aside): how many, and their resident MiB. */
const tree = (pid: number) => {
  const pids = [pid, ...descendants(pid)]
  const rss = (p: number) => {
    try {
      return rssKiB(p)
    } catch {
      return 0 // exited meanwhile
    }
  }
  return { processes: pids.length, rssMiB: round1(pids.reduce((sum, p) => sum + rss(p), 0) / 1024) }
}

/**
 * The tree once it has settled: read every 100 ms until three readings in a row have the same
 * processes and resident memory within 2 MiB of each other (a backend that just answered may still be
 * growing, one stopped may still be exiting), at most 5 s; the last reading.
 */
const settledTree = async (pid: number) => {
  const readings = [tree(pid)]
  const deadline = performance.now() + 5_000
  const steady = () => {
    const last = readings.slice(-3)
    return (
      last.length === 3 &&
      last.every((r) => r.processes === last[0]!.processes) &&
      Math.max(...last.map((r) => r.rssMiB)) - Math.min(...last.map((r) => r.rssMiB)) <= 2
    )
  }
  while (!steady() && performance.now() < deadline) {
    await sleep(100)
    readings.push(tree(pid))
  }
  return readings[readings.length - 1]!
}

/** The servers, in the benchmark's order, with one tool of each (what a search looks for). */
export const serversOf = (root: string) => {
  const data = JSON.parse(readFileSync(join(root, "test", "eval", "data", "livemcpbench", "tools.json"), "utf8")) as {
    tools: Array<{ server: string; tool: string }>
  }
  const firstTool = new Map<string, string>()
  for (const row of data.tools) if (!firstTool.has(row.server)) firstTool.set(row.server, row.tool)
  return [...firstTool].map(([server, tool], i) => ({ id: `s${String(i).padStart(2, "0")}`, server, tool }))
}

const textOf = (result: any): string => (Array.isArray(result?.content) ? String(result.content[0]?.text ?? "") : "")

/** The names a search for `query` returns. */
export const search = async (gateway: RpcClient, query: string): Promise<Array<string>> => {
  const reply = await gateway.request("tools/call", { name: "agentify_search_tools", arguments: { query, limit: 10 } })
  const tools = reply.result?.structuredContent?.tools
  return Array.isArray(tools) ? tools.map((t: { name: string }) => t.name) : []
}

const runOnce = async (
  options: ManyServersOptions,
  config: string,
  stateDir: string,
  mode: Run["mode"],
  start: Run["start"],
  servers: ReturnType<typeof serversOf>
): Promise<Run> => {
  const gateway = new RpcClient(process.execPath, [options.bin, "--config", config], {
    cwd: stateDir,
    env: { ...options.env, AGENTIFY_STATE_DIR: stateDir }
  })
  try {
    const init = await gateway.initialize()
    const initializeMs = round1(init.at - gateway.spawnedAt)
    const afterInitialize = tree(gateway.pid)
    // The gateway answers while its backends start (a few per core at a time, see StartSlots).
    const pings: Array<number> = []
    for (let i = 0; i < 20; i++) pings.push((await gateway.request("ping", {})).ms)
    // Every server's tools searchable: a search for one tool of each finds it (polled).
    const names = new Map<string, string>()
    const deadline = performance.now() + 120_000
    while (names.size < servers.length && performance.now() < deadline) {
      for (const s of servers) {
        if (names.has(s.id)) continue
        const found = (await search(gateway, s.tool)).find((name) => name.startsWith(`${s.id}__`))
        if (found !== undefined) names.set(s.id, found)
      }
      if (names.size < servers.length) await sleep(100)
    }
    const searchableMs = round1(performance.now() - gateway.spawnedAt)
    const listed = await gateway.request("tools/list", {})
    const listedTools = (listed.result?.tools ?? []).length
    const listedBytes = JSON.stringify(listed.result ?? {}).length
    // A session using 3 servers (not the first ones: nothing special about them).
    const used = [servers[10]!, servers[30]!, servers[50]!]
    const firstCall = await gateway.request("tools/call", { name: names.get(used[0]!.id), arguments: {} })
    if (firstCall.error !== undefined || !textOf(firstCall.result).includes("called with")) {
      throw new Error(`the first call failed: ${JSON.stringify(firstCall.error ?? firstCall.result)}${gateway.stderrTail()}`)
    }
    const startedCalls: Array<number> = []
    for (let i = 0; i < 5; i++) {
      startedCalls.push((await gateway.request("tools/call", { name: names.get(used[0]!.id), arguments: {} })).ms)
    }
    for (const s of used.slice(1)) await gateway.request("tools/call", { name: names.get(s.id), arguments: {} })
    const afterSession = await settledTree(gateway.pid)
    return {
      mode,
      start,
      initializeMs,
      pingMaxMs: round1(Math.max(...pings)),
      searchableMs: names.size === servers.length ? searchableMs : Number.NaN,
      afterInitialize,
      afterSession,
      firstCallMs: round1(firstCall.ms),
      startedCallMs: round1(startedCalls.sort((a, b) => a - b)[2]!),
      listedTools,
      listedBytes
    }
  } finally {
    await gateway.close()
  }
}

/**
 * `initialize` alone (ms from spawn), `runs` times alternating between `config` on `stateDir` (a
 * second start: every backend known) and a gateway with no backend at all (the gateway's own start,
 * on the same machine in the same seconds): the medians and ranges of both.
 */
const secondStarts = async (options: ManyServersOptions, config: string, empty: string, stateDir: string, runs: number) => {
  const once = async (file: string) => {
    const gateway = new RpcClient(process.execPath, [options.bin, "--config", file], {
      cwd: stateDir,
      env: { ...options.env, AGENTIFY_STATE_DIR: stateDir }
    })
    try {
      const init = await gateway.initialize()
      return init.at - gateway.spawnedAt
    } finally {
      await gateway.close()
    }
  }
  const known: Array<number> = []
  const none: Array<number> = []
  for (let i = 0; i < runs; i++) {
    known.push(await once(config))
    none.push(await once(empty))
  }
  const summary = (times: Array<number>) => {
    const sorted = [...times].sort((a, b) => a - b)
    return { medianMs: round1(sorted[Math.floor(sorted.length / 2)]!), minMs: round1(sorted[0]!), maxMs: round1(sorted.at(-1)!) }
  }
  return { runs, known: summary(known), noBackend: summary(none) }
}

/** What a stand-in costs to start on its own: spawn, initialize and tools/list (median of 5). */
const ownStartMs = async (root: string, server: string): Promise<number> => {
  const times: Array<number> = []
  for (let i = 0; i < 5; i++) {
    const child = new RpcClient(process.execPath, [join(root, "test", "fixtures", "livemcpbench-server.mjs"), "--server", server])
    await child.initialize()
    const listed = await child.request("tools/list", {})
    times.push(listed.at - child.spawnedAt)
    await child.close()
  }
  return round1(times.sort((a, b) => a - b)[2]!)
}

export const benchManyServers = async (options: ManyServersOptions) => {
  const servers = serversOf(options.root)
  const work = mkdtempSync(join(tmpdir(), "agentify-many-"))
  const configOf = (mode: Run["mode"]) => {
    const file = join(work, `config-${mode}.json`)
    const fixture = join(options.root, "test", "fixtures", "livemcpbench-server.mjs")
    const backends = servers.map((s) => ({
      id: s.id,
      type: "stdio",
      command: process.execPath,
      args: [fixture, "--server", s.server]
    }))
    writeFileSync(file, JSON.stringify({ ...(mode === "always" ? { start: "always" } : {}), backends }))
    return file
  }
  const runs: Array<Run> = []
  for (const mode of ["always", "onUse"] as const) {
    const stateDir = mkdtempSync(join(work, `state-${mode}-`))
    const config = configOf(mode)
    runs.push(await runOnce(options, config, stateDir, mode, "first", servers))
    runs.push(await runOnce(options, config, stateDir, mode, "second", servers))
  }
  const own = await ownStartMs(options.root, servers[10]!.server)
  const empty = join(work, "config-empty.json")
  // One backend, disabled: a configuration must name one, and a disabled one is never started.
  writeFileSync(empty, JSON.stringify({ backends: [{ id: "off", command: process.execPath, enabled: false }] }))
  const onUseState = mkdtempSync(join(work, "state-again-"))
  // Met once, then started again and again: the initialize of a second start, as a median.
  await runOnce(options, configOf("onUse"), onUseState, "onUse", "first", servers)
  const again = await secondStarts(options, configOf("onUse"), empty, onUseState, 7)
  return { servers: servers.length, ownStartMs: own, runs, secondStarts: again }
}
