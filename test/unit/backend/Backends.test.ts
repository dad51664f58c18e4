import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Queue, Scope, Stream } from "effect"
import { type BackendConfig, DEFAULT_HEALTH_CHECK, healthCheckOf } from "../../../src/config/Config.js"
import { Backends, type BackendStatus } from "../../../src/backend/Backends.js"
import { BackendRequester, type RequesterService } from "../../../src/backend/Requester.js"
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { until } from "../../support/process.js"
import { tempDir } from "../../support/stdioClient.js"
import { eventually, firstText, FIXTURE_TOOL_COUNT, fixtureBackend, isAlive, structured } from "../../support/mcpFixture.js"

const OPTIONS = { startupTimeoutMs: 10_000, requestTimeoutMs: 10_000 }
/** Fast restarts and a short kill grace keep the tests quick. */
const TEST_LAYER = Backends.layerWith({ killGraceMs: 500, restart: { initialDelayMs: 50, maxDelayMs: 200 } })

/** The backends service, and the layer's internal requester beside it (what the gateway's forwarder holds). */
type Under = Backends["Service"] & { readonly request: RequesterService["request"] }
const underOf = (context: Context.Context<Backends | BackendRequester>): Under => ({
  ...Context.get(context, Backends),
  request: Context.get(context, BackendRequester).request
})

/**
 * Runs `body` with a fresh Backends whose backends all stop when it ends (built `local`: Effect
 * shares built layers between `provide`s otherwise).
 */
const withBackends = <A, E>(body: (backends: Under) => Effect.Effect<A, E, Scope.Scope>, layer = TEST_LAYER) =>
  Effect.flatMap(Effect.context<Backends | BackendRequester>(), (context) => body(underOf(context))).pipe(
    Effect.provide(layer, { local: true })
  )

const stateOf = (backends: Backends["Service"], id: string) =>
  Effect.map(backends.states, (states) => states.find((s) => s.id === id))

/** Polls until backend `id` satisfies `check`, for at most `ms`. */
const waitFor = (backends: Backends["Service"], id: string, check: (s: BackendStatus) => boolean, ms = 8_000) =>
  Effect.promise(() =>
    until(
      `backend ${id} to reach the expected state`,
      () =>
        Effect.runPromise(stateOf(backends, id)).then((status) => (status !== undefined && check(status) ? status : undefined)),
      ms,
      25
    )
  )

/** Subscribes to a stream now and returns a way to take its next element (bounded). */
const subscribe = <A>(stream: Stream.Stream<A>) =>
  Effect.gen(function* () {
    const queue = yield* Queue.unbounded<A>()
    yield* Effect.forkScoped(Stream.runForEach(stream, (a) => Queue.offer(queue, a)))
    // Let the fiber subscribe before anything is published.
    yield* Effect.sleep(20)
    return {
      next: (ms = 8_000) =>
        Queue.take(queue).pipe(Effect.timeoutOrElse({ duration: ms, orElse: () => Effect.fail("nothing emitted") })),
      queue
    }
  })

