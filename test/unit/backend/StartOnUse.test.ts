/**
 * Starts on use, bounded (issue 64): every start takes a start slot, those a request waits for
 * included, so that many first calls at once do not start every backend together; and a start on
 * use that hangs (at its `initialize` or its first listing) is given up at `startupTimeoutMs`: the
 * start fails, its process is stopped, and the backend backs off as after any failed start. A
 * start that a request waits for goes before the others.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { BackendConfig } from "../../../src/config/Config.js"
import { Backends, type StartOptions } from "../../../src/backend/Backends.js"
import * as Known from "../../../src/backend/Known.js"
import { BackendRequester } from "../../../src/backend/Requester.js"
import { descendants, until } from "../../support/process.js"
import { fixtureBackend } from "../../support/mcpFixture.js"

const ECHO = { name: "echo", description: "Echoes", inputSchema: { type: "object" } }

/** Backends whose tools are remembered in a fresh state directory: each waits for its first use. */
const remembered = (configs: ReadonlyArray<BackendConfig>, startupTimeoutMs: number) =>
  Effect.sync(() => {
    const stateDir = mkdtempSync(join(tmpdir(), "agentify-onuse-bounds-"))
    for (const config of configs) {
      Effect.runSync(Known.write(stateDir, config, { tools: [ECHO], capabilities: { tools: {} }, lists: {} }))
    }
    const options: StartOptions = {
      startupTimeoutMs,
      requestTimeoutMs: 60_000,
      onUse: { stateDir, start: "onUse", idleMs: 600_000 }
    }
    return options
  })

/** A Backends with `startSlots` slots and quick restarts, for the body's scope. */
const withBackends = <A, E>(
  startSlots: number,
  body: (backends: Backends["Service"], request: BackendRequester["Service"]["request"]) => Effect.Effect<A, E>
) =>
  Effect.flatMap(Effect.context<Backends | BackendRequester>(), (context) =>
    body(Context.get(context, Backends), Context.get(context, BackendRequester).request)
  ).pipe(
    Effect.provide(Backends.layerWith({ killGraceMs: 300, startSlots, restart: { initialDelayMs: 5_000, maxDelayMs: 5_000 } }))
  )

const stateOf = (backends: Backends["Service"], id: string) =>
  Effect.map(backends.states, (states) => states.find((s) => s.id === id))

describe("starts on use", () => {
  it.live(
    "take the start slots: with one slot, two first calls at once never have two starts running",
    () =>
      withBackends(1, (backends, request) =>
        Effect.gen(function* () {
          const configs = ["alpha", "beta"].map((id) => fixtureBackend(id, ["--startup-delay-ms", "1500"]))
          yield* backends.start(configs, yield* remembered(configs, 30_000))
          expect((yield* backends.states).map((s) => s.state)).toEqual(["idle", "idle"])
          const before = new Set(descendants(process.pid))
          const started = () => descendants(process.pid).filter((pid) => !before.has(pid))
          const calls = yield* Effect.forkChild(
            Effect.all([request("alpha", "tools/call", { name: "echo" }), request("beta", "tools/call", { name: "echo" })], {
              concurrency: "unbounded"
            })
          )
          // Watched until both are answered: never two fixtures starting (or running) at once
          // before the first is ready, as each start holds the one slot until it is.
          let most = 0
          yield* Effect.promise(() =>
            until(
              "both calls answered",
              async () => {
                const alpha = await Effect.runPromise(stateOf(backends, "alpha"))
                const beta = await Effect.runPromise(stateOf(backends, "beta"))
                if (alpha?.state !== "ready" && beta?.state !== "ready") most = Math.max(most, started().length)
                return alpha?.state === "ready" && beta?.state === "ready"
              },
              30_000,
              25
            )
          )
          yield* Fiber.join(calls)
          expect(most).toBe(1)
        })
      ),
    60_000
  )

  it.live(
    "a start at `start` that a request waits for goes before those nobody waits for",
    () =>
      withBackends(1, (backends, request) =>
        Effect.gen(function* () {
          const slow = ["--startup-delay-ms", "1500"]
          const configs = ["first", "second", "wanted"].map((id) => fixtureBackend(id, slow))
          yield* backends.begin(configs, { startupTimeoutMs: 60_000, requestTimeoutMs: 60_000 })
          // One slot: "first" starts, "second" and "wanted" wait in that order; a call wants "wanted".
          yield* request("wanted", "tools/call", { name: "echo", arguments: { text: "x" } })
          expect((yield* stateOf(backends, "wanted"))?.state).toBe("ready")
          // "second" starts after it (its own start takes 1.5 s): not ready yet.
          expect((yield* stateOf(backends, "second"))?.state).toBe("starting")
        })
      ),
    60_000
  )

  for (const [where, args] of [
    ["at its initialize", ["--startup-delay-ms", "600000"]],
    ["at its first listing", ["--list-delay-ms", "600000"]]
  ] as const) {
    it.live(
      `one that hangs ${where} is given up at startupTimeoutMs: the call fails, its process is stopped, it backs off`,
      () =>
        withBackends(2, (backends, request) =>
          Effect.gen(function* () {
            const configs = [fixtureBackend("stuck", [...args])]
            yield* backends.start(configs, yield* remembered(configs, 1_000))
            const before = new Set(descendants(process.pid))
            const call = yield* Effect.forkChild(Effect.flip(request("stuck", "tools/call", { name: "echo" })))
            const pid = yield* Effect.promise(() =>
              until("its process", () => descendants(process.pid).find((p) => !before.has(p)), 20_000)
            )
            const failed = yield* Fiber.join(call)
            expect(failed._tag).toBe("BackendError")
            // Given up: backing off (quick restarts are 5 s away), its process gone.
            const status = yield* Effect.promise(() =>
              until(
                "the start to be given up",
                () => Effect.runPromise(stateOf(backends, "stuck")).then((s) => (s?.state === "restarting" ? s : undefined)),
                20_000
              )
            )
            expect(status.lastError).toContain("did not finish starting within startupTimeoutMs (1000 ms)")
            yield* Effect.promise(() => until("its process to be stopped", () => !descendants(process.pid).includes(pid), 20_000))
          })
        ),
      60_000
    )
  }
})
