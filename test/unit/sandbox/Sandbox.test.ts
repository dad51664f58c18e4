/**
 * The sandbox from the gateway's side, with a host in process: how many of a script's calls run at
 * once (`maxConcurrentCalls`), and that calls made one after the other stay so. Runs the built
 * worker (dist/), as the gateway does.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type * as SandboxModule from "../../../src/sandbox/Sandbox.js"

// The built module: its worker thread is the bundle's (a thread cannot run the TypeScript sources).
const Sandbox: typeof SandboxModule = await import(new URL("../../../dist/sandbox/Sandbox.js", import.meta.url).href)

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
