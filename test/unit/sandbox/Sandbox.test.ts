/**
 * The sandbox from the gateway's side, with a host in process: how many of a script's calls run at
 * once (`maxConcurrentCalls`), and that calls made one after the other stay so. Runs the built
 * worker (dist/), as the gateway does.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import type * as SandboxModule from "../../../src/sandbox/Sandbox.js"
import type * as SlotsModule from "../../../src/sandbox/Slots.js"

// The built module: its worker thread is the bundle's (a thread cannot run the TypeScript sources).
const Sandbox: typeof SandboxModule = await import(new URL("../../../dist/sandbox/Sandbox.js", import.meta.url).href)
const Slots: typeof SlotsModule = await import(new URL("../../../dist/sandbox/Slots.js", import.meta.url).href)

/** A host whose every call takes a while, counting the most that were in flight together. */
const countingHost = () => {
  let inFlight = 0
  let most = 0
  const host: SandboxModule.Host = {
    call: (name) =>
      Effect.gen(function* () {
        most = Math.max(most, ++inFlight)
        yield* Effect.sleep(50)
        inFlight--
        return { ok: true as const, value: name, record: { tool: name, ms: 50, isError: false } }
      }),
    search: () => ""
  }
  return { host, most: () => most }
}

const run = (code: string, maxConcurrentCalls: number, host: SandboxModule.Host) =>
  Effect.runPromise(Sandbox.run(code, [], { ...Sandbox.DEFAULT_LIMITS, maxConcurrentCalls }, host))

describe("a script's calls", () => {
  it("run together up to maxConcurrentCalls, and no further", async () => {
    const four = countingHost()
    const together = await run("await Promise.all([1, 2, 3, 4].map(() => callTool('t', {}))); return 1", 8, four.host)
    expect(together).toMatchObject({ ok: true, value: 1 })
    expect(together.calls).toHaveLength(4)
    expect(four.most()).toBe(4)

    const twenty = countingHost()
    await run("await Promise.all(Array.from({ length: 20 }, () => callTool('t', {}))); return 1", 8, twenty.host)
    expect(twenty.most()).toBe(8)

    const bounded = countingHost()
    await run("await Promise.all([1, 2, 3, 4].map(() => callTool('t', {}))); return 1", 2, bounded.host)
    expect(bounded.most()).toBe(2)
  })

  it("made one after the other, run one at a time, and each resolves to its value", async () => {
    const sequential = countingHost()
    const outcome = await run(
      "const got = []; for (let i = 0; i < 5; i++) got.push(await callTool('t' + i, {})); return got",
      8,
      sequential.host
    )
    expect(outcome).toMatchObject({ ok: true, value: ["t0", "t1", "t2", "t3", "t4"] })
    expect(sequential.most()).toBe(1)
  })
})

/** The OS threads of this process, as Linux counts them. */
const osThreads = () => Number(/^Threads:\s+(\d+)/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? NaN)

