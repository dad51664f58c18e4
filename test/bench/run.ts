/**
 * `npm run bench`: the gateway's cost, measured side by side with what it stands in front of.
 *
 *   passthrough   tools/call read_text_file: direct client -> server-filesystem vs client ->
 *                 `node dist/bin.js` -> server-filesystem, at concurrency 1, 8 and 64; beside them,
 *                 for reference, the same through test/bench/bare-proxy.mjs (the least any stdio
 *                 proxy process costs on this machine)
 *   orchestration agentify/orchestrateTask (scripted LLM answering at once) vs tools/call, both on
 *                 the same gateway process (test/support/scripted-gateway.mjs)
 *   startup       spawn -> initialize reply with 1, 5 and 10 fixture backends vs one fixture alone;
 *                 the floors: stdio ping then EOF, whole process, against `node -e 0` and the
 *                 smallest Effect 4 answerer (test/bench/effect4-answerer.mjs, Effect 4 installed
 *                 once into node_modules/.cache, see test/bench/effect4.ts)
 *   memory        the gateway's RSS with 10 backends: idle, after a 1,000-call warm-up, after 20,000
 *                 calls more; and its live heap after a full GC (test/support/heap-probe.mjs)
 *   catalog       buildCatalog + toolFunctions, and rank, over 1,000 tools; a task's ranking over 1,000
 *                 and 20,000, and the first after the lists changed (in this process)
 *   reload        a config file edit to the client's tools/list_changed: a filter edited (the backend
 *                 keeps running) and a backend added (its process starts), over stdio
 *   hostile       rank with a 1 MB query and a 1 MB selection (in this process, the event-loop stall a
 *                 pasted megabyte costs); a 6 MiB tool result direct vs through the gateway (time,
 *                 and the gateway's peak RSS)
 *   codemode      agentify_run_code: the sandbox's start (cold, then warm from the spare thread), a
 *                 call from a script against the same call made directly, and the bytes sent to the
 *                 model for one task (20 files, which mention a word) in mode "tools" and "code"
 *   governance    a call's policy decision (Cedar) and its quotas' count, in this process
 *   manyservers   LiveMCPBench's 70 servers as stand-ins: first and second start, started on use
 *                 against every one at initialize (initialize, every tool searchable, processes and
 *                 memory after initialize and after a session using 3 servers, a first call's cost)
 *   replicas      gateways sharing state in a real redis-server: a request for a session another
 *                 gateway holds (handed to it) against the same at its holder, and a session's
 *                 throughput at its gateway with a store configured against without
 *   search        a worst-case agentify_search_tools (2,000 characters, limit 50): in process over 527
 *                 and 20,000 tools, and through the gateway with LiveMCPBench's 70 stand-ins, alone and
 *                 50 at once beside a ping (test/bench/search.ts)
 *   fanout        a model turn of 10,000 tool calls (ms to the reply, the worst ping meanwhile, the
 *                 exit after stdin EOF in the middle of it) and a 1 MB file cut for the model
 *
 * The machine may be busy: every comparison runs in alternating rounds (A B, B A, ...) so that load
 * falls on both sides alike. No network, but for the startup section's first run (Effect 4 from the
 * npm registry, once). Writes test/bench/results/latest.json.
 *
 * Options: --quick (shorter rounds), --only a,b (sections), --cpu-prof DIR (gateway processes write
 * .cpuprofile files there; summarise them with test/bench/profile.ts), --gateway FILE (measure another
 * build of the CLI than dist/bin.js). A run with any of these writes results/latest.tmp.json instead.
 */
import { execFileSync, spawn } from "node:child_process"
import { once } from "node:events"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir, totalmem } from "node:os"
import { dirname, join, resolve } from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath, pathToFileURL } from "node:url"
import { parseArgs } from "node:util"
import { serverFilesystemEntry } from "../../src/config/Config.js"
import { buildCatalog, rank, rankEntries, rankTask, toolFunctions } from "../../src/catalog/ToolCatalog.js"
import { QUERIES, syntheticBackends } from "./catalog.js"
import { prepareTaskRanking } from "../../src/catalog/TaskRank.js"
import { runCodeToolFor } from "../../src/orchestration/code/Code.js"
import { Effect } from "effect"
import { INDEXED_CHARS, Ledger } from "../../src/orchestration/Provenance.js"
import { median, percentile, type Round, RpcClient, runCalls, runRound, sortedCopy } from "./client.js"
import { startFakeOpenAI } from "../support/fakeOpenAI.js"
import { freePort, type HttpRpcClient, startHttpServer } from "./httpClient.js"
import { benchGovernance } from "./governance.js"
import { benchReplicas } from "./replicas.js"
import { benchManyServers } from "./manyServers.js"
import { EFFECT4_VERSION, effect4Answerer } from "./effect4.js"
import { benchSearch } from "./search.js"

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const DIST_BIN = join(ROOT, "dist", "bin.js")
const FIXTURE = join(ROOT, "test", "fixtures", "mcp-server.mjs")
const HEAP_PROBE = join(ROOT, "test", "support", "heap-probe.mjs")
const BARE_PROXY = join(ROOT, "test", "bench", "bare-proxy.mjs")
const CPU_AT_EXIT = pathToFileURL(join(ROOT, "test", "bench", "cpu-at-exit.mjs")).href
const FAKE_LLM = join(ROOT, "test", "bench", "fake-llm.ts")
const RESULTS = join(ROOT, "test", "bench", "results")

const { values: options } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    "cpu-prof": { type: "string" },
    gateway: { type: "string" }
  }
})
const SECTIONS = [
  "catalog",
  "startup",
  "passthrough",
  "http",
  "orchestration",
  "memory",
  "reload",
  "hostile",
  "fanout",
  "codemode",
  "provenance",
  "governance",
  "replicas",
  "manyservers",
  "search"
] as const
type Section = (typeof SECTIONS)[number]
const only = options.only?.split(",").map((s) => s.trim()) as Array<Section> | undefined
const enabled = (section: Section) => only === undefined || only.includes(section)
const quick = options.quick === true
const profileDir = options["cpu-prof"]
// Another build of the CLI to measure instead of dist/bin.js (a bundle, an older commit's dist).
const BIN = options.gateway === undefined ? DIST_BIN : resolve(options.gateway)
// Its scripted-LLM twin, when that build has one beside it (<root>/test/support/scripted-gateway.mjs).
const SCRIPTED =
  [join(dirname(BIN), "..", "test", "support", "scripted-gateway.mjs")].find(existsSync) ??
  join(ROOT, "test", "support", "scripted-gateway.mjs")

const ROUND_MS = quick ? 400 : 1_000
const ROUNDS = quick ? 2 : 6
const CONCURRENCIES = [1, 8, 64] as const

const work = mkdtempSync(join(tmpdir(), "agentify-bench-"))
const log = (line: string) => process.stderr.write(`${line}\n`)

/** Where every gateway of the run keeps its compiled code (see src/cli/CodeCache.ts): the run's own. */
const compileCache = join(work, "compile-cache")

/**
 * The environment of every gateway: none of the developer's OpenAI settings, info logs, the run's
 * compile cache.
 */
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const e: NodeJS.ProcessEnv = { ...process.env }
  for (const name of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "AGENTIFY_CONFIG", "LOG_LEVEL", "DEBUG_PORT"]) {
    delete e[name]
  }
  return { ...e, NODE_COMPILE_CACHE: compileCache, ...extra }
}

/** Starts the gateway once, so that its compiled code is cached as a user's is after a first start. */
const warmCompileCache = async (start: () => Promise<unknown>) => {
  await start()
}

let configs = 0
const writeConfig = (backends: ReadonlyArray<{ id: string; command: string; args: ReadonlyArray<string> }>) => {
  const file = join(work, `config-${configs++}.json`)
  writeFileSync(file, JSON.stringify({ backends: backends.map((b) => ({ type: "stdio", ...b })) }))
  return file
}

