/**
 * `npm run eval -- --live`: the labelled queries end to end through the built gateway and the
 * configured model (OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL from the environment), in front of
 * the real server-filesystem, server-memory and server-everything, each confined to a scratch
 * directory. Per query: the first planned call (dry run: the tool chosen at step 1, whether its
 * arguments fit the tool's schema), then the task run for real (its steps); tokens and latency of
 * both. It costs two orchestrations per query with a paid model.
 *
 *     npm run eval -- --live [--limit N] [--json]
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { createInterface } from "node:readline"

const require = createRequire(import.meta.url)
const binOf = (pkg: string): string => join(dirname(require.resolve(`${pkg}/package.json`)), "dist", "index.js")

interface Query {
  readonly query: string
  readonly expected: string
  readonly context?: object
  readonly split?: "holdout" | "fresh"
}

interface Outcome {
  readonly query: string
  readonly expected: string
  readonly chosen: string | undefined
  readonly argumentsValid: boolean
  readonly steps: number
  readonly completed: boolean
  readonly tokens: number
  readonly planMs: number
  readonly runMs: number
  readonly error?: string
}

/** A JSON-lines client of the gateway over its stdin/stdout. */
const connect = (child: ChildProcess) => {
  const waiting = new Map<number, (reply: any) => void>()
  let next = 0
  createInterface({ input: child.stdout! }).on("line", (line) => {
    let message: any
    try {
      message = JSON.parse(line)
    } catch {
      return
    }
    if (message.id !== undefined && (message.result !== undefined || message.error !== undefined))
      waiting.get(message.id)?.(message)
  })
  return (method: string, params: unknown) =>
    new Promise<any>((resolve) => {
      const id = ++next
      waiting.set(id, resolve)
      child.stdin!.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`)
    })
}

const tokensOf = (usage: any): number => (typeof usage?.totalTokens === "number" ? usage.totalTokens : 0)

export const runLive = async (queries: ReadonlyArray<Query>, options: { readonly limit?: number; readonly json: boolean }) => {
  if (process.env.OPENAI_API_KEY === undefined && process.env.OPENAI_BASE_URL === undefined) {
    console.error(
      "The live eval needs a model: set OPENAI_API_KEY (OpenAI), or OPENAI_BASE_URL with OPENAI_MODEL for another OpenAI-compatible server (and a placeholder OPENAI_API_KEY if it wants none)."
    )
    process.exit(2)
  }
  const scratch = mkdtempSync(join(tmpdir(), "agentify-live-eval-"))
  mkdirSync(join(scratch, "src"))
  writeFileSync(join(scratch, "src", "index.ts"), 'export const hello = "world"\n')
  writeFileSync(join(scratch, "package.json"), '{ "name": "scratch", "version": "1.0.0" }\n')
  writeFileSync(join(scratch, "README.md"), "# Scratch\nA project to run the eval in.\n")
  const config = join(scratch, "agentify.json")
  writeFileSync(
    config,
    JSON.stringify({
      // Confined to the scratch directory; nobody is there to confirm anything.
      confirmTools: "never",
      mcpServers: {
        filesystem: { command: process.execPath, args: [binOf("@modelcontextprotocol/server-filesystem"), scratch] },
        memory: {
          command: process.execPath,
          args: [binOf("@modelcontextprotocol/server-memory")],
          env: { MEMORY_FILE_PATH: join(scratch, "memory.jsonl") }
        },
        everything: { command: process.execPath, args: [binOf("@modelcontextprotocol/server-everything"), "stdio"] }
      }
    })
  )
  const gateway = spawn(
    process.execPath,
    [join(dirname(require.resolve("../../package.json")), "dist", "bin.js"), "--config", config],
    {
      cwd: scratch,
      stdio: ["pipe", "pipe", "ignore"]
    }
  )
  const request = connect(gateway)
  const outcomes: Array<Outcome> = []
  try {
    await request("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "live-eval", version: "1" }
    })
    const chosen = queries.slice(0, options.limit ?? queries.length)
    for (const [i, q] of chosen.entries()) {
      const context = { currentWorkingDirectory: scratch, ...q.context }
      const planned = Date.now()
      const dry = await request("agentify/orchestrateTask", { query: q.query, context, dryRun: true })
      const planMs = Date.now() - planned
      const started = Date.now()
      const run = await request("agentify/orchestrateTask", { query: q.query, context })
      const runMs = Date.now() - started
      const outcome: Outcome = {
        query: q.query,
        expected: q.expected,
        chosen: dry.result?.structuredContent?.plan?.tool ?? dry.error?.data?.toolName,
        argumentsValid: dry.result?.structuredContent?.valid === true,
        steps: run.result?._meta?.["agentify/steps"]?.length ?? 0,
        completed: run.error === undefined,
        tokens: tokensOf(dry.result?._meta?.["agentify/usage"]) + tokensOf(run.result?._meta?.["agentify/usage"]),
        planMs,
        runMs,
        ...(run.error === undefined ? {} : { error: `${run.error.code} ${run.error.message}` })
      }
      outcomes.push(outcome)
      if (!options.json) {
        console.log(
          `${String(i + 1).padStart(3)} ${outcome.chosen === q.expected ? "ok  " : "MISS"} ${outcome.argumentsValid ? "valid  " : "invalid"} ` +
            `steps ${outcome.steps} ${outcome.completed ? "done" : "failed"} ${outcome.tokens} tokens ${planMs}+${runMs} ms  ${JSON.stringify(q.query)}` +
            (outcome.chosen === q.expected ? "" : `\n      want ${q.expected}, chose ${outcome.chosen ?? "(nothing)"}`)
        )
      }
    }
  } finally {
    gateway.stdin!.end()
    await new Promise((resolve) => gateway.once("exit", resolve))
    rmSync(scratch, { recursive: true, force: true })
  }
  const n = Math.max(1, outcomes.length)
  const sorted = (values: Array<number>) => values.sort((a, b) => a - b)
  const median = (values: Array<number>) => sorted(values)[Math.floor(values.length / 2)] ?? 0
  const totals = {
    queries: outcomes.length,
    toolAccuracyAtStep1: outcomes.filter((o) => o.chosen === o.expected).length / n,
    argumentsValid: outcomes.filter((o) => o.argumentsValid).length / n,
    completed: outcomes.filter((o) => o.completed).length / n,
    meanSteps: outcomes.reduce((sum, o) => sum + o.steps, 0) / n,
    tokens: outcomes.reduce((sum, o) => sum + o.tokens, 0),
    planMsMedian: median(outcomes.map((o) => o.planMs)),
    runMsMedian: median(outcomes.map((o) => o.runMs))
  }
  if (options.json) {
    process.stdout.write(`${JSON.stringify({ ...totals, outcomes }, null, 2)}\n`)
    return
  }
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`
  console.log(
    `\nlive eval, ${totals.queries} queries: tool at step 1 ${pct(totals.toolAccuracyAtStep1)}, arguments valid ${pct(totals.argumentsValid)}, ` +
      `completed ${pct(totals.completed)}, ${totals.meanSteps.toFixed(2)} steps on average, ${totals.tokens} tokens, ` +
      `median ${totals.planMsMedian} ms to plan and ${totals.runMsMedian} ms to run`
  )
}