describe("Backends", () => {
  it.live(
    "starts every enabled backend and lists their tools in config order",
    () =>
      withBackends((backends) =>
        Effect.gen(function* () {
          const configs: Array<BackendConfig> = [
            fixtureBackend("alpha", [], { description: "The first" }),
            fixtureBackend("beta", ["--tools", "2"]),
            fixtureBackend("off", [], { enabled: false })
          ]
          yield* backends.start(configs, OPTIONS)
          const tools = yield* backends.tools
          expect(tools.map((t) => t.backendId)).toEqual(["alpha", "beta"])
          expect(tools[0]!.description).toBe("The first")
          expect(tools[1]!.tools.map((t) => t.name)).toContain("tool_1")
          expect(backends.toolsSync()).toBe(backends.toolsSync())

          const states = yield* backends.states
          expect(states.map((s) => [s.id, s.state])).toEqual([
            ["alpha", "ready"],
            ["beta", "ready"],
            ["off", "stopped"]
          ])
          expect(states[0]).toMatchObject({
            protocolVersion: "2025-11-25",
            restarts: 0,
            toolCount: FIXTURE_TOOL_COUNT,
            pid: expect.any(Number)
          })

          const result = yield* backends.request("beta", "tools/call", { name: "echo", arguments: { x: 1 } })
          expect(firstText(result)).toBe('{"x":1}')

          const unknown = yield* Effect.flip(backends.request("nope", "tools/call", {}))
          expect(unknown.reason).toBe("not_found")
          const disabled = yield* Effect.flip(backends.request("off", "tools/call", {}))
          expect(disabled.reason).toBe("not_ready")
          expect(disabled.message).toBe("Backend 'off' failed: disabled in the configuration")
        })
      ),
    20_000
  )

  it.live(
    "a failing backend does not affect another",
    () =>
      withBackends((backends) =>
        Effect.gen(function* () {
          yield* backends.start(
            [
              fixtureBackend("ghost", [], { command: "definitely-not-a-command-4711", args: [] }),
              fixtureBackend("dies", ["--exit-during-startup"], { restartOnCrash: false }),
              fixtureBackend("good")
            ],
            OPTIONS
          )
          const [ghost, dies, good] = yield* backends.states
          expect(ghost).toMatchObject({ state: "failed", lastError: "command not found: definitely-not-a-command-4711" })
          expect(dies!.state).toBe("failed")
          expect(dies!.lastError).toContain("exited with code 1")
          expect(good!.state).toBe("ready")
          expect((yield* backends.tools).map((t) => t.backendId)).toEqual(["good"])

          const error = yield* Effect.flip(backends.request("ghost", "tools/list", {}))
          expect(error.message).toBe("Backend 'ghost' failed: not running: command not found: definitely-not-a-command-4711")
          expect(firstText(yield* backends.request("good", "tools/call", { name: "add", arguments: { a: 1, b: 1 } }))).toBe("2")
        })
      ),
    20_000
  )

  it.live(
    "restarts a crashed backend; calls work again and toolsChanged tells",
    () =>
      withBackends((backends) =>
        Effect.gen(function* () {
          yield* backends.start([fixtureBackend("phoenix"), fixtureBackend("bystander")], OPTIONS)
          const first = yield* stateOf(backends, "phoenix")
          const changes = yield* subscribe(backends.toolsChanged)

          const started = Date.now()
          const error = yield* Effect.flip(backends.request("phoenix", "tools/call", { name: "crash", arguments: {} }))
          expect(error.reason).toBe("crashed")
          expect(Date.now() - started).toBeLessThan(5_000)

          yield* changes.next() // gone
          const ready = yield* waitFor(backends, "phoenix", (s) => s.state === "ready" && s.restarts === 1)
          expect(ready.pid).not.toBe(first!.pid)
          expect(ready.lastError).toBeUndefined()
          yield* changes.next() // back
          expect((yield* backends.tools).map((t) => t.backendId)).toEqual(["phoenix", "bystander"])
          const result = yield* backends.request("phoenix", "tools/call", { name: "echo", arguments: { again: true } })
          expect(firstText(result)).toBe('{"again":true}')
          expect(yield* stateOf(backends, "bystander")).toMatchObject({ state: "ready", restarts: 0 })
        })
      ),
    20_000
  )

  it.live(
    "gives up after the consecutive-failure cap",
    () =>
      withBackends(
        (backends) =>
          Effect.gen(function* () {
            const statuses = yield* subscribe(backends.statusChanges)
            yield* backends.start([fixtureBackend("flaky", ["--exit-during-startup"])], OPTIONS)
            const failed = yield* waitFor(backends, "flaky", (s) => s.state === "failed")
            expect(failed.restarts).toBe(2)
            expect(failed.lastError).toContain("gave up after 3 consecutive failures")
            const seen = (yield* Queue.clear(statuses.queue)).map((s) => s.state)
            expect(seen).toEqual(["starting", "restarting", "restarting", "failed"])
          }),
        Backends.layerWith({ killGraceMs: 500, restart: { initialDelayMs: 20, maxConsecutiveFailures: 3 } })
      ),
    20_000
  )

  it.live(
    "a backend that was healthy long enough starts counting failures afresh",
    () =>
      withBackends(
        (backends) =>
          Effect.gen(function* () {
            const crash = backends.request("sturdy", "tools/call", { name: "crash", arguments: {} }).pipe(Effect.flip)
            yield* backends.start([fixtureBackend("sturdy")], OPTIONS)
            // Two crashes with a cap of 2 would be fatal, were the backend not healthy in between.
            for (let i = 1; i <= 2; i++) {
              yield* Effect.sleep(250)
              yield* crash
              yield* waitFor(backends, "sturdy", (s) => s.state === "ready" && s.restarts === i)
            }
            // Two quick crashes in a row are not.
            yield* Effect.sleep(250)
            yield* crash
            yield* waitFor(backends, "sturdy", (s) => s.state === "ready" && s.restarts === 3)
            yield* crash
            const failed = yield* waitFor(backends, "sturdy", (s) => s.state === "failed")
            expect(failed.lastError).toBe("exited with code 1 (gave up after 2 consecutive failures)")
          }),
        Backends.layerWith({ killGraceMs: 500, restart: { initialDelayMs: 20, maxConsecutiveFailures: 2, healthyAfterMs: 200 } })
      ),
    20_000
  )

  it.live(
    "a server that dies of server/discover is restarted without it, in the session era",
    () =>
      withBackends((backends) =>
        Effect.gen(function* () {
          yield* backends.start([fixtureBackend("old", ["--crash-on-discover"])], OPTIONS)
          const ready = yield* waitFor(backends, "old", (s) => s.state === "ready")
          expect(ready.restarts).toBe(1)
          expect(ready.protocolVersion).toBe("2025-11-25")
        })
      ),
    20_000
  )

  it.live(
    "a slow backend past startupTimeout becomes ready later and toolsChanged emits",
    () =>
      withBackends((backends) =>
        Effect.gen(function* () {
          const changes = yield* subscribe(backends.toolsChanged)
          yield* Queue.clear(changes.queue)
          const started = Date.now()
          // The timeout leaves a node process on a loaded CI machine room to start (400 ms did not);
          // the slow backend's delay is well past it.
          yield* backends.start([fixtureBackend("quick"), fixtureBackend("slow", ["--startup-delay-ms", "5000"])], {
            startupTimeoutMs: 2_000,
            requestTimeoutMs: 10_000
          })
          const elapsed = Date.now() - started
          expect(elapsed).toBeGreaterThanOrEqual(1_950)
          expect(elapsed).toBeLessThan(4_500)
          expect((yield* stateOf(backends, "slow"))!.state).toBe("starting")
          expect((yield* backends.tools).map((t) => t.backendId)).toEqual(["quick"])
          const notReady = yield* Effect.flip(backends.request("slow", "tools/list", {}))
          expect(notReady.message).toBe("Backend 'slow' failed: still starting")

          yield* Queue.clear(changes.queue)
          yield* changes.next(10_000)
          expect((yield* backends.tools).map((t) => t.backendId)).toEqual(["quick", "slow"])
        })
      ),
    20_000
  )

  it.live(
    "relays backend notifications with the backend id",
    () =>
      withBackends((backends) =>
        Effect.gen(function* () {
          yield* backends.start([fixtureBackend("talker")], OPTIONS)
          const notifications = yield* subscribe(backends.notifications)
          yield* backends.request("talker", "tools/call", {
            name: "progress",
            arguments: { steps: 1 },
            _meta: { progressToken: 42 }
          })
          const n = yield* notifications.next()
          expect(n).toEqual({
            backendId: "talker",
            method: "notifications/progress",
            params: { progressToken: 42, progress: 1, total: 1 }
          })

          // A backend that says its tools changed is listed again, and the change is announced.
          const changes = yield* subscribe(backends.toolsChanged)
          yield* backends.request("talker", "tools/call", { name: "add_tool", arguments: { name: "fresh_tool" } })
          yield* changes.next()
          expect((yield* backends.tools)[0]!.tools.map((t) => t.name)).toContain("fresh_tool")
          expect((yield* stateOf(backends, "talker"))!.toolCount).toBe(FIXTURE_TOOL_COUNT + 1)
        })
      ),
    20_000
  )

  it.live(
    "stopAll during start-up stops a backend that is still starting",
    () =>
      withBackends((backends) =>
        Effect.gen(function* () {
          yield* backends.start([fixtureBackend("sleepy", ["--startup-delay-ms", "5000"])], {
            startupTimeoutMs: 100,
            requestTimeoutMs: 10_000
          })
          expect((yield* stateOf(backends, "sleepy"))!.state).toBe("starting")
          const started = Date.now()
          yield* backends.stopAll
          expect(Date.now() - started).toBeLessThan(1_500)
          expect((yield* stateOf(backends, "sleepy"))!.state).toBe("stopped")
        })
      ),
    20_000
  )

  it.live(
    "stopAll and closing the layer stop every process, grandchildren included",
    () =>
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(TEST_LAYER, scope)
        const backends = underOf(context)
        yield* backends.start([fixtureBackend("one", ["--spawn-child"]), fixtureBackend("two", ["--ignore-sigterm"])], OPTIONS)
        const one = structured(yield* backends.request("one", "tools/call", { name: "pid", arguments: {} }))
        const two = structured(yield* backends.request("two", "tools/call", { name: "pid", arguments: {} }))
        const pids = [one.pid, one.childPid, two.pid] as Array<number>
        expect(pids.every(isAlive)).toBe(true)

        // A call in flight fails when its backend is stopped.
        const hanging = yield* Effect.forkChild(
          Effect.flip(backends.request("one", "tools/call", { name: "hang", arguments: {} }))
        )
        yield* Effect.sleep(50)
        yield* backends.stopAll
        expect((yield* Fiber.join(hanging)).reason).toBe("crashed")
        expect((yield* backends.states).map((s) => s.state)).toEqual(["stopped", "stopped"])
        expect(yield* backends.tools).toEqual([])
        expect(yield* eventually(() => !pids.some(isAlive))).toBe(true)

        // Started again, then the layer's scope closes: everything stops too, in parallel (one 500 ms grace,
        // where three backends that ignore SIGTERM stopped one after another would take at least 1.5 s).
        yield* backends.start(
          [
            fixtureBackend("three", ["--spawn-child"]),
            fixtureBackend("four", ["--ignore-sigterm"]),
            fixtureBackend("five", ["--ignore-sigterm"]),
            fixtureBackend("six", ["--ignore-sigterm"])
          ],
          OPTIONS
        )
        const three = structured(yield* backends.request("three", "tools/call", { name: "pid", arguments: {} }))
        const others = (yield* backends.states).map((s) => s.pid!)
        const closing = Date.now()
        yield* Scope.close(scope, Exit.void)
        expect(Date.now() - closing).toBeLessThan(1_400)
        expect(yield* eventually(() => ![three.pid, three.childPid, ...others].some(isAlive))).toBe(true)
      }),
    20_000
  )

  it.live(
    "applies a new set as a difference: added start, removed stop (calls in flight: backend removed), changed restart, the rest keep their process",
    () =>
      withBackends((backends) =>
        Effect.gen(function* () {
          const same = fixtureBackend("same")
          const exposed = fixtureBackend("exposed")
          const changed = fixtureBackend("changed")
          const removed = fixtureBackend("removed")
          yield* backends.start([same, exposed, changed, removed], OPTIONS)
          const before = new Map((yield* backends.states).map((s) => [s.id, s.pid]))
          const inFlight = yield* Effect.forkChild(
            Effect.flip(backends.request("removed", "tools/call", { name: "slow", arguments: { ms: 10_000 } }))
          )
          yield* Effect.sleep(100)
          const applied = yield* backends.apply([
            same,
            { ...exposed, denyTools: ["echo"], description: "now described" },
            { ...changed, env: { CHANGED: "1" } },
            fixtureBackend("added")
          ])
          expect(applied).toEqual({ added: ["added"], removed: ["removed"], restarted: ["changed"], reexposed: ["exposed"] })
          const error = yield* Fiber.join(inFlight)
          expect(error.summary).toBe("backend removed during tools/call")
          yield* waitFor(backends, "added", (s) => s.state === "ready")
          const after = yield* waitFor(backends, "changed", (s) => s.state === "ready")
          expect(after.pid).not.toBe(before.get("changed"))
          expect(yield* eventually(() => !isAlive(before.get("removed")!))).toBe(true)
          const states = new Map((yield* backends.states).map((s) => [s.id, s]))
          expect([...states.keys()]).toEqual(["same", "exposed", "changed", "added"])
          expect(states.get("same")!.pid).toBe(before.get("same"))
          expect(states.get("exposed")!.pid).toBe(before.get("exposed"))
          // the re-exposed backend's tools carry its new settings
          expect((yield* backends.tools).find((b) => b.backendId === "exposed")?.exposure?.denyTools).toEqual(["echo"])
          const gone = yield* Effect.flip(backends.request("removed", "tools/call", { name: "echo", arguments: {} }))
          expect(gone.reason).toBe("not_found")
        })
      ),
    30_000
  )

  it.live("applies nothing before the first start, and nothing after stopAll", () =>
    withBackends((backends) =>
      Effect.gen(function* () {
        expect(yield* backends.apply([fixtureBackend("early")])).toEqual({ added: [], removed: [], restarted: [], reexposed: [] })
        expect(yield* backends.states).toEqual([])
        yield* backends.start([fixtureBackend("one")], OPTIONS)
        yield* backends.stopAll
        expect(yield* backends.apply([fixtureBackend("one"), fixtureBackend("two")])).toEqual({
          added: [],
          removed: [],
          restarted: [],
          reexposed: []
        })
        expect((yield* backends.states).every((s) => s.state !== "ready" && s.state !== "starting")).toBe(true)
      })
    )
  )
})