const nodeFlags = (): Array<string> => (profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`])

let stderrFiles = 0
const stderrFile = (name: string) => join(work, `${name}-${stderrFiles++}.stderr`)

const startGateway = (
  entry: string,
  config: string,
  extraEnv: Record<string, string> = {},
  extraFlags: ReadonlyArray<string> = []
) =>
  new RpcClient(process.execPath, [...nodeFlags(), ...extraFlags, entry, "--config", config], {
    cwd: work,
    env: env(extraEnv),
    stderrFile: stderrFile("gateway")
  })

const fixtureArgs = (id: string, flags: ReadonlyArray<string> = []) => [FIXTURE, "--name", id, ...flags]

const round2 = (n: number) => Math.round(n * 100) / 100
const signed = (n: number, unit = "") => `${n >= 0 ? "+" : ""}${n}${unit}`
const round3 = (n: number) => Math.round(n * 1000) / 1000

interface Summary {
  p50: number
  p99: number
  callsPerSecond: number
  calls: number
}

const summarize = (rounds: ReadonlyArray<Round>): Summary => {
  const total = rounds.reduce((n, r) => n + r.latencies.length, 0)
  const all = new Float64Array(total)
  let offset = 0
  for (const r of rounds) {
    all.set(r.latencies, offset)
    offset += r.latencies.length
  }
  all.sort()
  const seconds = rounds.reduce((s, r) => s + r.seconds, 0)
  return {
    p50: round3(percentile(all, 50)),
    p99: round3(percentile(all, 99)),
    callsPerSecond: Math.round(total / seconds),
    calls: total
  }
}

/** Rounds of A and B alternating (A B, B A, A B ...) at one concurrency. */
const alternate = async <T>(a: () => Promise<T>, b: () => Promise<T>, rounds: number): Promise<{ a: Array<T>; b: Array<T> }> => {
  const ra: Array<T> = []
  const rb: Array<T> = []
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      ra.push(await a())
      rb.push(await b())
    } else {
      rb.push(await b())
      ra.push(await a())
    }
  }
  return { a: ra, b: rb }
}

/** Rounds of several sides, the order rotated every round so that load falls on each alike. */
const rotate = async <T>(sides: ReadonlyArray<() => Promise<T>>, rounds: number): Promise<Array<Array<T>>> => {
  const out = sides.map((): Array<T> => [])
  for (let i = 0; i < rounds; i++) {
    for (let k = 0; k < sides.length; k++) {
      const side = (i + k) % sides.length
      out[side]!.push(await sides[side]!())
    }
  }
  return out
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** User plus system CPU time of a process so far, ms (/proc/<pid>/stat, in clock ticks of 10 ms). */
const cpuMs = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/**
 * Resolves once `pid` has spent no CPU for three polls in a row (the work it started after its
 * reply, such as a thread it prepares, is done); throws after `deadlineMs`.
 */
const untilQuiet = async (pid: number, deadlineMs = 5_000): Promise<void> => {
  const deadline = performance.now() + deadlineMs
  let last = cpuMs(pid)
  let still = 0
  while (still < 3) {
    if (performance.now() > deadline) throw new Error(`pid ${pid} did not go quiet within ${deadlineMs} ms`)
    await sleep(20)
    const now = cpuMs(pid)
    still = now === last ? still + 1 : 0
    last = now
  }
}

/** The threads of `pid` (a worker thread is one). */
const threadsOf = (pid: number): number => readdirSync(`/proc/${pid}/task`).length

/** A round, with the CPU time `pid` spent during it. */
const measured = async (pid: number, round: () => Promise<Round>): Promise<Round & { cpuMs: number }> => {
  const before = cpuMs(pid)
  const result = await round()
  return { ...result, cpuMs: cpuMs(pid) - before }
}

const cpuPerCall = (rounds: ReadonlyArray<Round & { cpuMs: number }>): number =>
  Math.round((rounds.reduce((n, r) => n + r.cpuMs, 0) * 1000) / rounds.reduce((n, r) => n + r.calls, 0))

const rssKb = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
  if (match === null) throw new Error(`no VmRSS for pid ${pid}`)
  return Number(match[1])
}

/** RSS once it holds still (five reads 50 ms apart within 256 KB), or as it is after `deadlineMs`. */
const settledRssKb = async (pid: number, deadlineMs = 3_000): Promise<number> => {
  const reads: Array<number> = []
  const deadline = performance.now() + deadlineMs
  for (;;) {
    reads.push(rssKb(pid))
    const last = reads.slice(-5)
    if ((last.length === 5 && Math.max(...last) - Math.min(...last) <= 256) || performance.now() > deadline) return reads.at(-1)!
    await sleep(50)
  }
}

// ---------------------------------------------------------------------------------------------
// Sections

const results: Record<string, unknown> = {}

/** 5: building the model's tool set and ranking it, 1,000 tools. */
/**
 * What the flow guard's provenance costs a planned call: the lookup of its arguments against 1 MB
 * of results read before it (32 results of 32,000 characters, as many as `maxResultChars` lets a
 * model read), against none. Indexing a result is paid once, as it is read.
 */
const benchProvenance = async () => {
  log("provenance: a call's arguments against 1 MB of earlier results")
  const words = ["alpha", "release", "pelican", "config", "deploy", "notes", "friday", "token", "server", "branch"]
  const text = (seed: number, length: number) => {
    let out = ""
    for (let i = 0; out.length < length; i++) out += `${words[(seed * 7 + i * 13) % words.length]}-${(seed * 31 + i) % 9973} `
    return out.slice(0, length)
  }
  const trusted = "Request: read the release notes and save the summary to notes/summary.md"
  const full = new Ledger(trusted)
  const recordStart = performance.now()
  for (let i = 0; i < 32; i++) {
    Effect.runSync(full.record({ backendId: "fs", tool: "fs__read_text_file", arguments: { n: i } }, text(i, 32_000)))
  }
  const recordMs = performance.now() - recordStart
  const empty = new Ledger(trusted)
  const args = (i: number) => ({ path: `notes/summary-${i}.md`, content: `Summary ${i}: ${text(i + 1000, 400)}` })
  const time = (ledger: Ledger, runs: number) => {
    const samples = new Float64Array(runs)
    for (let i = 0; i < runs; i++) {
      const start = performance.now()
      ledger.originsOf(args(i))
      samples[i] = performance.now() - start
    }
    samples.sort()
    return { p50: round3(percentile(samples, 50)), p99: round3(percentile(samples, 99)) }
  }
  for (let i = 0; i < 200; i++) {
    time(full, 1)
    time(empty, 1)
  }
  const runs = quick ? 2_000 : 20_000
  const none = time(empty, runs)
  const read = time(full, runs)
  // A result of 8 MB (a script's read of a big file): indexed up to the ledger's bound, in slices
  // between which the loop takes its I/O; the longest the loop waited is what a ping would.
  const big = text(7, 8_000_000)
  let longest = 0
  let last = performance.now()
  const watch = setInterval(() => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
  }, 1)
  await new Promise((resolve) => setTimeout(resolve, 10))
  longest = 0
  last = performance.now()
  const bigStart = performance.now()
  const ledger = new Ledger(trusted)
  await Effect.runPromise(ledger.record({ backendId: "fs", tool: "fs__read_text_file" }, big))
  const bigMs = performance.now() - bigStart
  clearInterval(watch)
  results.provenance = {
    resultsChars: 32 * 32_000,
    recordMs: round2(recordMs),
    none,
    read,
    addedP50: round3(read.p50 - none.p50),
    big: { chars: big.length, indexedChars: INDEXED_CHARS, ms: round2(bigMs), longestLoopWaitMs: round2(longest) }
  }
}

const benchCatalog = () => {
  log("catalog: 1,000 tools")
  const backends = syntheticBackends(1_000)
  const time = (runs: number, f: (i: number) => void): { median: number; p99: number; runs: number } => {
    const samples = new Float64Array(runs)
    for (let i = 0; i < runs; i++) {
      const start = performance.now()
      f(i)
      samples[i] = performance.now() - start
    }
    samples.sort()
    return { median: round3(percentile(samples, 50)), p99: round3(percentile(samples, 99)), runs }
  }
  // Warm-up (JIT, the stemmer's cache): as a gateway that has served a while.
  for (let i = 0; i < 20; i++) {
    const catalog = buildCatalog(backends)
    toolFunctions(catalog.entries)
    rankEntries(catalog.entries, QUERIES[i % QUERIES.length]!, 32)
  }
  const runs = quick ? 50 : 300
  const build = time(runs, () => {
    toolFunctions(buildCatalog(backends).entries)
  })
  // What one orchestration pays when the tools have not changed: the index is cached per catalog.
  const catalog = buildCatalog(backends)
  rankEntries(catalog.entries, QUERIES[0]!, 32)
  const rankWarm = time(quick ? 500 : 3_000, (i) => {
    rankEntries(catalog.entries, QUERIES[i % QUERIES.length]!, 32)
  })
  // What the gateway offers for a task (its intents, needs and servers: several rankings fused).
  const TASKS = [
    "Read the sales data under /root/excel/sales.xlsx, plot it as a bar chart by month and save it in /root/figs/sale.png",
    "Find today's trending repositories, read the top one's README and draft an intro in /root/markdown/intro.md",
    ...QUERIES
  ]
  rankTask(catalog.entries, TASKS[0]!, 32)
  const rankTaskWarm = time(quick ? 300 : 2_000, (i) => {
    rankTask(catalog.entries, TASKS[i % TASKS.length]!, 32)
  })
  // The same over 20,000 tools (400 servers of 50): what one orchestration's ranking blocks the loop for.
  const large = buildCatalog(syntheticBackends(20_000))
  prepareTaskRanking(large.entries)
  const rankTask20k = time(quick ? 50 : 300, (i) => {
    rankTask(large.entries, TASKS[i % TASKS.length]!, 32)
  })
  // The first task after the tool lists changed, with the ranking prepared as the gateway does when
  // they change (Prepare: prepareTaskRanking), and how long that preparation takes off the request.
  const freshLarge = () => buildCatalog(syntheticBackends(20_000).map((b) => ({ ...b, tools: b.tools.map((t) => ({ ...t })) })))
  const prepared = { prepareMs: [] as Array<number>, firstMs: [] as Array<number> }
  for (let i = 0; i < (quick ? 2 : 5); i++) {
    const fresh = freshLarge()
    let start = performance.now()
    prepareTaskRanking(fresh.entries)
    prepared.prepareMs.push(performance.now() - start)
    start = performance.now()
    rankTask(fresh.entries, TASKS[i % TASKS.length]!, 32)
    prepared.firstMs.push(performance.now() - start)
  }
  // The first query after the tool lists changed: the ranking index is built from scratch
  // (fresh tool objects, so nothing is cached).
  const rankCold = time(quick ? 10 : 40, (i) => {
    const fresh = syntheticBackends(1_000).map((b) => ({ ...b, tools: b.tools.map((t) => ({ ...t })) }))
    rank(
      buildCatalog(fresh).entries.map((e) => e.tool),
      QUERIES[i % QUERIES.length]!,
      32
    )
  })
  // Code mode's tool as a session lists it, over 20,000 tools (its declarations and description):
  // the work one tools/list does on the loop after a backend's tools changed.
  const codeTool = time(quick ? 3 : 10, () => {
    runCodeToolFor({ ...large }, (backendId) => backendId)
  })
  results.catalog = {
    tools: 1_000,
    offered: 32,
    build,
    rank: rankWarm,
    rankTask: rankTaskWarm,
    rankTask20k,
    firstTask20k: {
      prepareMedianMs: round3(median(prepared.prepareMs)),
      firstMedianMs: round3(median(prepared.firstMs)),
      firstMaxMs: round3(Math.max(...prepared.firstMs))
    },
    rankColdIndex: rankCold,
    codeTool20k: codeTool
  }
}

/** A whole process, spawn to exit (ms), given `input` on stdin then EOF; it must exit 0. */
const wholeProcess = (args: ReadonlyArray<string>, input: string) =>
  new Promise<number>((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, args, { stdio: ["pipe", "ignore", "ignore"], env: env() })
    child.on("error", reject)
    child.on("exit", (code) =>
      code === 0 ? resolve(performance.now() - started) : reject(new Error(`${args.join(" ")} exited ${code}`))
    )
    child.stdin.end(input)
  })

/**
 * The CPU time (user + system, ms) of a whole process given `input` then EOF, as it reports at exit
 * through test/bench/cpu-at-exit.mjs (its last few ms of teardown after the `exit` event aside).
 */
const wholeProcessCpu = (args: ReadonlyArray<string>, input: string) =>
  new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", CPU_AT_EXIT, ...args], {
      stdio: ["pipe", "ignore", "ignore", "pipe"],
      env: env()
    })
    let reported = ""
    child.stdio[3]!.on("data", (chunk: Buffer) => (reported += String(chunk)))
    child.on("error", reject)
    child.on("close", (code) =>
      code === 0 && reported !== ""
        ? resolve(Number(reported) / 1000)
        : reject(new Error(`${args.join(" ")} exited ${code}, reported ${JSON.stringify(reported)}`))
    )
    child.stdin!.end(input)
  })

/** The program answers the ping on stdout as it should (unmeasured; it also fills its compile cache). */
const checkPing = (args: ReadonlyArray<string>, input: string) => {
  const out = execFileSync(process.execPath, args, { input, env: env(), encoding: "utf8", stdio: "pipe" })
  if (out !== '{"jsonrpc":"2.0","id":1,"result":{}}\n') throw new Error(`${args.join(" ")}: ping answered ${JSON.stringify(out)}`)
}

/** 3: spawn -> initialize reply, 1/5/10 backends vs one backend spawned directly. */
const benchStartup = async () => {
  const delay = ["--startup-delay-ms", "200"]
  const gatewayConfigs = new Map(
    [1, 5, 10].map((n) => [
      n,
      writeConfig(
        Array.from({ length: n }, (_, i) => ({
          id: `fixture${i}`,
          command: process.execPath,
          args: fixtureArgs(`fixture${i}`, delay)
        }))
      )
    ])
  )
  const reps = quick ? 2 : 7
  const samples = new Map<string, Array<number>>([
    ["direct", []],
    ["1", []],
    ["5", []],
    ["10", []]
  ])
  const once = async (client: RpcClient): Promise<number> => {
    const reply = await client.initialize()
    const ms = reply.at - client.spawnedAt
    await client.close()
    return ms
  }
  log(`startup: ${reps} rounds of direct, 1, 5, 10 backends`)
  // Warm the page cache and the compile cache, unmeasured.
  await once(new RpcClient(process.execPath, fixtureArgs("warm", delay)))
  await warmCompileCache(() => once(startGateway(BIN, gatewayConfigs.get(1)!)))
  await once(startGateway(BIN, gatewayConfigs.get(10)!))
  for (let r = 0; r < reps; r++) {
    const order = r % 2 === 0 ? ["direct", "1", "5", "10"] : ["10", "5", "1", "direct"]
    for (const which of order) {
      const client =
        which === "direct"
          ? new RpcClient(process.execPath, fixtureArgs("direct", delay), { stderrFile: stderrFile("fixture") })
          : startGateway(BIN, gatewayConfigs.get(Number(which))!)
      samples.get(which)!.push(await once(client))
      await sleep(100)
    }
  }
  // The floors, in the same rounds: the same ten servers started side by side without the gateway;
  // and whole processes answering one ping on stdio then exiting on EOF, against a bare Node and
  // the smallest Effect 4 answerer (bundled as the gateway is, and as its modules), in an order
  // rotated every round.
  const side: Array<number> = []
  const answerer = await effect4Answerer(ROOT, log)
  const ping = '{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
  const wholes: ReadonlyArray<{ name: string; args: ReadonlyArray<string>; input: string }> = [
    { name: "bare", args: ["-e", "0"], input: "" },
    { name: "gateway", args: [BIN], input: ping },
    { name: "effect4", args: [answerer.bundle], input: ping },
    { name: "effect4Modules", args: [answerer.modules], input: ping }
  ]
  for (const w of wholes) if (w.input !== "") checkPing(w.args, w.input)
  const floorReps = quick ? 4 : 15
  const wholeMs = new Map(wholes.map((w) => [w.name, [] as Array<number>]))
  for (let r = 0; r < floorReps; r++) {
    if (r < reps) {
      const started = performance.now()
      const clients = Array.from({ length: 10 }, (_, i) => new RpcClient(process.execPath, fixtureArgs(`side${i}`, delay)))
      await Promise.all(clients.map((c) => c.initialize()))
      side.push(performance.now() - started)
      await Promise.all(clients.map((c) => c.close()))
    }
    for (let k = 0; k < wholes.length; k++) {
      const w = wholes[(r + k) % wholes.length]!
      wholeMs.get(w.name)!.push(await wholeProcess(w.args, w.input))
    }
  }
  // Their CPU time, in rounds of their own (the probe is not in the rounds above).
  const cpuMs = new Map(wholes.map((w) => [w.name, [] as Array<number>]))
  for (let r = 0; r < (quick ? 2 : 5); r++) {
    for (let k = 0; k < wholes.length; k++) {
      const w = wholes[(r + k) % wholes.length]!
      cpuMs.get(w.name)!.push(await wholeProcessCpu(w.args, w.input))
    }
  }
  const med = (k: string) => round2(percentile(sortedCopy(samples.get(k)!), 50))
  const median = (values: Array<number>) => round2(percentile(sortedCopy(values), 50))
  const wholeMedian = (name: string) => median(wholeMs.get(name)!)
  const cpuMedian = (name: string) => median(cpuMs.get(name)!)
  const direct = med("direct")
  results.startup = {
    floors: {
      tenSideBySideMs: median(side),
      tenThroughGatewayRatio: round2(med("10") / median(side)),
      rounds: floorReps,
      bareNodeMs: wholeMedian("bare"),
      pingThenEofMs: wholeMedian("gateway"),
      pingRatio: round2(wholeMedian("gateway") / wholeMedian("bare")),
      effect4: {
        version: EFFECT4_VERSION,
        bundledMs: wholeMedian("effect4"),
        modulesMs: wholeMedian("effect4Modules"),
        gatewayRatio: round2(wholeMedian("gateway") / wholeMedian("effect4")),
        bareRatio: round2(wholeMedian("effect4") / wholeMedian("bare"))
      },
      samples: Object.fromEntries([...wholeMs].map(([k, v]) => [k, v.map(round2)])),
      cpuMs: Object.fromEntries(wholes.map((w) => [w.name, cpuMedian(w.name)]))
    },
    backendStartupDelayMs: 200,
    rounds: reps,
    directMs: direct,
    gateway: Object.fromEntries(
      [1, 5, 10].map((n) => [String(n), { ms: med(String(n)), ratio: round2(med(String(n)) / direct) }])
    ),
    samples: Object.fromEntries([...samples].map(([k, v]) => [k, v.map(round2)]))
  }
}

/**
 * A config file edit to the client's `tools/list_changed`: the time a user waits between saving the
 * file and the IDE seeing the new tools. Includes the watch's 150 ms debounce (a save is a burst
 * of events); "filter" re-exposes a running backend, "add" starts one (the fixture with no delay).
 */
const benchReload = async () => {
  const file = join(work, "reload.json")
  const backend = (id: string, extra: Record<string, unknown> = {}) => ({
    id,
    type: "stdio",
    command: process.execPath,
    args: fixtureArgs(id),
    ...extra
  })
  const write = (backends: ReadonlyArray<unknown>) => writeFileSync(file, JSON.stringify({ backends }))
  write([backend("kept")])
  const client = new RpcClient(process.execPath, [...nodeFlags(), BIN, "--config", file], {
    cwd: work,
    env: env(),
    stderrFile: stderrFile("reload")
  })
  await client.initialize()
  let heard: (at: number) => void = () => {}
  client.onNotification = (method, at) => {
    if (method === "notifications/tools/list_changed") heard(at)
  }
  const edit = async (backends: ReadonlyArray<unknown>): Promise<number> => {
    const arrived = new Promise<number>((resolve) => (heard = resolve))
    const written = performance.now()
    write(backends)
    const at = await Promise.race([arrived, sleep(10_000).then(() => NaN)])
    // Let the rest of this change settle (an added backend's own ready) before the next edit.
    await sleep(300)
    return at - written
  }
  const reps = quick ? 3 : 10
  const filter: Array<number> = []
  const add: Array<number> = []
  log(`reload: ${reps} filter edits and ${reps} backends added and removed`)
  for (let r = 0; r < reps; r++) {
    filter.push(await edit([backend("kept", { denyTools: [`tool${r}`, "echo"] })]))
    filter.push(await edit([backend("kept")]))
    add.push(await edit([backend("kept"), backend(`added${r}`)]))
    await edit([backend("kept")])
  }
  await client.close()
  const med = (xs: ReadonlyArray<number>) => round2(percentile(sortedCopy(xs.filter(Number.isFinite)), 50))
  results.reload = {
    debounceMs: 150,
    filterMs: { p50: med(filter), max: round2(Math.max(...filter)) },
    addMs: { p50: med(add), max: round2(Math.max(...add)) },
    missed: [...filter, ...add].filter((x) => !Number.isFinite(x)).length
  }
}

/** 1: tools/call read_text_file, direct vs through the CLI, at concurrency 1, 8, 64. */
const benchPassthrough = async (fileDir: string, filePath: string) => {
  const config = writeConfig([{ id: "filesystem", command: process.execPath, args: [serverFilesystemEntry(), fileDir] }])
  const direct = new RpcClient(process.execPath, [serverFilesystemEntry(), fileDir], { stderrFile: stderrFile("direct") })
  const gateway = startGateway(BIN, config)
  const bare = new RpcClient(process.execPath, [BARE_PROXY, "filesystem__", process.execPath, serverFilesystemEntry(), fileDir], {
    stderrFile: stderrFile("bare")
  })
  try {
    await Promise.all([direct.initialize(), gateway.initialize(), bare.initialize()])
    const listed = await gateway.request("tools/list", {})
    if (!listed.result?.tools?.some((t: { name: string }) => t.name === "filesystem__read_text_file")) {
      throw new Error(`the gateway does not list filesystem__read_text_file${gateway.stderrTail()}`)
    }
    const directParams = { name: "read_text_file", arguments: { path: filePath } }
    const gatewayParams = { name: "filesystem__read_text_file", arguments: { path: filePath } }
    const check = await gateway.request("tools/call", gatewayParams)
    if (check.error !== undefined || check.result?.isError) throw new Error(`read_text_file failed: ${JSON.stringify(check)}`)
    log("passthrough: warm-up")
    for (const c of CONCURRENCIES) {
      await runCalls(direct, "tools/call", directParams, c, quick ? 500 : 2_000)
      await runCalls(gateway, "tools/call", gatewayParams, c, quick ? 500 : 2_000)
      await runCalls(bare, "tools/call", gatewayParams, c, quick ? 500 : 2_000)
    }
    const levels: Record<string, unknown> = {}
    for (const c of CONCURRENCIES) {
      log(`passthrough: concurrency ${c}, ${ROUNDS} rounds of ${ROUND_MS} ms each side`)
      const [a, b, r] = await rotate(
        [
          () => measured(direct.pid, () => runRound(direct, "tools/call", directParams, c, ROUND_MS)),
          () => measured(gateway.pid, () => runRound(gateway, "tools/call", gatewayParams, c, ROUND_MS)),
          () => measured(bare.pid, () => runRound(bare, "tools/call", gatewayParams, c, ROUND_MS))
        ],
        ROUNDS
      )
      const d = summarize(a!)
      const g = summarize(b!)
      const bp = summarize(r!)
      levels[String(c)] = {
        direct: { ...d, serverCpuUsPerCall: cpuPerCall(a) },
        gateway: { ...g, gatewayCpuUsPerCall: cpuPerCall(b!) },
        bareProxy: { ...bp, proxyCpuUsPerCall: cpuPerCall(r!), throughputRatio: round2(bp.callsPerSecond / d.callsPerSecond) },
        p50OverheadMs: round3(g.p50 - d.p50),
        p99OverheadMs: round3(g.p99 - d.p99),
        latencyRatio: round2(g.p50 / d.p50),
        bareProxyP50OverheadMs: round3(bp.p50 - d.p50),
        throughputRatio: round2(g.callsPerSecond / d.callsPerSecond)
      }
    }
    results.passthrough = {
      tool: "read_text_file",
      fileBytes: readFileSync(filePath).length,
      roundMs: ROUND_MS,
      rounds: ROUNDS,
      concurrency: levels
    }
  } finally {
    await Promise.all([direct.close(), gateway.close(), bare.close()])
  }
}

const BIN_DIR = join(ROOT, "node_modules", ".bin")

/**
 * Streamable HTTP: one session per server over keep-alive connections, read_text_file at each
 * concurrency, against direct stdio. The gateway's /servers/<id>/mcp (one backend as itself) and
 * /mcp (the aggregate), supergateway (--stateful) and mcp-proxy, each wrapping server-filesystem.
 */
const benchHttp = async (fileDir: string, filePath: string) => {
  const config = writeConfig([{ id: "filesystem", command: process.execPath, args: [serverFilesystemEntry(), fileDir] }])
  const fsArgs = [serverFilesystemEntry(), fileDir]
  const [gatewayPort, superPort, proxyPort] = [await freePort(), await freePort(), await freePort()]
  const direct = new RpcClient(process.execPath, fsArgs, { stderrFile: stderrFile("http-direct") })
  const clients: Array<HttpRpcClient> = []
  try {
    const gateway = await startHttpServer(
      process.execPath,
      [...nodeFlags(), BIN, "--http", `127.0.0.1:${gatewayPort}`, "--config", config, "--log-level", "warn"],
      `http://127.0.0.1:${gatewayPort}/servers/filesystem/mcp`,
      {
        cwd: work,
        env: env(),
        stderrFile: stderrFile("http-gateway")
      }
    )
    clients.push(gateway)
    // A second session on the same gateway process, on the aggregate endpoint.
    const aggregate = new (gateway.constructor as typeof HttpRpcClient)(`http://127.0.0.1:${gatewayPort}/mcp`, gateway.process)
    const superGateway = await startHttpServer(
      join(BIN_DIR, "supergateway"),
      [
        "--stdio",
        [process.execPath, ...fsArgs].map((a) => JSON.stringify(a)).join(" "),
        "--outputTransport",
        "streamableHttp",
        "--stateful",
        "--port",
        String(superPort),
        "--logLevel",
        "none"
      ],
      `http://127.0.0.1:${superPort}/mcp`,
      { cwd: work, env: env(), stderrFile: stderrFile("supergateway") }
    )
    clients.push(superGateway)
    const mcpProxy = await startHttpServer(
      join(BIN_DIR, "mcp-proxy"),
      ["--port", String(proxyPort), "--host", "127.0.0.1", "--", process.execPath, ...fsArgs],
      `http://127.0.0.1:${proxyPort}/mcp`,
      { cwd: work, env: env(), stderrFile: stderrFile("mcp-proxy") }
    )
    clients.push(mcpProxy)
    await direct.initialize()
    for (const c of [gateway, aggregate, superGateway, mcpProxy]) await c.initialize()
    const plain = { name: "read_text_file", arguments: { path: filePath } }
    const prefixed = { name: "filesystem__read_text_file", arguments: { path: filePath } }
    const sides: Array<{ name: string; client: RpcClient | HttpRpcClient; params: unknown; pid: () => number }> = [
      { name: "direct", client: direct, params: plain, pid: () => direct.pid },
      { name: "gateway", client: gateway, params: plain, pid: () => gateway.pid },
      { name: "gatewayAggregate", client: aggregate, params: prefixed, pid: () => gateway.pid },
      { name: "supergateway", client: superGateway, params: plain, pid: () => superGateway.pid },
      { name: "mcpProxy", client: mcpProxy, params: plain, pid: () => mcpProxy.pid }
    ]
    for (const side of sides) {
      const check = await side.client.request("tools/call", side.params)
      if (check.error !== undefined || check.result?.isError)
        throw new Error(`${side.name}: read_text_file failed: ${JSON.stringify(check)}`)
    }
    log("http: warm-up")
    for (const c of CONCURRENCIES)
      for (const side of sides) await runCalls(side.client, "tools/call", side.params, c, quick ? 300 : 1_000)
    const levels: Record<string, unknown> = {}
    for (const c of CONCURRENCIES) {
      log(`http: concurrency ${c}, ${ROUNDS} rounds of ${ROUND_MS} ms each side`)
      const rounds = await rotate(
        sides.map((side) => () => measured(side.pid(), () => runRound(side.client, "tools/call", side.params, c, ROUND_MS))),
        ROUNDS
      )
      const level: Record<string, unknown> = {}
      const d = summarize(rounds[0]!)
      sides.forEach((side, i) => {
        const sum = summarize(rounds[i]!)
        level[side.name] = { ...sum, cpuUsPerCall: cpuPerCall(rounds[i]!), p50OverheadMs: round3(sum.p50 - d.p50) }
      })
      levels[String(c)] = level
    }
    results.http = { tool: "read_text_file", roundMs: ROUND_MS, rounds: ROUNDS, concurrency: levels }
  } finally {
    await Promise.all([direct.close(), ...clients.map((c) => c.close())])
  }
}

