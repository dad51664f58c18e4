/**
 * Code mode's sandbox, in a worker thread of its own: one script run in QuickJS compiled to
 * WebAssembly, with nothing of the host but what is handed in (`callTool`, `tools`, `searchTools`,
 * `console`). A thread, so that a script that computes for seconds never holds the gateway's event
 * loop; a fresh one per run, so that whatever a script grew is gone with it.
 *
 * Limits: memory is a fixed `WebAssembly.Memory` (QuickJS's own memory limit does not bound strings
 * and arrays); time is an interrupt handler polled by QuickJS, and the parent terminates the thread
 * at the deadline whatever happens; the stack is capped. Tool calls go to the parent, which runs
 * them on the client's call path and answers; the script's promise then goes on.
 *
 * The module is instantiated as the thread starts (its memory bound from `workerData.memoryMb`), so
 * that a thread started ahead of need (see Sandbox's spare) runs a script at once.
 *
 * Messages: in `{type: "run", ...}` once, then `{type: "settle", id, ok, value | error}` per call;
 * out `{type: "call" | "search", id, ...}`, `{type: "log", text}`, then `{type: "done", ...}`.
 */
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSSyncVariant
} from "quickjs-emscripten-core"
import * as quickjsNg from "@jitl/quickjs-ng-wasmfile-release-sync"
import { parentPort, workerData } from "node:worker_threads"
import { field } from "../json/Json.js"

// The package's types describe its CommonJS build; imported as ES, the variant is the default export.
const variant = (field(quickjsNg, "default") ?? quickjsNg) as QuickJSSyncVariant

/** Node's WebAssembly, which this project's type libraries (ES2022, node) do not declare as a value. */
const Wasm = (globalThis as unknown as { WebAssembly: { Memory: new (d: { initial: number; maximum: number }) => object } })
  .WebAssembly

export interface RunMessage {
  readonly type: "run"
  readonly code: string
  /** Each tool the script may call: its namespace (null: none), its key there, its exposed name. */
  readonly names: ReadonlyArray<readonly [string | null, string, string]>
  readonly deadline: number
  readonly maxOutputBytes: number
}

/** What the thread is started with. */
export interface WorkerData {
  readonly memoryMb: number
}

export interface SettleMessage {
  readonly type: "settle"
  readonly id: number
  readonly ok: boolean
  /** The call's value as JSON (ok), or why it failed. */
  readonly value: string
}

export type FromWorker =
  | { readonly type: "call"; readonly id: number; readonly name: string; readonly args: string }
  | { readonly type: "search"; readonly id: number; readonly query: string }
  | { readonly type: "log"; readonly text: string }
  | { readonly type: "done"; readonly ok: true; readonly value: string; readonly text: boolean }
  | {
      readonly type: "done"
      readonly ok: false
      readonly name: string
      readonly message: string
      readonly line?: number | undefined
      readonly limit?: "maxOutputBytes" | undefined
    }

/** WebAssembly pages are 64 KiB. QuickJS needs 16 MiB to start. */
const PAGE = 65_536
const STACK_BYTES = 512 * 1024

/** What the script sees of the host, built inside QuickJS from the handed-in functions. */
const PRELUDE = `
"use strict";
globalThis.callTool = async (name, args) => JSON.parse(await __call(String(name), JSON.stringify(args === undefined ? {} : args)));
globalThis.searchTools = async (query) => await __search(String(query));
const show = (v) => typeof v === "string" ? v : (() => { try { return JSON.stringify(v); } catch (e) { return String(v); } })();
globalThis.console = { log: (...a) => __log(a.map(show).join(" ")), info: (...a) => __log(a.map(show).join(" ")),
  warn: (...a) => __log(a.map(show).join(" ")), error: (...a) => __log(a.map(show).join(" ")) };
// How a run ends, bound now so that a script that replaces a global cannot change it. A value JSON
// cannot hold (a function, a symbol, a BigInt, a cycle, a getter that throws) is the script's error,
// named at once; so is a thrown value that cannot even be shown.
{
  const done = __done;
  const kind = (v) => typeof v === "function" ? "a function" : typeof v === "symbol" ? "a symbol" : "a value whose toJSON gave undefined";
  globalThis.__settleValue = (v) => {
    if (typeof v === "string") return done(true, v, true);
    let json;
    try { json = JSON.stringify(v === undefined ? null : v); }
    catch (e) {
      let why = "";
      try { why = String(e && e.message !== undefined ? e.message : e); } catch (_) {}
      return done(false, "TypeError", "the returned value cannot be written as JSON (" + why + "): return plain data", "", false);
    }
    if (typeof json !== "string") return done(false, "TypeError", "the script returned " + kind(v) + ", which JSON cannot hold: return plain data", "", false);
    done(true, json, false);
  };
  globalThis.__settleError = (e) => {
    let name = "Error", message = "the script threw a value that cannot be shown", stack = "";
    try { name = String(e && e.name || "Error"); } catch (_) {}
    try { message = String(e && e.message !== undefined ? e.message : e); } catch (_) {}
    try { stack = String(e && e.stack || ""); } catch (_) {}
    done(false, name, message, stack, e === null || e === undefined);
  };
}
globalThis.__install = (namesJson) => {
  const tools = {};
  for (const [ns, key, exposed] of JSON.parse(namesJson)) {
    const target = ns === null ? tools : (tools[ns] = tools[ns] || {});
    target[key] = (args) => callTool(exposed, args);
  }
  globalThis.tools = tools;
};
`