describe("the two idle states", () => {
  it.live(
    'a remembered backend not started yet is idle "remembered"; one stopped after idleMs is idle "stopped", with when',
    () =>
      Effect.gen(function* () {
        const stateDir = tempDir("agentify-idle-")
        const onUse = { ...OPTIONS, onUse: { stateDir, start: "onUse" as const, idleMs: 2_000 } }
        const configs = [fixtureBackend("napper")]
        // A first start meets it (started at once) and remembers its tools.
        yield* Effect.scoped(
          withBackends((backends) =>
            Effect.gen(function* () {
              yield* backends.start(configs, onUse)
              const ready = yield* waitFor(backends, "napper", (s) => s.state === "ready")
              expect(ready.idle).toBeUndefined()
              yield* Effect.promise(() =>
                until(
                  "its tools remembered",
                  () => existsSync(join(stateDir, "known")) && readdirSync(join(stateDir, "known")).length === 1
                )
              )
            })
          )
        )
        // The next start: remembered, not started.
        yield* withBackends((backends) =>
          Effect.gen(function* () {
            yield* backends.start(configs, onUse)
            expect(yield* stateOf(backends, "napper")).toMatchObject({ state: "idle", idle: "remembered" })
            expect((yield* stateOf(backends, "napper"))?.idleSince).toBeUndefined()
            const before = Date.now()
            yield* backends.request("napper", "tools/call", { name: "echo", arguments: {} })
            expect((yield* stateOf(backends, "napper"))?.idle).toBeUndefined()
            // Unused for idleMs: stopped, and said so apart from never started.
            const stopped = yield* waitFor(backends, "napper", (s) => s.state === "idle")
            expect(stopped.idle).toBe("stopped")
            expect(stopped.idleSince).toBeGreaterThanOrEqual(before)
          })
        )
      }),
    30_000
  )
})