/** 2: orchestrateTask vs tools/call on the same gateway process (scripted LLM). */
const benchOrchestration = async (fileDir: string, filePath: string) => {
  const config = writeConfig([{ id: "filesystem", command: process.execPath, args: [serverFilesystemEntry(), fileDir] }])
  const gateway = startGateway(SCRIPTED, config, {
    SCRIPTED_TOOL: "filesystem__read_text_file",
    SCRIPTED_ARGUMENTS: JSON.stringify({ path: filePath })
  })
  try {
    await gateway.initialize()
    const callParams = { name: "filesystem__read_text_file", arguments: { path: filePath } }
    const orchestrateParams = { query: "show me the notes file", context: { currentWorkingDirectory: fileDir } }
    const check = await gateway.request("agentify/orchestrateTask", orchestrateParams)
    if (check.error !== undefined)
      throw new Error(`orchestrateTask failed: ${JSON.stringify(check.error)}${gateway.stderrTail()}`)
    log("orchestration: warm-up")
    await runCalls(gateway, "tools/call", callParams, 1, quick ? 300 : 1_000)
    await runCalls(gateway, "agentify/orchestrateTask", orchestrateParams, 1, quick ? 300 : 1_000)
    log(`orchestration: concurrency 1, ${ROUNDS} rounds of ${ROUND_MS} ms each side`)
    const { a, b } = await alternate(
      () => runRound(gateway, "tools/call", callParams, 1, ROUND_MS),
      () => runRound(gateway, "agentify/orchestrateTask", orchestrateParams, 1, ROUND_MS),
      ROUNDS
    )
    const call = summarize(a)
    const orchestrate = summarize(b)
    results.orchestration = {
      tools: (await gateway.request("tools/list", {})).result.tools.length - 1,
      toolsCall: call,
      orchestrateTask: orchestrate,
      p50OverheadMs: round3(orchestrate.p50 - call.p50),
      p99OverheadMs: round3(orchestrate.p99 - call.p99)
    }
  } finally {
    await gateway.close()
  }
}