/**
 * The line of the script (from 1) an error's stack names, if any. QuickJS names the wrapping
 * function's start (1:1) for the errors it raises itself (a TypeError): no line is better than a
 * wrong one.
 */
const lineOf = (stack: string): number | undefined => {
  const match = /script\.js:(\d+):(\d+)/.exec(stack)
  if (match === null || (match[1] === "1" && match[2] === "1")) return undefined
  return Math.max(1, Number(match[1]) - 1)
}

/** The script's memory, fixed at `memoryMb` (its pages, and the memory once made). */
let memoryPages = 0
let memory: { readonly buffer: ArrayBuffer } | undefined

/** Whether the script's memory has grown to within a megabyte of its bound. */
const nearCap = () => memory !== undefined && memory.buffer.byteLength >= (memoryPages - 16) * PAGE

/** Said as QuickJS says it when it can (see Sandbox, which names the limit). */
const outOfMemory: FromWorker = { type: "done", ok: false, name: "InternalError", message: "out of memory" }

/** QuickJS in a memory of its own, fixed at `memoryMb`. */
const load = (memoryMb: number) => {
  memoryPages = Math.max(256, Math.floor((memoryMb * 1024 * 1024) / PAGE))
  const made = new Wasm.Memory({ initial: 256, maximum: memoryPages })
  memory = made as { readonly buffer: ArrayBuffer }
  return newQuickJSWASMModuleFromVariant(newVariant(variant, { wasmMemory: made as never }))
}

const post = (m: FromWorker) => parentPort?.postMessage(m)

/** The run this thread serves, once its message came. */
let job: RunMessage | undefined
let finished = false
const finish = (m: FromWorker) => {
  if (finished) return
  finished = true
  post(m)
}

/** A runtime and a context with the host's functions and the prelude: made before the script is known. */
const setup = (module: Awaited<ReturnType<typeof load>>) => {
  const runtime = module.newRuntime()
  runtime.setMaxStackSize(STACK_BYTES)
  runtime.setInterruptHandler(() => job !== undefined && Date.now() > job.deadline)
  const vm = runtime.newContext()
  let next = 1
  const pending = new Map<number, ReturnType<typeof vm.newPromise>>()
  let logged = 0

  const deferred = (send: (id: number) => void): QuickJSHandle => {
    const promise = vm.newPromise()
    const id = next++
    pending.set(id, promise)
    send(id)
    return promise.handle
  }
  const define = (name: string, fn: Parameters<typeof vm.newFunction>[1]) => {
    const handle = vm.newFunction(name, fn)
    vm.setProp(vm.global, name, handle)
    handle.dispose()
  }
  define("__call", (name, args) =>
    deferred((id) => post({ type: "call", id, name: vm.getString(name), args: vm.getString(args) }))
  )
  define("__search", (query) => deferred((id) => post({ type: "search", id, query: vm.getString(query) })))
  define("__log", (text) => {
    const limit = job?.maxOutputBytes ?? 0
    const line = vm.getString(text)
    // The logs count against the output bound too; past it they are dropped, said once.
    if (logged > limit) return
    logged += line.length
    post({ type: "log", text: logged > limit ? "[further logs dropped: maxOutputBytes]" : line })
  })
  define("__done", (ok, a, b, c, nothing) => {
    const limit = job?.maxOutputBytes ?? 0
    if (vm.dump(ok) === true) {
      const value = vm.getString(a)
      if (value.length > limit) {
        finish({
          type: "done",
          ok: false,
          name: "LimitError",
          message: `the result is ${value.length} characters, more than maxOutputBytes (${limit})`,
          limit: "maxOutputBytes"
        })
      } else finish({ type: "done", ok: true, value, text: vm.dump(b) === true })
    } else {
      // QuickJS throws null when it cannot even make the exception: memory ran out.
      if (vm.dump(nothing) === true && nearCap()) return finish(outOfMemory)
      const stack = vm.getString(c)
      finish({ type: "done", ok: false, name: vm.getString(a), message: vm.getString(b), line: lineOf(stack) })
    }
  })
  const prelude = vm.evalCode(PRELUDE, "prelude.js")
  if (prelude.error !== undefined) throw new Error(`the sandbox's prelude failed: ${JSON.stringify(vm.dump(prelude.error))}`)
  prelude.value.dispose()
  warmUp(runtime, vm)
  return { runtime, vm, pending }
}

