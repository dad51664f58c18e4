/**
 * One code-mode run, from the gateway's side: a worker thread (see `Worker`) is started for the
 * script, its tool calls are run by the host (the client's call path: see gateway/RunCode) with the
 * run's bounds (calls per run, calls at once), and what it returned, logged and called comes back
 * as one outcome. The deadline and a cancellation terminate the thread, whatever it is doing, and
 * interrupt the calls it has in flight.
 */
import { Effect, FiberSet, Option, Queue } from "effect"
import { existsSync } from "node:fs"
import { Worker } from "node:worker_threads"
import * as Slots from "./Slots.js"
import * as Depth from "../json/Depth.js"
import type { FromWorker, RunMessage, SettleMessage, WorkerData } from "./Worker.js"

export interface Limits {
  readonly timeoutMs: number
  readonly memoryMb: number
  readonly maxCalls: number
  readonly maxConcurrentCalls: number
  readonly maxOutputBytes: number
  /** Scripts running at once in this process, and waiting beyond those (see Slots). */
  readonly maxRuns: number
  readonly maxQueuedRuns: number
}

export const DEFAULT_LIMITS: Limits = {
  timeoutMs: 30_000,
  memoryMb: 64,
  maxCalls: 100,
  maxConcurrentCalls: 8,
  maxOutputBytes: 1024 * 1024,
  ...Slots.DEFAULT_BOUNDS
}

export type LimitName = keyof Limits

/** One call the script made, as the result lists it. */
export interface CallRecord {
  readonly tool: string
  /** Scrubbed of secrets, and cut when long. */
  readonly arguments?: unknown
  readonly ms: number
  readonly isError: boolean
  /** Held back by a dry run: it did not run. */
  readonly dryRun?: true
  /** Sent to its backend, then stopped as the run ended (a limit, the deadline, or the script returned). */
  readonly interrupted?: true
}

/** What the host answers for one call: the value the script gets, or why the call rejects. */
export type CallAnswer =
  | { readonly ok: true; readonly value: unknown; readonly record: CallRecord }
  | { readonly ok: false; readonly message: string; readonly record: CallRecord | undefined }

export interface Host {
  readonly call: (name: string, args: unknown) => Effect.Effect<CallAnswer>
  readonly search: (query: string) => string
}

export type Outcome =
  | {
      readonly ok: true
      readonly value: unknown
      readonly text: boolean
      readonly logs: ReadonlyArray<string>
      readonly calls: ReadonlyArray<CallRecord>
    }
  | {
      readonly ok: false
      readonly name: string
      readonly message: string
      readonly line?: number | undefined
      readonly limit?: LimitName | undefined
      readonly logs: ReadonlyArray<string>
      readonly calls: ReadonlyArray<CallRecord>
    }

/** The worker's file: beside the bundle's chunks (dist/sandbox-worker.js), or tsc's output. Found once. */
let found: URL | undefined
const workerFile = (): URL => {
  if (found !== undefined) return found
  for (const candidate of ["../sandbox-worker.js", "./Worker.js"]) {
    const url = new URL(candidate, import.meta.url)
    if (existsSync(url)) return (found = url)
  }
  throw new Error("code mode's worker is missing: run npm run build")
}

/** How long after a run its thread ends, and the next spare starts: after the run's reply is written. */
const AFTER_REPLY_MS = 20

const start = (memoryMb: number): Worker => {
  const worker = new Worker(workerFile(), {
    workerData: { memoryMb } satisfies WorkerData,
    // The thread's own heap (messages, QuickJS's bindings); the script's memory is the fixed one.
    resourceLimits: { maxOldGenerationSizeMb: 64 + memoryMb }
  })
  live++
  worker.once("exit", () => live--)
  return worker
}

/**
 * One thread started ahead of the next run, its QuickJS already instantiated (a run then starts in
 * a few milliseconds instead of a hundred or more). Made after a run ends, never before the first:
 * a gateway that runs no code starts none. It does not keep the process alive.
 */
let spare: { readonly worker: Worker; readonly memoryMb: number } | undefined

const take = (memoryMb: number): Worker => {
  const ready = spare
  spare = undefined
  if (ready !== undefined && ready.memoryMb === memoryMb) {
    ready.worker.ref()
    return ready.worker
  }
  if (ready !== undefined) void ready.worker.terminate()
  return start(memoryMb)
}

const prepareSpare = (memoryMb: number) => {
  if (spare !== undefined) return
  const worker = start(memoryMb)
  worker.unref()
  // A spare that fails is dropped; the next run starts its own.
  worker.once("error", () => {
    if (spare?.worker === worker) spare = undefined
  })
  spare = { worker, memoryMb }
}

/** Threads started and not yet ended (the spare included): what a test counts. */
let live = 0
export const liveThreads = () => live

/**
 * Runs `code` (JavaScript, the body of an async function) with `host` answering its calls, in a
 * turn of the process's (see Slots): refused at once, as a `maxRuns` limit, when none is free and
 * the queue is full.
 */
export const run = (code: string, names: RunMessage["names"], limits: Limits, host: Host): Effect.Effect<Outcome> =>
  Slots.withTurn(limits, runNow(code, names, limits, host)).pipe(
    Effect.catch((busy) =>
      Effect.succeed<Outcome>({ ok: false, name: "LimitError", message: busy.message, limit: "maxRuns", logs: [], calls: [] })
    )
  )