/**
 * 4: RSS of the gateway process with 10 backends: idle after start-up, idle after a warm-up of
 * 1,000 calls (the JIT has compiled the call path and V8 has grown its young generation to its
 * working size, once), and after 20,000 calls more, with checkpoints on the way.
 */
const benchMemory = async () => {
  const total = quick ? 5_000 : 20_000
  const warmUp = 1_000
  const config = writeConfig(
    Array.from({ length: 10 }, (_, i) => ({ id: `fixture${i}`, command: process.execPath, args: fixtureArgs(`fixture${i}`) }))
  )
  // Idle RSS as users start it (from the compile cache), and without the code cache, alternated;
  // the median of three each.
  const idleOf = async (extraEnv: Record<string, string>) => {
    const gateway = startGateway(BIN, config, extraEnv)
    try {
      await gateway.initialize()
      return await settledRssKb(gateway.pid)
    } finally {
      await gateway.close()
    }
  }
  await warmCompileCache(() => idleOf({}))
  const idle = { cached: [] as Array<number>, modules: [] as Array<number> }
  for (let r = 0; r < 3; r++) {
    idle.cached.push(await idleOf({}))
    idle.modules.push(await idleOf({ AGENTIFY_CODE_CACHE: "off" }))
  }
  const medianMb = (kbs: Array<number>) => round2(percentile(sortedCopy(kbs), 50) / 1024)
  // Under the flags below node loads the ES modules: the growth figures are theirs.
  // The probe answers SIGUSR2 with the live heap after a full GC; RSS is always read before it.
  const heapFile = join(work, "heap.json")
  const gateway = startGateway(BIN, config, { HEAP_PROBE_FILE: heapFile }, [
    "--expose-gc",
    "--import",
    pathToFileURL(HEAP_PROBE).href
  ])
  const liveHeapMb = async (): Promise<number> => {
    rmSync(heapFile, { force: true })
    process.kill(gateway.pid, "SIGUSR2")
    for (let i = 0; i < 100 && !existsSync(heapFile); i++) await sleep(20)
    return round2(JSON.parse(readFileSync(heapFile, "utf8")).heapUsed / 2 ** 20)
  }
  const call = (offset: number) => (i: number) => ({
    name: `fixture${(offset + i) % 10}__echo`,
    arguments: { text: `call ${offset + i}` }
  })
  try {
    await gateway.initialize()
    await sleep(1_000)
    const idleKb = rssKb(gateway.pid)
    await runCalls(gateway, "tools/call", call(0), 8, warmUp)
    await sleep(1_000)
    // Collected first, so the baseline holds no garbage: the growth that follows is not understated.
    const warmHeap = await liveHeapMb()
    await sleep(500)
    const warmKb = rssKb(gateway.pid)
    log(`memory: RSS idle ${(idleKb / 1024).toFixed(1)} MB, after warm-up ${(warmKb / 1024).toFixed(1)} MB; ${total} calls`)
    const checkpoints: Array<{ calls: number; rssMb: number }> = []
    const step = total / 4
    for (let done = 0; done < total; done += step) {
      await runCalls(gateway, "tools/call", call(warmUp + done), 8, step)
      checkpoints.push({ calls: done + step, rssMb: round2(rssKb(gateway.pid) / 1024) })
    }
    await sleep(1_000)
    const afterKb = rssKb(gateway.pid)
    const afterHeap = await liveHeapMb()
    results.memory = {
      backends: 10,
      warmUpCalls: warmUp,
      calls: total,
      concurrency: 8,
      idleMb: round2(idleKb / 1024),
      idleAsStartedMb: medianMb(idle.cached),
      idleWithoutCodeCacheMb: medianMb(idle.modules),
      warmMb: round2(warmKb / 1024),
      afterMb: round2(afterKb / 1024),
      growthPercent: round2(((afterKb - warmKb) / warmKb) * 100),
      growthFromIdlePercent: round2(((afterKb - idleKb) / idleKb) * 100),
      liveHeapAfterGcMb: { warm: warmHeap, after: afterHeap },
      checkpoints
    }
  } finally {
    await gateway.close()
  }
}