/**
 * Every path a run takes, taken once with nothing in it: a thread compiles the code it runs on first
 * use (a new isolate shares no compiled code), which made a warm run's start 7 to 12 ms slower.
 */
const warmUp = (runtime: QuickJSRuntime, vm: QuickJSContext) => {
  const install = vm.getProp(vm.global, "__install")
  const none = vm.newString("[]")
  const installed = vm.callFunction(install, vm.undefined, none)
  if (installed.error !== undefined) installed.error.dispose()
  else installed.value.dispose()
  none.dispose()
  install.dispose()
  const promise = vm.newPromise()
  const value = vm.newString("null")
  const waiting = vm.evalCode("(async () => JSON.stringify(JSON.parse('{\"a\":[1]}')))()", "warm-up.js")
  if (waiting.error !== undefined) waiting.error.dispose()
  else waiting.value.dispose()
  promise.resolve(value)
  value.dispose()
  promise.dispose()
  runtime.executePendingJobs()
  vm.dump(vm.undefined)
}

const ready = load((workerData as WorkerData | undefined)?.memoryMb ?? 64).then(setup)
// Unobserved until a run: a failure to get ready is that run's outcome.
ready.catch(() => {})

/** A failure outside the script's own promise (out of memory, interrupted), as the run's outcome (see Sandbox for the limits' names). */
const failed = (error: unknown) => {
  if ((error === null || error === undefined) && nearCap()) return finish(outOfMemory)
  const e = error as { name?: unknown; message?: unknown } | null
  finish({ type: "done", ok: false, name: String(e?.name ?? "Error"), message: String(e?.message ?? error) })
}

const run = async (message: RunMessage) => {
  const { runtime, vm, pending } = await ready
  job = message
  const drain = () => {
    const jobs = runtime.executePendingJobs()
    if (jobs.error !== undefined) {
      const error: unknown = vm.dump(jobs.error)
      jobs.error.dispose()
      failed(error)
    }
  }
  parentPort?.on("message", (m: SettleMessage) => {
    const promise = pending.get(m.id)
    if (promise === undefined || finished) return
    pending.delete(m.id)
    const handle = m.ok ? vm.newString(m.value) : vm.newError({ name: "Error", message: m.value })
    if (m.ok) promise.resolve(handle)
    else promise.reject(handle)
    handle.dispose()
    promise.dispose()
    drain()
  })
  const install = vm.getProp(vm.global, "__install")
  const names = vm.newString(JSON.stringify(message.names))
  const installed = vm.callFunction(install, vm.undefined, names)
  install.dispose()
  names.dispose()
  if (installed.error !== undefined) {
    const error: unknown = vm.dump(installed.error)
    installed.error.dispose()
    return failed(error)
  }
  installed.value.dispose()
  const source = `((__ok, __fail) => (async () => {\n${message.code}\n})().then(__ok, __fail))(__settleValue, __settleError)`
  const started = vm.evalCode(source, "script.js")
  if (started.error !== undefined) {
    const error = vm.dump(started.error) as { name?: string; message?: string; stack?: string }
    started.error.dispose()
    return finish({
      type: "done",
      ok: false,
      name: String(error?.name ?? "Error"),
      message: String(error?.message ?? error),
      line: lineOf(String(error?.stack ?? ""))
    })
  }
  started.value.dispose()
  drain()
}

parentPort?.once("message", (message: RunMessage) => {
  run(message).catch((error: unknown) =>
    parentPort?.postMessage({ type: "done", ok: false, name: "Error", message: String(field(error, "message") ?? error) })
  )
})