const runNow = (code: string, names: RunMessage["names"], limits: Limits, host: Host): Effect.Effect<Outcome> =>
  Effect.scoped(
    Effect.gen(function* () {
      const calls: Array<CallRecord> = []
      const logs: Array<string> = []
      // The script's calls wait in a queue for at most `maxConcurrentCalls` fibers of this run (in its
      // context: its logger, its span), interrupted with it: no fiber, no semaphore per call. A fiber
      // is added only when calls wait that no idle fiber will take, so a script that calls nothing starts none.
      const pending = yield* Queue.unbounded<{ readonly id: number; readonly name: string; readonly args: unknown }>()
      const fibers = yield* FiberSet.make()
      const runFork = yield* FiberSet.runtime(fibers)<never>()
      let answering = 0
      let idle = 0
      let queued = 0
      // Each run has a thread of its own, ended with it: whatever the script grew goes.
      const worker = yield* Effect.acquireRelease(
        Effect.sync(() => take(limits.memoryMb)),
        // Both a moment later, once the reply is on its way: ending a thread and starting one hold
        // this thread for milliseconds each (measured: a warm run's reply 8 ms sooner).
        (w) =>
          Effect.sync(() => {
            setTimeout(() => void w.terminate(), AFTER_REPLY_MS)
            setTimeout(() => prepareSpare(limits.memoryMb), AFTER_REPLY_MS)
          })
      )
      let made = 0
      const settle = (id: number, ok: boolean, value: string) =>
        worker.postMessage({ type: "settle", id, ok, value } satisfies SettleMessage)
      const answer = Effect.flatMap(
        Effect.ensuring(
          Effect.andThen(
            Effect.sync(() => idle++),
            Queue.take(pending)
          ),
          Effect.sync(() => {
            idle--
            queued--
          })
        ),
        ({ id, name, args }) =>
          Effect.map(host.call(name, args), (answered) => {
            if (answered.record !== undefined) calls.push(answered.record)
            if (answered.ok) settle(id, true, JSON.stringify(answered.value ?? null))
            else settle(id, false, answered.message)
          })
      )
      const offer = (call: { readonly id: number; readonly name: string; readonly args: unknown }) => {
        queued++
        Queue.offerUnsafe(pending, call)
        if (queued > idle && answering < limits.maxConcurrentCalls) {
          answering++
          runFork(Effect.forever(answer))
        }
      }
      const outcome = yield* Effect.callback<Outcome>((resume) => {
        // Once the outcome is known nothing the thread still sends is acted on: a call from a loop
        // that outlived `return` never reaches a backend.
        let over = false
        const end = (outcome: Outcome) => {
          if (over) return
          over = true
          resume(Effect.succeed(outcome))
        }
        const fail = (name: string, message: string, limit?: LimitName) => end({ ok: false, name, message, limit, logs, calls })
        worker.on("message", (m: FromWorker) => {
          if (over) return
          // Nothing the thread sends may throw out of this listener: it would end the process.
          try {
            receive(m)
          } catch (error) {
            fail(
              "Error",
              `the sandbox sent what the gateway could not read (${error instanceof Error ? error.message : String(error)})`
            )
          }
        })
        const receive = (m: FromWorker) => {
          switch (m.type) {
            case "log":
              logs.push(m.text)
              return
            case "search":
              return settle(m.id, true, host.search(m.query))
            case "call": {
              if (++made > limits.maxCalls) {
                return fail("LimitError", `the script made more than maxCalls (${limits.maxCalls}) tool calls`, "maxCalls")
              }
              let args: unknown
              try {
                args = Depth.parse(m.args)
              } catch {
                args = {}
              }
              offer({ id: m.id, name: m.name, args })
              return
            }
            case "done": {
              if (m.ok) {
                const value: unknown = m.text ? m.value : JSON.parse(m.value)
                return end({ ok: true, value, text: m.text, logs, calls })
              }
              // QuickJS's own words for the two limits it enforces (however the script met them), said
              // as the limits' names: the one place that reads them.
              if (/out of memory/i.test(m.message)) {
                return fail("LimitError", `the script used more than memoryMb (${limits.memoryMb} MiB)`, "memoryMb")
              }
              if (/^interrupted$/i.test(m.message)) {
                return fail("LimitError", `the script ran longer than timeoutMs (${limits.timeoutMs} ms)`, "timeoutMs")
              }
              return end({ ok: false, name: m.name, message: m.message, line: m.line, limit: m.limit, logs, calls })
            }
          }
        }
        worker.on("error", (error) => fail("Error", `the sandbox failed: ${error.message}`))
        worker.on("exit", (code) => fail("Error", `the sandbox stopped (exit ${code})`))
        worker.postMessage({
          type: "run",
          code,
          names,
          deadline: Date.now() + limits.timeoutMs,
          maxOutputBytes: limits.maxOutputBytes
        } satisfies RunMessage)
      }).pipe(
        // The worker's own interrupt handler stops a busy script; this stops everything else.
        Effect.timeoutOption(limits.timeoutMs + 250)
      )
      return Option.getOrElse(outcome, (): Outcome => ({
        ok: false,
        name: "LimitError",
        message: `the script ran longer than timeoutMs (${limits.timeoutMs} ms)`,
        limit: "timeoutMs",
        logs,
        calls
      }))
    })
  )