// ---------------------------------------------------------------------------------------------
// Report

interface Line {
  readonly figure: string
  readonly value: string
  readonly goal: string
  readonly pass: boolean | undefined
}

const lines = (): Array<Line> => {
  const out: Array<Line> = []
  const p = results.passthrough as any
  if (p !== undefined) {
    for (const c of CONCURRENCIES) {
      const l = p.concurrency[String(c)]
      out.push({
        figure: `passthrough c=${c}: p50 direct / gateway (ms)`,
        value: `${l.direct.p50} / ${l.gateway.p50} (${signed(l.p50OverheadMs)})`,
        goal: c === 1 ? "overhead ≤ 0.3 ms" : "",
        pass: c === 1 ? l.p50OverheadMs <= 0.3 : undefined
      })
      out.push({
        figure: `passthrough c=${c}: p99 direct / gateway (ms)`,
        value: `${l.direct.p99} / ${l.gateway.p99}`,
        goal: "",
        pass: undefined
      })
      out.push({
        figure: `passthrough c=${c}: calls/s direct / gateway`,
        value: `${l.direct.callsPerSecond} / ${l.gateway.callsPerSecond} (${Math.round(l.throughputRatio * 100)}%)`,
        goal: c === 64 ? "≥ 85% of direct" : "",
        pass: c === 64 ? l.throughputRatio >= 0.85 : undefined
      })
      out.push({
        figure: `passthrough c=${c}: CPU µs/call server (direct) / gateway`,
        value: `${l.direct.serverCpuUsPerCall} / ${l.gateway.gatewayCpuUsPerCall}`,
        goal: "",
        pass: undefined
      })
      out.push({
        figure: `passthrough c=${c}: bare proxy (reference) p50 / calls/s`,
        value: `${l.bareProxy.p50} (${signed(l.bareProxyP50OverheadMs)}) / ${l.bareProxy.callsPerSecond} (${Math.round(l.bareProxy.throughputRatio * 100)}%), ${l.bareProxy.proxyCpuUsPerCall} µs CPU/call`,
        goal: "",
        pass: undefined
      })
      // Against the floor no gateway can beat: a relay that parses each line and renames ids and
      // tool names (bare-proxy.mjs), measured in the same rounds. The goals are the move to Effect 4's.
      if (c === 1) {
        const beyond = round2(l.gateway.p50 - l.bareProxy.p50)
        out.push({
          figure: "passthrough c=1: gateway p50 over the bare proxy's (ms)",
          value: signed(beyond),
          goal: "≤ +0.15 ms",
          pass: beyond <= 0.15
        })
      }
      if (c === 64) {
        const share = round2(l.gateway.callsPerSecond / l.bareProxy.callsPerSecond)
        out.push({
          figure: "passthrough c=64: gateway calls/s / the bare proxy's",
          value: `${share}`,
          goal: "≥ 0.85",
          pass: share >= 0.85
        })
      }
    }
  }
  const hp = results.http as any
  if (hp !== undefined) {
    for (const c of CONCURRENCIES) {
      const l = hp.concurrency[String(c)]
      const peers = Math.max(l.supergateway.callsPerSecond, l.mcpProxy.callsPerSecond)
      out.push({
        figure: `http c=${c}: p50 direct stdio / gateway /servers/<id>/mcp (ms)`,
        value: `${l.direct.p50} / ${l.gateway.p50} (${signed(l.gateway.p50OverheadMs)})`,
        goal: c === 1 ? "overhead ≤ 1 ms" : "",
        pass: c === 1 ? l.gateway.p50OverheadMs <= 1 : undefined
      })
      out.push({
        figure: `http c=${c}: p50 / p99 gateway /mcp, supergateway, mcp-proxy (ms)`,
        value: `${l.gatewayAggregate.p50}/${l.gatewayAggregate.p99}, ${l.supergateway.p50}/${l.supergateway.p99}, ${l.mcpProxy.p50}/${l.mcpProxy.p99}`,
        goal: "",
        pass: undefined
      })
      out.push({
        figure: `http c=${c}: calls/s gateway, /mcp, supergateway, mcp-proxy`,
        value: `${l.gateway.callsPerSecond}, ${l.gatewayAggregate.callsPerSecond}, ${l.supergateway.callsPerSecond}, ${l.mcpProxy.callsPerSecond} (${round2(l.gateway.callsPerSecond / peers)}× the better peer)`,
        goal: c === 64 ? "≥ 3× the better peer" : "",
        pass: c === 64 ? l.gateway.callsPerSecond >= 3 * peers : undefined
      })
      out.push({
        figure: `http c=${c}: CPU µs/call gateway, supergateway, mcp-proxy`,
        value: `${l.gateway.cpuUsPerCall}, ${l.supergateway.cpuUsPerCall}, ${l.mcpProxy.cpuUsPerCall}`,
        goal: "",
        pass: undefined
      })
    }
  }
  const o = results.orchestration as any
  if (o !== undefined) {
    out.push({
      figure: "orchestrateTask vs tools/call: p50 (ms)",
      value: `${o.orchestrateTask.p50} vs ${o.toolsCall.p50} (${signed(o.p50OverheadMs)})`,
      goal: "overhead ≤ 1 ms",
      pass: o.p50OverheadMs <= 1
    })
    out.push({
      figure: "orchestrateTask vs tools/call: p99 (ms)",
      value: `${o.orchestrateTask.p99} vs ${o.toolsCall.p99}`,
      goal: "",
      pass: undefined
    })
  }
  const s = results.startup as any
  if (s !== undefined) {
    out.push({
      figure: "startup floor: stdio ping then EOF / bare node -e 0 (ms, whole process)",
      value: `${s.floors.pingThenEofMs} / ${s.floors.bareNodeMs} (${s.floors.pingRatio}×)`,
      goal: "≤ 2.5× bare node",
      pass: s.floors.pingRatio <= 2.5
    })
    if (s.floors.effect4 !== undefined) {
      const e4 = s.floors.effect4
      out.push({
        figure: `startup floor: stdio ping then EOF / the smallest Effect ${e4.version} answerer, bundled (ms, whole process)`,
        value: `${s.floors.pingThenEofMs} / ${e4.bundledMs} (${e4.gatewayRatio}×)`,
        goal: "≤ 1.25× Effect 4's",
        pass: e4.gatewayRatio <= 1.25
      })
      out.push({
        figure: "startup: the Effect 4 answerer, bundled / as its modules / bare node -e 0 (ms)",
        value: `${e4.bundledMs} / ${e4.modulesMs} / ${s.floors.bareNodeMs} (bundled ${e4.bareRatio}× bare node)`,
        goal: "",
        pass: undefined
      })
      const cpu = s.floors.cpuMs
      out.push({
        figure: "startup: CPU ms of ping then EOF, gateway / Effect 4 bundled / as its modules / node -e 0",
        value: `${cpu.gateway} / ${cpu.effect4} / ${cpu.effect4Modules} / ${cpu.bare} (gateway ${round2(cpu.gateway / cpu.effect4)}× Effect 4's, ${round2(cpu.gateway / cpu.bare)}× bare node)`,
        goal: "",
        pass: undefined
      })
    }
    out.push({
      figure: "startup floor: 10 backends via gateway / the same 10 side by side (ms)",
      value: `${s.gateway["10"].ms} / ${s.floors.tenSideBySideMs} (${s.floors.tenThroughGatewayRatio}×)`,
      goal: "≤ 1.2× side by side",
      pass: s.floors.tenThroughGatewayRatio <= 1.2
    })
    out.push({ figure: "startup: one backend alone (ms)", value: `${s.directMs}`, goal: "", pass: undefined })
    for (const n of ["1", "5", "10"]) {
      out.push({
        figure: `startup: gateway with ${n} backend${n === "1" ? "" : "s"} (ms)`,
        value: `${s.gateway[n].ms} (${s.gateway[n].ratio}×)`,
        // The goal is the floor's above: ten backends cannot start within 1.5× of one on two cores.
        goal: "",
        pass: undefined
      })
    }
  }
  const m = results.memory as any
  if (m !== undefined) {
    out.push({
      figure: "memory: RSS idle, 10 backends, as started / without the code cache (MB)",
      value: `${m.idleAsStartedMb} / ${m.idleWithoutCodeCacheMb}`,
      goal: "≤ 80 MB",
      pass: m.idleAsStartedMb <= 80
    })
    out.push({ figure: "memory: RSS idle, 10 backends, the run below (MB)", value: `${m.idleMb}`, goal: "", pass: undefined })
    out.push({
      figure: `memory: RSS after ${m.warmUpCalls.toLocaleString("en")} warm-up calls (MB)`,
      value: `${m.warmMb} (${signed(round2(((m.warmMb - m.idleMb) / m.idleMb) * 100), "%")})`,
      goal: "",
      pass: undefined
    })
    out.push({
      figure: `memory: RSS after ${m.calls.toLocaleString("en")} more calls (MB)`,
      value: `${m.afterMb} (${signed(m.growthPercent, "%")}; ${signed(m.growthFromIdlePercent, "%")} from idle)`,
      goal: "growth < 10%",
      pass: m.growthPercent < 10
    })
    out.push({
      figure: "memory: live heap after a full GC, warm / after (MB)",
      value: `${m.liveHeapAfterGcMb.warm} / ${m.liveHeapAfterGcMb.after}`,
      goal: "",
      pass: undefined
    })
  }
  const rl = results.reload as any
  if (rl !== undefined) {
    out.push({
      figure: "reload: file write to tools/list_changed, filter edited (ms)",
      value: `p50 ${rl.filterMs.p50}, max ${rl.filterMs.max}${rl.missed > 0 ? `, ${rl.missed} missed` : ""}`,
      goal: "p50 ≤ 500 ms",
      pass: rl.filterMs.p50 <= 500 && rl.missed === 0
    })
    out.push({
      figure: "reload: file write to tools/list_changed, backend added (ms)",
      value: `p50 ${rl.addMs.p50}, max ${rl.addMs.max}`,
      goal: "",
      pass: undefined
    })
  }
  const h = results.hostile as any
  if (h !== undefined) {
    const worst = Math.max(...(Object.values(h.rank1mbMedianMs) as Array<number>))
    out.push({
      figure: "rank, 1,000 tools, 1 MB query or selection: worst median (ms)",
      value: `${worst} (${Object.entries(h.rank1mbMedianMs)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ")})`,
      goal: "≤ 50 ms",
      pass: worst <= 50
    })
    out.push({
      figure: "6 MiB tool result: direct / through the gateway (ms)",
      value: `${h.bigReply.directMedianMs} / ${h.bigReply.gatewayMedianMs}`,
      goal: "",
      pass: undefined
    })
    out.push({
      figure: "6 MiB tool result: gateway peak RSS (MB)",
      value: `${h.bigReply.gatewayPeakRssMb}`,
      goal: "≤ 200 MB",
      pass: h.bigReply.gatewayPeakRssMb <= 200
    })
  }
  const cm = results.codemode as any
  if (cm !== undefined) {
    out.push({ figure: "code mode: sandbox start, cold (ms)", value: `${cm.coldStartMs}`, goal: "", pass: undefined })
    out.push({
      figure: "code mode: sandbox start, warm from the spare thread (ms)",
      value: `p50 ${cm.warmStart.p50}, p99 ${cm.warmStart.p99}`,
      goal: "p50 ≤ 10 ms",
      pass: cm.warmStart.p50 <= 10
    })
    out.push({
      figure: "code mode: a call from a script vs directly (ms)",
      value: `${cm.call.fromScriptMs} vs ${cm.call.directP50Ms} (${signed(cm.call.overheadMs)})`,
      goal: "overhead ≤ 0.5 ms",
      pass: cm.call.overheadMs <= 0.5
    })
    out.push({
      figure: "code mode: worst ping during an endless loop (ms)",
      value: `${cm.hostile.worstPingMs}`,
      goal: "< 100 ms",
      pass: cm.hostile.worstPingMs < 100
    })
    out.push({
      figure: "code mode: gateway RSS before / after 7 hostile scripts, threads ended (MB)",
      value: `${cm.hostile.rssBeforeMb} / ${cm.hostile.rssAfterMb}`,
      goal: "",
      pass: undefined
    })
    out.push({
      figure: "20 files, which mention a word: bytes sent to the model, tools / code",
      value: `${cm.tokens.toolsModeBytes} / ${cm.tokens.codeModeBytes} (${Math.round(cm.tokens.saved * 100)}% fewer)`,
      goal: "",
      pass: undefined
    })
  }
  const f = results.fanout as any
  if (f !== undefined) {
    out.push({
      figure: "10,000 tool calls in one model turn: ms to the -32003 reply",
      value: `${f.replyMedianMs}`,
      goal: "< 5,000 ms",
      pass: f.replyMedianMs < 5_000
    })
    out.push({
      figure: "10,000 tool calls in one model turn: worst ping meanwhile (ms)",
      value: `${f.worstPingMs}`,
      goal: "< 100 ms",
      pass: f.worstPingMs < 100
    })
    out.push({
      figure: "stdin EOF during the fan-out: exit code, ms to exit",
      value: `${f.exitCodes.join(",")}, ${f.eofExitMedianMs}`,
      goal: "0",
      pass: f.exitCodes.length === 1 && f.exitCodes[0] === 0
    })
    out.push({
      figure: `a ${f.bigFile.chars.toLocaleString("en-US")}-character file, maxResultChars 2000: characters the model got`,
      value: `${f.bigFile.modelGotChars}`,
      goal: "",
      pass: undefined
    })
  }
  const prov = results.provenance as any
  if (prov !== undefined) {
    out.push({
      figure: "provenance: a call's arguments looked up against 1 MB read (ms)",
      value: `p50 ${prov.read.p50} (none read: ${prov.none.p50}; +${prov.addedP50}), p99 ${prov.read.p99}; indexing 1 MB: ${prov.recordMs} ms once`,
      goal: "≤ +0.2 ms p50",
      pass: prov.addedP50 <= 0.2
    })
    if (prov.big !== undefined) {
      out.push({
        figure: "provenance: an 8 MB result indexed (its first 2 MiB), the loop's longest wait (ms)",
        value: `${prov.big.ms} ms in all; the loop waited at most ${prov.big.longestLoopWaitMs} ms`,
        goal: "wait ≤ 50 ms",
        pass: prov.big.longestLoopWaitMs <= 50
      })
    }
  }
  const gov = results.governance as any
  if (gov !== undefined) {
    out.push({
      figure: `policies (Cedar ${gov.cedar}): a call's decision, the answer kept (ms)`,
      value: `p50 ${gov.policies.kept.p50} (no policies: ${gov.policies.noPolicies.p50}; +${gov.policies.addedKeptP50}), p99 ${gov.policies.kept.p99}`,
      goal: "≤ 0.1 ms p50",
      pass: gov.policies.kept.p50 <= 0.1
    })
    out.push({
      figure: "policies: a call's decision, a policy reading its arguments (ms)",
      value: `p50 ${gov.policies.engine.p50} (+${gov.policies.addedEngineP50}; the engine's least, one fact read: ${gov.policies.floor.p50}), p99 ${gov.policies.engine.p99}`,
      goal: "≤ 0.1 ms p50",
      pass: gov.policies.engine.p50 <= 0.1
    })
    out.push({
      figure: "quotas: three limits counted for a call (ms)",
      value: `p50 ${gov.quotas.three.p50} (none: ${gov.quotas.none.p50}; +${gov.quotas.addedP50}), p99 ${gov.quotas.three.p99}`,
      goal: "",
      pass: undefined
    })
  }
  const search = results.search as any
  if (search !== undefined) {
    for (const one of search.inProcess) {
      const goal = one.tools <= 1_000 ? 5 : 50
      out.push({
        figure: `search at its worst, ${one.tools} tools, in process: CPU ms p50 / p99 (wall p50 / p99)`,
        value: `${one.cpuMs.p50} / ${one.cpuMs.p99} (${one.wallMs.p50} / ${one.wallMs.p99})`,
        goal: `p50 ≤ ${goal}`,
        pass: one.cpuMs.p50 <= goal
      })
    }
    const g = search.gateway
    out.push({
      figure: "search at its worst through the gateway, 527 tools: round trip p50 / max (ms)",
      value: `${g.oneAtATimeMs.p50} / ${g.oneAtATimeMs.max}`,
      goal: "",
      pass: undefined
    })
    out.push({
      figure: "50 worst-case searches at once: a ping beside them, p50 / max (ms; alone: p50 / max; the 50th answered at)",
      value: `${g.fiftyAtOnce.pingMs.p50} / ${g.fiftyAtOnce.pingMs.max} (alone: ${g.pingAloneMs.p50} / ${g.pingAloneMs.max}; ${g.fiftyAtOnce.lastAnsweredMs})`,
      goal: "max ≤ 50",
      pass: g.fiftyAtOnce.pingMs.max <= 50
    })
  }
  const many = results.manyServers as any
  if (many !== undefined) {
    const of = (mode: string, start: string) => many.runs.find((r: any) => r.mode === mode && r.start === start)
    for (const start of ["first", "second"]) {
      const now = of("onUse", start)
      const before = of("always", start)
      const both = (f: (r: any) => unknown) => `${f(now)} (always: ${f(before)})`
      out.push({
        figure: `many servers, ${start} start: initialize (ms)`,
        value: both((r) => r.initializeMs),
        goal: start === "first" ? "≤ 300 (never waits for a backend)" : "",
        pass: start === "first" ? now.initializeMs <= 300 : undefined
      })
      out.push({
        figure: `many servers, ${start} start: slowest of 20 pings right after initialize (ms)`,
        value: both((r) => r.pingMaxMs),
        goal: "≤ 50",
        pass: now.pingMaxMs <= 50
      })
      if (start === "second" && many.secondStarts !== undefined) {
        const { known, noBackend, runs } = many.secondStarts
        out.push({
          figure: `many servers, second start: initialize, median of ${runs} (ms; a gateway with no backend alike)`,
          value: `${known.medianMs} (${known.minMs}-${known.maxMs}; no backend: ${noBackend.medianMs}, ${noBackend.minMs}-${noBackend.maxMs})`,
          goal: "≤ 300",
          pass: known.medianMs <= 300
        })
      }
      out.push({
        figure: `many servers, ${start} start: every tool searchable (ms from spawn)`,
        value: both((r) => r.searchableMs),
        goal: "≤ 30000",
        pass: now.searchableMs <= 30_000
      })
      out.push({
        figure: `many servers, ${start} start: processes / MiB after initialize`,
        value: both((r) => `${r.afterInitialize.processes} / ${r.afterInitialize.rssMiB}`),
        goal: start === "second" ? "1 process (no backend before a use)" : "",
        pass: start === "second" ? now.afterInitialize.processes === 1 : undefined
      })
      out.push({
        figure: `many servers, ${start} start: processes / MiB after a session using 3 servers`,
        value: both((r) => `${r.afterSession.processes} / ${r.afterSession.rssMiB}`),
        goal: start === "second" ? "≤ 4 / ≤ 400" : "",
        pass: start === "second" ? now.afterSession.processes <= 4 && now.afterSession.rssMiB <= 400 : undefined
      })
      out.push({
        figure: `many servers, ${start} start: tools/list tools / bytes`,
        value: both((r) => `${r.listedTools} / ${r.listedBytes}`),
        goal: "≤ 64 tools",
        pass: now.listedTools <= 64
      })
    }
    const second = of("onUse", "second")
    const added = Math.round((second.firstCallMs - second.startedCallMs - many.ownStartMs) * 10) / 10
    out.push({
      figure: "many servers: first call of a backend not started / of a started one / its own start alone (ms)",
      value: `${second.firstCallMs} / ${second.startedCallMs} / ${many.ownStartMs} (added ${added})`,
      goal: "added ≤ 50",
      pass: added <= 50
    })
  }
  const rep = results.replicas as any
  if (rep !== undefined) {
    out.push({
      figure: "replicas: a request handed to the gateway that holds its session (ms over the same at its holder)",
      value: `p50 +${rep.addedP50Ms} (${rep.forwardedP50Ms} against ${rep.localP50Ms}), p99 ${rep.forwardedP99Ms} against ${rep.localP99Ms}`,
      goal: "≤ +0.5 ms p50",
      pass: rep.addedP50Ms <= 0.5
    })
    out.push({
      figure: "replicas: a gateway's own sessions, 8 clients, store configured / none (calls/s)",
      value: `${rep.throughputRatio} (medians of ${rep.withStoreCallsPerS.join(", ")} / ${rep.withoutStoreCallsPerS.join(", ")})`,
      goal: "≥ 0.95",
      pass: rep.throughputRatio >= 0.95
    })
  }
  const c = results.catalog as any
  if (c !== undefined) {
    out.push({
      figure: "catalog 1,000 tools: build + functions (ms)",
      value: `p50 ${c.build.median}, p99 ${c.build.p99}`,
      goal: "",
      pass: undefined
    })
    out.push({
      figure: "catalog 1,000 tools: rank one query (ms)",
      value: `p50 ${c.rank.median}, p99 ${c.rank.p99}`,
      goal: "p99 ≤ 5 ms",
      pass: c.rank.p99 <= 5
    })
    if (c.rankTask !== undefined) {
      out.push({
        figure: "catalog 1,000 tools: rank a task (intents, needs, servers) (ms)",
        value: `p50 ${c.rankTask.median}, p99 ${c.rankTask.p99}`,
        goal: "≤ 5 ms",
        pass: c.rankTask.p99 <= 5
      })
    }
    if (c.rankTask20k !== undefined) {
      out.push({
        figure: "catalog 20,000 tools: rank a task (intents, needs, servers) (ms)",
        value: `p50 ${c.rankTask20k.median}, p99 ${c.rankTask20k.p99}`,
        goal: "≤ 50 ms",
        pass: c.rankTask20k.p99 <= 50
      })
      out.push({
        figure: "catalog 20,000 tools: first task after the lists changed, prepared as they change (ms)",
        value: `median ${c.firstTask20k.firstMedianMs}, max ${c.firstTask20k.firstMaxMs} (the preparation, off the request: ${c.firstTask20k.prepareMedianMs})`,
        goal: "≤ 50 ms",
        pass: c.firstTask20k.firstMaxMs <= 50
      })
    }
    out.push({
      figure: "catalog 1,000 tools: rank, index not built yet (ms)",
      value: `p50 ${c.rankColdIndex.median}, p99 ${c.rankColdIndex.p99}`,
      goal: "",
      pass: undefined
    })
    if (c.codeTool20k !== undefined) {
      out.push({
        figure: "catalog 20,000 tools: code mode's tool, declared (ms)",
        value: `p50 ${c.codeTool20k.median}, max ${c.codeTool20k.p99}`,
        goal: "max ≤ 500 ms (no piece of work that long on the loop)",
        pass: c.codeTool20k.p99 <= 500
      })
    }
  }
  return out
}