/** Waits for `check` to hold, polling; fails naming what it last saw. */
const until = async (check: () => boolean, what: () => string, ms = 10_000) => {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`still ${what()} after ${ms} ms`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

const quietHost: SandboxModule.Host = {
  call: (name) => Effect.succeed({ ok: true as const, value: name, record: { tool: name, ms: 0, isError: false } }),
  search: () => ""
}

describe("what a script returns", () => {
  it("a value JSON cannot hold is a TypeError at once; the host is never handed an unreadable value", async () => {
    const errors: Array<unknown> = []
    const onError = (e: unknown) => errors.push(e)
    process.on("uncaughtException", onError)
    try {
      for (const code of ["return () => 1", 'return Symbol("s")', "return { toJSON() { return undefined } }", "return 1n"]) {
        const began = Date.now()
        const outcome = await Effect.runPromise(
          Sandbox.run(code, [], { ...Sandbox.DEFAULT_LIMITS, timeoutMs: 20_000 }, quietHost)
        )
        expect(outcome).toMatchObject({ ok: false, name: "TypeError" })
        expect(outcome.ok ? undefined : outcome.limit).toBeUndefined()
        expect(Date.now() - began).toBeLessThan(20_000)
      }
    } finally {
      process.off("uncaughtException", onError)
    }
    expect(errors).toEqual([])
  })

  it("a thrown value that cannot be shown is still an error, not a wait for the deadline", async () => {
    const outcome = await Effect.runPromise(
      Sandbox.run(
        "throw { get message() { throw 1 }, get name() { throw 2 } }",
        [],
        { ...Sandbox.DEFAULT_LIMITS, timeoutMs: 20_000 },
        quietHost
      )
    )
    expect(outcome).toMatchObject({ ok: false, message: "the script threw a value that cannot be shown" })
  })
})

/** A host whose calls wait until `release`; `calling()` counts the calls that arrived. */
const gatedHost = () => {
  let release: () => void = () => {}
  const gate = new Promise<void>((r) => (release = r))
  let calls = 0
  const host: SandboxModule.Host = {
    call: (name) =>
      Effect.promise(async () => {
        calls++
        await gate
        return { ok: true as const, value: name, record: { tool: name, ms: 0, isError: false } }
      }),
    search: () => ""
  }
  return { host, release: () => release(), calling: () => calls }
}

describe("runs as a whole", () => {
  it("past maxRuns running and maxQueuedRuns waiting, a run is refused at once naming both settings", async () => {
    const limits = { ...Sandbox.DEFAULT_LIMITS, timeoutMs: 20_000, maxRuns: 2, maxQueuedRuns: 1 }
    const { host, release, calling } = gatedHost()
    const runs = [1, 2, 3].map(() => Effect.runPromise(Sandbox.run("return await callTool('t', {})", [], limits, host)))
    // Two are running (each waits in its call), one waits for a turn.
    await until(
      () => calling() === 2,
      () => `${calling()} calling`
    )
    const refused = await Effect.runPromise(Sandbox.run("return 1", [], limits, host))
    expect(refused).toMatchObject({ ok: false, limit: "maxRuns" })
    expect(refused.ok ? "" : refused.message).toMatch(/codeMode\.maxRuns.*codeMode\.maxQueuedRuns/)
    release()
    const outcomes = await Promise.all(runs)
    expect(outcomes.map((o) => o.ok)).toEqual([true, true, true])
    expect(calling()).toBe(3)
    // Once they ended, a run is admitted again.
    expect(await Effect.runPromise(Sandbox.run("return 2", [], limits, host))).toMatchObject({ ok: true, value: 2 })
  })

  it("each gateway has turns of its own: one whose turns are all taken does not hold back another's runs", async () => {
    const limits = { ...Sandbox.DEFAULT_LIMITS, timeoutMs: 20_000, maxRuns: 1, maxQueuedRuns: 0 }
    const { host, release, calling } = gatedHost()
    // Two gateways' turns, as each gateway's layer makes them.
    const a = Slots.make()
    const b = Slots.make()
    const inA = <A>(effect: Effect.Effect<A>) => Effect.runPromise(Effect.provideService(effect, Slots.RunSlots, a))
    const inB = <A>(effect: Effect.Effect<A>) => Effect.runPromise(Effect.provideService(effect, Slots.RunSlots, b))
    const held = inA(Sandbox.run("return await callTool('t', {})", [], limits, host))
    await until(
      () => calling() === 1,
      () => `${calling()} calling`
    )
    // A's one turn is taken and none may wait: A refuses, B runs.
    const refused = await inA(Sandbox.run("return 1", [], limits, host))
    expect(refused).toMatchObject({ ok: false, limit: "maxRuns" })
    expect(await inB(Sandbox.run("return 2", [], limits, host))).toMatchObject({ ok: true, value: 2 })
    release()
    expect((await held).ok).toBe(true)
  })

  it("every run's thread ends with it, timed out or not: at most the one spare stays", async () => {
    const before = osThreads()
    const limits = { ...Sandbox.DEFAULT_LIMITS, timeoutMs: 500 }
    await Promise.all([
      ...Array.from({ length: 6 }, () => Effect.runPromise(Sandbox.run("return 1", [], limits, quietHost))),
      ...Array.from({ length: 3 }, () => Effect.runPromise(Sandbox.run("while (true) {}", [], limits, quietHost)))
    ])
    await until(
      () => Sandbox.liveThreads() <= 1,
      () => `${Sandbox.liveThreads()} threads of the sandbox alive`
    )
    // The OS agrees: no more threads than before but the spare's.
    await until(
      () => osThreads() <= before + 1,
      () => `${osThreads()} threads against ${before} before`
    )
  })
})

describe("the calls a run lists", () => {
  it("past maxCalls, a call never reaches the host, and the calls in flight are stopped", async () => {
    // Calls that never finish on their own: the run's end stops them.
    const started: Array<string> = []
    const slow: SandboxModule.Host = {
      call: (name) =>
        Effect.gen(function* () {
          started.push(name)
          yield* Effect.never
          return { ok: true as const, value: name, record: { tool: name, ms: 0, isError: false } }
        }),
      search: () => ""
    }
    // Far past what maxCalls needs: a busy machine does not end the run at timeoutMs first.
    const limits = { ...Sandbox.DEFAULT_LIMITS, timeoutMs: 120_000, maxCalls: 3 }
    const outcome = await Effect.runPromise(
      Sandbox.run("await Promise.all([1, 2, 3, 4].map((i) => callTool('t' + i, {})))", [], limits, slow)
    )
    expect(outcome).toMatchObject({ ok: false, limit: "maxCalls" })
    // Three reached the host and were stopped by the run's end (Code lists them: see the code-mode
    // tests); the fourth was refused before.
    expect(started).toEqual(["t1", "t2", "t3"])
  })
})