describe("heartbeats (healthCheck)", () => {
  const FAST = { intervalMs: 300, timeoutMs: 300, failures: 2 }
  const pidOf = (backends: Under, id: string) =>
    Effect.map(backends.request(id, "tools/call", { name: "pid", arguments: {} }), (r) => structured(r).pid as number)

  it.live("a backend alive but no longer answering (frozen, pipes open) is restarted after `failures` silent pings", () =>
    withBackends((backends) =>
      Effect.gen(function* () {
        yield* backends.start([fixtureBackend("fx", [], { healthCheck: FAST })], OPTIONS)
        const before = yield* pidOf(backends, "fx")
        yield* backends.request("fx", "tools/call", { name: "freeze", arguments: {} })
        const frozenAt = Date.now()
        yield* waitFor(backends, "fx", (s) => s.state === "ready" && s.pid !== before && s.restarts === 1, 10_000)
        const after = yield* pidOf(backends, "fx")
        expect(after).not.toBe(before)
        expect(isAlive(before)).toBe(false)
        // Two intervals of silence, two unanswered pings, the restart: a second or two, not a minute.
        expect(Date.now() - frozenAt).toBeLessThan(8_000)
        const status = yield* stateOf(backends, "fx")
        expect(status?.lastError).toBeUndefined()
      })
    )
  )

  it.live("a server without ping (-32601) counts as alive; a busy backend is never pinged, a quiet one is", () =>
    withBackends((backends) =>
      Effect.gen(function* () {
        yield* backends.start(
          [fixtureBackend("noping", ["--no-ping"], { healthCheck: FAST }), fixtureBackend("busy", [], { healthCheck: FAST })],
          OPTIONS
        )
        const noping = yield* pidOf(backends, "noping")
        // Busy: a call every 100 ms for two seconds, so it is never quiet for an interval.
        for (let i = 0; i < 20; i++) {
          yield* backends.request("busy", "tools/call", { name: "echo", arguments: { i } })
          yield* Effect.sleep(100)
        }
        const pingsWhileBusy = yield* backends.request("busy", "tools/call", { name: "pings", arguments: {} })
        expect(structured(pingsWhileBusy).pings).toBe(0)
        // Quiet for a while: now it is asked.
        yield* Effect.sleep(1_200)
        const pingsWhenQuiet = yield* backends.request("busy", "tools/call", { name: "pings", arguments: {} })
        expect(structured(pingsWhenQuiet).pings).toBeGreaterThan(0)
        // The server without ping was asked and answered -32601: still the same process.
        const asked = yield* backends.request("noping", "tools/call", { name: "pings", arguments: {} })
        expect(structured(asked).pings).toBeGreaterThan(0)
        expect(yield* pidOf(backends, "noping")).toBe(noping)
        expect((yield* stateOf(backends, "noping"))?.restarts).toBe(0)
      })
    )
  )

  it("healthCheck: defaults, a partial setting over them, false for none", () => {
    expect(healthCheckOf({})).toEqual(DEFAULT_HEALTH_CHECK)
    expect(healthCheckOf({ healthCheck: { intervalMs: 1_000 } })).toEqual({ ...DEFAULT_HEALTH_CHECK, intervalMs: 1_000 })
    expect(healthCheckOf({ healthCheck: false })).toBeUndefined()
  })
})