const table = (rows: ReadonlyArray<Line>): string => {
  const header = ["figure", "value", "goal", ""]
  const cells = rows.map((r) => [r.figure, r.value, r.goal, r.pass === undefined ? "" : r.pass ? "pass" : "MISS"])
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)))
  const row = (c: ReadonlyArray<string>) => `| ${c.map((x, i) => x.padEnd(widths[i]!)).join(" | ")} |`
  return [row(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...cells.map(row)].join("\n")
}

const machine = () => {
  let commit: string | undefined
  try {
    commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim()
    // Uncommitted changes to the source measured are part of what was measured.
    if (execFileSync("git", ["status", "--porcelain", "src"], { cwd: ROOT, encoding: "utf8" }).trim() !== "") commit += "+dirty"
  } catch {
    commit = undefined
  }
  return {
    cpu: cpus()[0]?.model ?? "unknown",
    cores: cpus().length,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    date: new Date().toISOString(),
    commit,
    loadAverageAtStart: loadavg().map(round2)
  }
}

/** What hostile input costs: a pasted megabyte in a query, a backend's megabytes in one reply. */
const benchHostile = async () => {
  const backends = syntheticBackends(1_000)
  const entries = buildCatalog(backends).entries
  rankEntries(entries, QUERIES[0]!, 32)
  const inputs: Record<string, [string, { selectionText?: string } | undefined]> = {
    words: ["read the file ".repeat(80_000), undefined],
    dots: [".".repeat(1_000_000), undefined],
    selection: ["explain this", { selectionText: "a.".repeat(500_000) }]
  }
  const rank1mb: Record<string, number> = {}
  for (const [name, [query, context]] of Object.entries(inputs)) {
    const samples: Array<number> = []
    for (let i = 0; i < (quick ? 5 : 20); i++) {
      const start = performance.now()
      rankEntries(entries, query, 32, context)
      samples.push(performance.now() - start)
    }
    rank1mb[name] = round3(percentile(sortedCopy(samples), 50))
  }
  const bytes = 6 * 1024 * 1024
  const config = writeConfig([{ id: "fx", command: process.execPath, args: fixtureArgs("fx") }])
  const reps = quick ? 3 : 8
  const direct: Array<number> = []
  const through: Array<number> = []
  let peakRssMb = 0
  log(`hostile: ${reps} rounds of a ${bytes} byte reply, direct and through the gateway`)
  const call = async (client: RpcClient, name: string) => {
    const start = performance.now()
    const reply = await client.request("tools/call", { name, arguments: { bytes } })
    if ((reply as any).result?.content?.[0]?.text?.length !== bytes)
      throw new Error(`bad big reply: ${JSON.stringify(reply).slice(0, 200)}`)
    return performance.now() - start
  }
  const fixture = new RpcClient(process.execPath, fixtureArgs("direct"), { stderrFile: stderrFile("fixture") })
  await fixture.initialize()
  const gateway = startGateway(BIN, config)
  await gateway.initialize()
  for (let r = 0; r < reps; r++) {
    direct.push(await call(fixture, "big"))
    through.push(await call(gateway, "fx__big"))
    peakRssMb = Math.max(peakRssMb, rssKb(gateway.pid) / 1024)
  }
  await fixture.close()
  await gateway.close()
  results.hostile = {
    rank1mbMedianMs: rank1mb,
    bigReply: {
      bytes,
      directMedianMs: round2(percentile(sortedCopy(direct), 50)),
      gatewayMedianMs: round2(percentile(sortedCopy(through), 50)),
      gatewayPeakRssMb: round2(peakRssMb)
    }
  }
}

/**
 * A misbehaving model, through the real openai client and a local Chat Completions server: one turn
 * of 10,000 tool calls (ms to the -32003 reply, the worst ping answered meanwhile; then the exit code
 * and ms after stdin EOF in the middle of it), and a 1 MB file read with `maxResultChars: 2000`
 * (the characters of the tool message the model got).
 */
const benchFanOut = async (fileDir: string) => {
  const fake = await startFakeOpenAI()
  const big = join(fileDir, "big.txt")
  writeFileSync(big, "a line of the big file, to be cut for the model\n".repeat(21_000))
  const config = writeConfig([{ id: "filesystem", command: process.execPath, args: [serverFilesystemEntry(), fileDir] }])
  const llmEnv = { OPENAI_API_KEY: "sk-bench-fanout", OPENAI_BASE_URL: fake.baseUrl }
  const fanOut = {
    toolCalls: Array.from({ length: 10_000 }, () => ({ name: "filesystem__read_text_file", arguments: { path: big } }))
  }
  const reps = quick ? 2 : 5
  const replyMs: Array<number> = []
  const worstPingMs: Array<number> = []
  const exitMs: Array<number> = []
  const exitCodes: Array<number | null> = []
  try {
    // The model that fans out runs in a process of its own: building its 10,000 calls here would
    // stall this process, the one measuring the pings.
    const model = spawn(process.execPath, ["--import", "tsx", FAKE_LLM], {
      env: {
        ...process.env,
        FAKE_CALLS: "10000",
        FAKE_TOOL: "filesystem__read_text_file",
        FAKE_ARGUMENTS: JSON.stringify({ path: big })
      },
      stdio: ["ignore", "pipe", "inherit"]
    })
    const [line] = (await once(model.stdout!, "data")) as [Buffer]
    const remote = { ...llmEnv, OPENAI_BASE_URL: JSON.parse(String(line)).baseUrl as string }
    for (let r = 0; r < reps; r++) {
      fake.setSteps([fanOut])
      const gateway = startGateway(BIN, config, remote)
      await gateway.initialize()
      let done = false
      const pings: Array<number> = []
      const pinging = (async () => {
        while (!done) {
          pings.push((await gateway.request("ping")).ms)
          await sleep(5)
        }
      })()
      const reply = await gateway.request("agentify/orchestrateTask", { query: "read big.txt ten thousand times" })
      done = true
      await pinging
      if (reply.error?.code !== -32003) throw new Error(`fan-out: expected -32003, got ${JSON.stringify(reply).slice(0, 300)}`)
      replyMs.push(reply.ms)
      worstPingMs.push(Math.max(...pings))
      await gateway.close()
    }
    model.kill()
    for (let r = 0; r < reps; r++) {
      // The same, and stdin ends while the gateway answers the model's fan-out.
      fake.setSteps([fanOut])
      const gateway = startGateway(BIN, config, llmEnv)
      await gateway.initialize()
      const before = fake.requests.length
      void gateway.request("agentify/orchestrateTask", { query: "fan out" })
      await fake.untilRequests(before + 1)
      const eof = performance.now()
      gateway.child.stdin!.end()
      const timer = setTimeout(() => gateway.child.kill("SIGKILL"), 10_000)
      exitCodes.push(await gateway.exited)
      clearTimeout(timer)
      exitMs.push(performance.now() - eof)
    }
    fake.setSteps([{ tool: "filesystem__read_text_file", arguments: { path: big } }, { text: "Read." }])
    const gateway = startGateway(BIN, config, llmEnv)
    await gateway.initialize()
    const before = fake.requests.length
    await gateway.request("agentify/orchestrateTask", { query: "read big.txt", maxResultChars: 2_000 })
    const told = fake.requests[before + 1]?.body.messages.find((m: any) => m.role === "tool")?.content as string | undefined
    await gateway.close()
    results.fanout = {
      calls: 10_000,
      replyMedianMs: round2(median(replyMs)),
      worstPingMs: round2(Math.max(...worstPingMs)),
      eofExitMedianMs: round2(median(exitMs)),
      exitCodes: [...new Set(exitCodes)],
      bigFile: { chars: readFileSync(big, "utf8").length, modelGotChars: told?.length ?? null, maxResultChars: 2_000 }
    }
  } finally {
    await fake.close()
  }
}

/** Code mode: the sandbox's start, a call's cost from a script, and what the model is sent. */
const benchCodeMode = async (fileDir: string) => {
  const config = writeConfig([{ id: "fx", command: process.execPath, args: fixtureArgs("fx") }])
  const gateway = startGateway(BIN, config)
  const reps = quick ? 10 : 40
  try {
    await gateway.initialize()
    const runCode = async (code: string) => {
      const reply = await gateway.request("tools/call", { name: "agentify_run_code", arguments: { code } })
      if (reply.error !== undefined || reply.result?.isError === true) {
        throw new Error(
          `agentify_run_code failed: ${JSON.stringify(reply.error ?? reply.result).slice(0, 300)}${gateway.stderrTail()}`
        )
      }
      return reply.ms
    }
    const cold = await runCode("return 1")
    const warm: Array<number> = []
    for (let i = 0; i < reps; i++) {
      // Each run's spare thread is made as the run ends: the next run waits until it is ready.
      await untilQuiet(gateway.pid)
      warm.push(await runCode("return 1"))
    }
    // maxCalls (100 by default) bounds a run.
    const calls = 100
    const direct: Array<number> = []
    for (let i = 0; i < calls; i++) direct.push((await gateway.request("tools/call", { name: "fx__echo", arguments: { i } })).ms)
    // Per call: a script of 100 calls less an empty script, the median of several rounds.
    const perCallRounds: Array<number> = []
    for (let round = 0; round < (quick ? 3 : 7); round++) {
      await untilQuiet(gateway.pid)
      const empty = await runCode("return 0")
      await untilQuiet(gateway.pid)
      const scripted = await runCode(`for (let i = 0; i < ${calls}; i++) await tools.fx.echo({ i }); return ${calls}`)
      perCallRounds.push((scripted - empty) / calls)
    }
    const perCall = median(perCallRounds)
    // Hostile scripts: an endless loop (pings meanwhile), a memory bomb, a 50 MB result; the
    // gateway's RSS before and after them (each run's thread is gone with it).
    const hostile = async (code: string) =>
      gateway.request("tools/call", { name: "agentify_run_code", arguments: { code, timeoutMs: 1_500 } })
    const threadsBefore = threadsOf(gateway.pid)
    const rssBefore = rssKb(gateway.pid) / 1024
    let looping = true
    const pings: Array<number> = []
    const loop = hostile("while (true) {}").finally(() => (looping = false))
    while (looping) {
      pings.push((await gateway.request("ping")).ms)
      await sleep(5)
    }
    await loop
    for (let i = 0; i < 3; i++) {
      await hostile('const a = []; while (true) a.push("x".repeat(1e6))')
      await hostile('return "x".repeat(50 * 1024 * 1024)')
    }
    // The runs' threads ended (only the spare is left, as before) and the gateway is idle again.
    const deadline = performance.now() + 10_000
    while (threadsOf(gateway.pid) > threadsBefore) {
      if (performance.now() > deadline) throw new Error("the runs' threads did not end")
      await sleep(20)
    }
    await untilQuiet(gateway.pid)
    const rssAfter = rssKb(gateway.pid) / 1024
    results.codemode = {
      hostile: { worstPingMs: round2(Math.max(...pings)), rssBeforeMb: round2(rssBefore), rssAfterMb: round2(rssAfter) },
      coldStartMs: round2(cold),
      warmStart: { p50: round2(median(warm)), p99: round2(percentile(sortedCopy(warm), 99)) },
      call: { directP50Ms: round3(median(direct)), fromScriptMs: round3(perCall), overheadMs: round3(perCall - median(direct)) },
      tokens: await codeModeBytes(fileDir)
    }
  } finally {
    await gateway.close()
  }
}

/**
 * One task, "which of these 20 files mention the pelican?", played by a scripted model both ways:
 * in mode "tools" it reads the 20 files in one turn (their texts go back to it), in mode "code" it
 * sends one script (its result goes back). The bytes of every Chat Completions request sent.
 */
const codeModeBytes = async (fileDir: string) => {
  const dir = join(fileDir, "twenty")
  mkdirSync(dir, { recursive: true })
  const paths = Array.from({ length: 20 }, (_, i) => join(dir, `note-${i}.txt`))
  paths.forEach((p, i) =>
    writeFileSync(p, `${i % 4 === 0 ? "A pelican was seen. " : ""}${"Field notes on the shore, tide and weather. ".repeat(100)}`)
  )
  const fake = await startFakeOpenAI()
  const config = writeConfig([{ id: "filesystem", command: process.execPath, args: [serverFilesystemEntry(), dir] }])
  const gateway = startGateway(BIN, config, { OPENAI_API_KEY: "sk-bench-codemode", OPENAI_BASE_URL: fake.baseUrl })
  try {
    await gateway.initialize()
    const sent = async (params: Record<string, unknown>) => {
      const before = fake.requests.length
      const reply = await gateway.request("agentify/orchestrateTask", {
        query: "which of the notes mention the pelican?",
        ...params
      })
      if (reply.error !== undefined) throw new Error(`orchestration failed: ${JSON.stringify(reply.error)}`)
      return fake.requests.slice(before).reduce((n, r) => n + Buffer.byteLength(JSON.stringify(r.body)), 0)
    }
    fake.setSteps([
      { toolCalls: paths.map((path) => ({ name: "filesystem__read_text_file", arguments: { path } })) },
      { text: "note-0, note-4, note-8, note-12 and note-16 mention the pelican." }
    ])
    const tools = await sent({ maxCallsPerTurn: 20 })
    const script = `const paths = ${JSON.stringify(paths)}
      const hits = []
      for (const path of paths) {
        const file = await tools.filesystem.read_text_file({ path })
        if (String(file.content ?? file).includes("pelican")) hits.push(path.split("/").pop())
      }
      return hits`
    fake.setSteps([{ tool: "run_code", arguments: { code: script } }, { text: "Five notes mention the pelican." }])
    const code = await sent({ mode: "code" })
    return { toolsModeBytes: tools, codeModeBytes: code, saved: round3(1 - code / tools) }
  } finally {
    await gateway.close()
    await fake.close()
  }
}

const main = async () => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build first`)
  const info = machine()
  log(`bench: ${info.cpu}, ${info.cores} cores, node ${info.node}, load ${info.loadAverageAtStart.join(" ")}`)
  const fileDir = join(work, "files")
  mkdirSync(fileDir)
  const filePath = join(fileDir, "notes.txt")
  writeFileSync(filePath, "A small file for the benchmark.\n".repeat(16))
  const started = performance.now()
  if (enabled("catalog")) benchCatalog()
  if (enabled("startup")) await benchStartup()
  if (enabled("passthrough")) await benchPassthrough(fileDir, filePath)
  if (enabled("http")) await benchHttp(fileDir, filePath)
  if (enabled("orchestration")) await benchOrchestration(fileDir, filePath)
  if (enabled("memory")) await benchMemory()
  if (enabled("reload")) await benchReload()
  if (enabled("hostile")) await benchHostile()
  if (enabled("fanout")) await benchFanOut(fileDir)
  if (enabled("codemode")) await benchCodeMode(fileDir)
  if (enabled("provenance")) await benchProvenance()
  if (enabled("governance")) {
    log("governance: a policy decision and the quotas' count, per call")
    results.governance = benchGovernance(quick)
  }
  if (enabled("replicas")) {
    log("replicas: a request handed to the session's holder, and throughput with a store")
    results.replicas = await benchReplicas({ bin: BIN, fixture: FIXTURE, env: env(), quick })
  }
  if (enabled("manyservers")) {
    log("many servers: LiveMCPBench's 70 as stand-ins, started on use against every one at initialize")
    results.manyServers = await benchManyServers({ bin: BIN, root: ROOT, env: env() })
  }
  if (enabled("search")) {
    log("search: a worst-case agentify_search_tools (2,000 characters, limit 50), in process and through the gateway")
    results.search = await benchSearch({ bin: BIN, root: ROOT, env: env(), quick })
  }
  const rows = lines()
  const report = {
    machine: { ...info, loadAverageAtEnd: loadavg().map(round2) },
    options: { quick, only: only ?? null, cpuProfile: profileDir !== undefined, gateway: options.gateway ?? null },
    durationSeconds: Math.round((performance.now() - started) / 1000),
    goals: rows
      .filter((r) => r.pass !== undefined)
      .map((r) => ({ figure: r.figure, value: r.value, goal: r.goal, pass: r.pass })),
    results
  }
  mkdirSync(RESULTS, { recursive: true })
  const partial = quick || only !== undefined || profileDir !== undefined || options.gateway !== undefined
  const out = join(RESULTS, partial ? "latest.tmp.json" : "latest.json")
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`)
  process.stdout.write(`\n${table(rows)}\n\n`)
  process.stdout.write(
    `${info.cpu}, ${info.cores} cores, node ${info.node}, ${info.date.slice(0, 10)}; load ${info.loadAverageAtStart.join(" ")} -> ${report.machine.loadAverageAtEnd.join(" ")}; ${report.durationSeconds} s\n`
  )
  process.stdout.write(`written to ${out}\n`)
}

main()
  .catch((error) => {
    process.stderr.write(`bench failed: ${(error as Error).stack ?? error}\n`)
    process.exitCode = 1
  })
  .finally(() => rmSync(work, { recursive: true, force: true }))
