import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Queue, Scope } from "effect"
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import * as Backend from "../../../src/backend/Backend.js"
import { BackendError, MethodNotFound } from "../../../src/protocol/Errors.js"
import {
  eventually,
  filesystemBackend,
  FIXTURE_TOOL_COUNT,
  firstText,
  fixtureBackend,
  isAlive,
  structured
} from "../../support/mcpFixture.js"

describe("Backend session", () => {
  it.live(
    "initializes with the newest protocol, no roots capability, and lists tools",
    () =>
      Effect.gen(function* () {
        const backend = yield* Backend.make(fixtureBackend("fx"))
        expect(backend.protocolVersion).toBe("2025-11-25")
        expect(backend.serverInfo).toEqual({ name: "fx", version: "1.0.0" })
        expect(backend.tools().map((t) => t.name)).toEqual(expect.arrayContaining(["echo", "add", "hang", "crash"]))
        const init = structured(yield* backend.callTool("client_info", {}))
        expect(init.protocolVersion).toBe("2025-11-25")
        expect(init.capabilities).toEqual({})
        expect(init.clientInfo).toMatchObject({ name: "mcp-agentify" })
        yield* backend.ping
      }),
    15_000
  )

  it.live(
    "falls back to an older version when the server rejects the offer",
    () =>
      Effect.gen(function* () {
        const backend = yield* Backend.make(fixtureBackend("old", ["--protocol", "2024-11-05"]))
        expect(backend.protocolVersion).toBe("2024-11-05")
        expect(structured(yield* backend.callTool("client_info", {})).protocolVersion).toBe("2024-11-05")
      }),
    15_000
  )

  it.live(
    "accepts an older supported version the server answers with",
    () =>
      Effect.gen(function* () {
        const backend = yield* Backend.make(fixtureBackend("old", ["--protocol", "2025-03-26", "--protocol-mode", "answer"]))
        expect(backend.protocolVersion).toBe("2025-03-26")
      }),
    15_000
  )

  it.live(
    "fails permanently when no version is common",
    () =>
      Effect.gen(function* () {
        const error = yield* Backend.make(
          fixtureBackend("alien", ["--protocol", "1999-01-01", "--protocol-mode", "answer"])
        ).pipe(Effect.flip)
        expect(error).toBeInstanceOf(BackendError)
        expect(error.reason).toBe("call_failed")
        expect(error.message).toMatch(/^Backend 'alien' failed: no common MCP protocol version/)
        expect(Backend.isPermanentFailure(error)).toBe(true)
      }),
    15_000
  )

  it.live(
    "follows nextCursor through every tools/list page",
    () =>
      Effect.gen(function* () {
        const backend = yield* Backend.make(fixtureBackend("paged", ["--tools", "25", "--page-size", "4"]))
        const names = backend.tools().map((t) => t.name)
        expect(names).toContain("echo")
        expect(names).toContain("tool_0")
        expect(names).toContain("tool_24")
        expect(new Set(names).size).toBe(names.length)
        expect(names.length).toBe(FIXTURE_TOOL_COUNT + 25)
      }),
    15_000
  )

  it.live(
    "passes results through unchanged, isError included",
    () =>
      Effect.gen(function* () {
        const backend = yield* Backend.make(fixtureBackend("fx"))
        expect(yield* backend.callTool("echo", { text: "hi" })).toEqual({ content: [{ type: "text", text: '{"text":"hi"}' }] })
        expect(yield* backend.callTool("add", { a: 2, b: 3 })).toEqual({
          content: [{ type: "text", text: "5" }],
          structuredContent: { sum: 5 }
        })
        expect(yield* backend.callTool("fail", {})).toMatchObject({ isError: true })
      }),
    15_000
  )

  it.live(
    "a JSON-RPC error reply fails with call_failed and the backend's error in detail",
    () =>
      Effect.gen(function* () {
        const backend = yield* Backend.make(fixtureBackend("fx"))
        const error = yield* Effect.flip(backend.request("no/such/method", {}))
        expect(error.reason).toBe("call_failed")
        expect(error.method).toBe("no/such/method")
        expect(error.detail).toMatchObject({ code: -32601 })
        expect(error.message).toBe("Backend 'fx' failed: no/such/method returned error -32601: Method not found: no/such/method")
      }),
    15_000
  )

  it.live(
    "skips banners and broken JSON on stdout",
    () =>
      Effect.gen(function* () {
        const backend = yield* Backend.make(fixtureBackend("noisy", ["--junk-stdout", "--invalid-json"]))
        const sums = yield* Effect.forEach(
          Array.from({ length: 20 }, (_, i) => i),
          (i) => backend.callTool("add", { a: i, b: 1 }).pipe(Effect.map((r) => structured(r).sum)),
          { concurrency: "unbounded" }
        )
        expect(sums).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
      }),
    15_000
  )

  it.live(
    "drains a flood of stderr without blocking the backend",
    () =>
      Effect.gen(function* () {
        const backend = yield* Backend.make(fixtureBackend("flood", ["--stderr-flood"]))
        for (let i = 0; i < 3; i++) expect(firstText(yield* backend.callTool("echo", { i }))).toBe(`{"i":${i}}`)
      }),
    20_000
  )

  it.live(
    "answers the backend's own requests: ping with {}, anything else with -32601",
    () =>
      Effect.gen(function* () {
        const backend = yield* Backend.make(fixtureBackend("fx"))
        const replies = structured(yield* backend.callTool("ping_client", {}))
        expect(replies.ping).toEqual({ result: {} })
        expect(replies.roots.error).toMatchObject({ code: -32601 })
      }),
    15_000
  )

  it.live(
    "with onRequest: declares the capabilities given, answers with the handler's result or error, and a cancelled request stops its handler without a reply",
    () =>
      Effect.gen(function* () {
        const interrupted = yield* Deferred.make<void>()
        const backend = yield* Backend.make(fixtureBackend("fx"), {
          clientCapabilities: { sampling: {} },
          onRequest: (method, params) => {
            if (method === "roots/list") return Effect.succeed({ roots: [{ uri: "file:///work" }], asked: params })
            if (method === "sampling/createMessage") {
              return Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined)))
            }
            return Effect.fail(new MethodNotFound({ message: `no ${method} here`, data: { method } }))
          }
        })
        expect(structured(yield* backend.callTool("client_info", {})).capabilities).toEqual({ sampling: {} })
        const answered = structured(yield* backend.callTool("ask_client", { method: "roots/list", params: { x: 1 } }))
        expect(answered.result).toEqual({ roots: [{ uri: "file:///work" }], asked: { x: 1 } })
        const refused = structured(yield* backend.callTool("ask_client", { method: "tasks/list" }))
        expect(refused.error).toEqual({ code: -32601, message: "no tasks/list here", data: { method: "tasks/list" } })
        const cancelled = structured(
          yield* backend.callTool("ask_client", { method: "sampling/createMessage", cancelAfterMs: 100 })
        )
        expect(cancelled.cancelled).toBe(true)
        yield* Deferred.await(interrupted).pipe(Effect.timeout(5_000))
        // ping still answered by the gateway itself.
        expect(structured(yield* backend.callTool("ping_client", {})).ping).toEqual({ result: {} })
      }),
    15_000
  )

  it.live(
    "relays notifications and re-lists tools on list_changed",
    () =>
      Effect.gen(function* () {
        const notifications = yield* Queue.unbounded<{ method: string; params: any }>()
        const relisted = yield* Deferred.make<ReadonlyArray<string>>()
        const backend = yield* Backend.make(fixtureBackend("fx"), {
          onNotification: (method, params) => Queue.offer(notifications, { method, params }),
          onToolsChanged: (tools) =>
            Deferred.succeed(
              relisted,
              tools.map((t) => t.name)
            )
        })
        yield* backend.callTool("progress", { steps: 2 }, { meta: { progressToken: "tok-1" } })
        yield* backend.callTool("log", { message: "hello there" })
        const seen = yield* Effect.forEach([1, 2, 3], () => Queue.take(notifications)).pipe(Effect.timeout(3_000))
        expect(seen.map((n) => n.method)).toEqual(["notifications/progress", "notifications/progress", "notifications/message"])
        expect(seen[0]!.params).toMatchObject({ progressToken: "tok-1", progress: 1, total: 2 })
        expect(seen[2]!.params).toMatchObject({ data: "hello there" })

        yield* backend.callTool("add_tool", { name: "brand_new" })
        expect(yield* Deferred.await(relisted).pipe(Effect.timeout(3_000))).toContain("brand_new")
        expect(backend.tools().map((t) => t.name)).toContain("brand_new")
      }),
    15_000
  )
})

describe("Backend failures", () => {
  it.live(
    "a timeout fails with reason timeout and sends notifications/cancelled",
    () =>
      Effect.gen(function* () {
        const backend = yield* Backend.make(fixtureBackend("fx"))
        const error = yield* Effect.flip(backend.callTool("hang", {}, { timeoutMs: 200 }))
        expect(error.reason).toBe("timeout")
        expect(error.message).toBe("Backend 'fx' failed: tools/call timed out after 200 ms")
        const cancellations = structured(yield* backend.callTool("cancelled", {})).cancellations
        expect(cancellations).toHaveLength(1)
        expect(cancellations[0]).toMatchObject({ requestId: expect.any(Number), reason: "timed out after 200 ms" })
      }),
    15_000
  )

  it.live(
    "the backend's requestTimeoutMs is the default timeout",
    () =>
      Effect.gen(function* () {
        // Long enough for the handshake on a loaded machine: the same timeout bounds `initialize`.
        const backend = yield* Backend.make(fixtureBackend("fx", [], { requestTimeoutMs: 1_500 }), { requestTimeoutMs: 60_000 })
        const error = yield* Effect.flip(backend.callTool("hang", {}))
        expect(error.summary).toBe("tools/call timed out after 1500 ms")
      }),
    15_000
  )

  it.live(
    "an interrupted call sends notifications/cancelled",
    () =>
      Effect.gen(function* () {
        const backend = yield* Backend.make(fixtureBackend("fx"))
        const fiber = yield* Effect.forkChild(backend.callTool("hang", {}))
        yield* Effect.sleep(100)
        yield* Fiber.interrupt(fiber)
        const cancellations = structured(yield* backend.callTool("cancelled", {})).cancellations
        expect(cancellations).toEqual([
          { requestId: expect.any(Number), reason: "cancelled by the client", of: "tools/call hang" }
        ])
      }),
    15_000
  )

  it.live(
    "a crash fails every in-flight call at once, not at its timeout",
    () =>
      Effect.gen(function* () {
        const backend = yield* Backend.make(fixtureBackend("fx", ["--spawn-child"]), { requestTimeoutMs: 30_000 })
        const hanging = yield* Effect.forkChild(Effect.flip(backend.callTool("hang", {})))
        const started = Date.now()
        const error = yield* Effect.flip(backend.callTool("crash", { ms: 50 }))
        const elapsed = Date.now() - started
        expect(error.reason).toBe("crashed")
        expect(error.message).toBe("Backend 'fx' failed: the process exited with code 1 during tools/call")
        // The grandchild keeps stdout open; the failure must not wait for it, nor for the 30 s timeout.
        expect(elapsed).toBeLessThan(5_000)
        expect((yield* Fiber.join(hanging)).reason).toBe("crashed")
        expect(yield* backend.exited).toMatchObject({ code: 1, description: "exited with code 1" })
        expect(backend.isRunning()).toBe(false)
        // Calls after the exit fail at once too.
        expect((yield* Effect.flip(backend.callTool("echo", {}))).reason).toBe("crashed")
      }),
    15_000
  )

  it.live(
    "a command that does not exist fails permanently with a clear error",
    () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(
          Backend.make(fixtureBackend("ghost", [], { command: "definitely-not-a-command-4711", args: [] }))
        )
        expect(error.message).toBe("Backend 'ghost' failed: command not found: definitely-not-a-command-4711")
        expect(Backend.isPermanentFailure(error)).toBe(true)
        const noDir = yield* Effect.flip(Backend.make(fixtureBackend("nodir", [], { cwd: "/definitely/not/here" })))
        expect(noDir.summary).toBe("working directory not found: /definitely/not/here")
      }),
    15_000
  )

  it.live(
    "an exit during start-up says why, with the backend's stderr",
    () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(Backend.make(fixtureBackend("dies", ["--exit-during-startup"])))
        expect(error.reason).toBe("crashed")
        expect(error.summary).toContain("exited with code 1 during initialize")
        expect(error.summary).toContain("fatal: the fixture was told to fail at startup")
        expect(Backend.isPermanentFailure(error)).toBe(false)
      }),
    15_000
  )
})

describe("Backend shutdown", () => {
  const startIn = (scope: Scope.Scope, flags: ReadonlyArray<string>, killGraceMs: number) =>
    Effect.gen(function* () {
      const backend = yield* Backend.make(fixtureBackend("fx", flags), { killGraceMs }).pipe(Scope.provide(scope))
      const { pid, childPid } = structured(yield* backend.callTool("pid", {}))
      expect(pid).toBe(backend.pid)
      expect(isAlive(pid)).toBe(true)
      if (flags.includes("--spawn-child")) expect(isAlive(childPid)).toBe(true)
      return { backend, pid: pid as number, childPid: childPid as number }
    })

  it.live(
    "closing the scope stops the process and its grandchild",
    () =>
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const { pid, childPid } = yield* startIn(scope, ["--spawn-child"], 5_000)
        const started = Date.now()
        yield* Scope.close(scope, Exit.void)
        // Both went on SIGTERM: no waiting for the 5 s grace.
        expect(Date.now() - started).toBeLessThan(3_000)
        expect(yield* eventually(() => !isAlive(pid) && !isAlive(childPid))).toBe(true)
      }),
    15_000
  )

  it.live(
    "a process group that ignores SIGTERM is killed after the grace period",
    () =>
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const { backend, pid, childPid } = yield* startIn(scope, ["--spawn-child", "--ignore-sigterm"], 300)
        const started = Date.now()
        yield* Scope.close(scope, Exit.void)
        const elapsed = Date.now() - started
        expect(elapsed).toBeGreaterThanOrEqual(250)
        expect(elapsed).toBeLessThan(4_000)
        expect(yield* eventually(() => !isAlive(pid) && !isAlive(childPid))).toBe(true)
        expect(yield* backend.exited).toMatchObject({ description: "stopped" })
      }),
    15_000
  )

  it.live(
    "a grandchild does not outlive a crashed backend",
    () =>
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const { backend, childPid } = yield* startIn(scope, ["--spawn-child"], 1_000)
        yield* Effect.flip(backend.callTool("crash", {}))
        expect(isAlive(childPid)).toBe(true)
        yield* Scope.close(scope, Exit.void)
        expect(yield* eventually(() => !isAlive(childPid))).toBe(true)
      }),
    15_000
  )

  it.live(
    "in-flight calls fail with crashed when the backend is stopped",
    () =>
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const { backend } = yield* startIn(scope, [], 1_000)
        const call = yield* Effect.forkChild(Effect.flip(backend.callTool("hang", {})))
        yield* Effect.sleep(50)
        yield* Scope.close(scope, Exit.void)
        const error = yield* Fiber.join(call)
        expect(error.reason).toBe("crashed")
        expect(error.summary).toBe("the backend was stopped during tools/call")
      }),
    15_000
  )
})

describe("Backend with the real server-filesystem", () => {
  it.live(
    "reads, writes and lists inside its root; outside is an isError result",
    () =>
      Effect.gen(function* () {
        const root = realpathSync(mkdtempSync(path.join(tmpdir(), "agentify-fs-")))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(root, { recursive: true, force: true })))
        writeFileSync(path.join(root, "hello.txt"), "hello from the test\n")

        const backend = yield* Backend.make(filesystemBackend("filesystem", root))
        const names = backend.tools().map((t) => t.name)
        expect(names).toEqual(expect.arrayContaining(["read_text_file", "write_file", "list_directory"]))

        const read = yield* backend.callTool("read_text_file", { path: path.join(root, "hello.txt") })
        expect(firstText(read)).toBe("hello from the test\n")

        const written = yield* backend.callTool("write_file", { path: path.join(root, "new.txt"), content: "fresh" })
        expect((written as { isError?: boolean }).isError).not.toBe(true)
        expect(firstText(yield* backend.callTool("read_text_file", { path: path.join(root, "new.txt") }))).toBe("fresh")

        const listing = firstText(yield* backend.callTool("list_directory", { path: root }))
        expect(listing).toContain("[FILE] hello.txt")
        expect(listing).toContain("[FILE] new.txt")

        const outside = yield* backend.callTool("read_text_file", { path: "/etc/hostname" })
        expect(outside).toMatchObject({ isError: true })
        expect(firstText(outside)).toMatch(/outside allowed directories|Access denied/i)
      }),
    20_000
  )
})

describe("per-backend quirks (startupDelayMs, protocolVersion, a forgotten session, maxInstances)", () => {
  it.live(
    "startupDelayMs waits before the handshake",
    () =>
      Effect.gen(function* () {
        const started = Date.now()
        yield* Backend.make(fixtureBackend("late", [], { startupDelayMs: 400 }))
        expect(Date.now() - started).toBeGreaterThanOrEqual(400)
      }),
    15_000
  )

  it.live(
    "protocolVersion offers only that version, and a server that will not speak it fails for good",
    () =>
      Effect.gen(function* () {
        const pinned = yield* Backend.make(fixtureBackend("pinned", [], { protocolVersion: "2025-03-26" }))
        expect(pinned.protocolVersion).toBe("2025-03-26")
        expect(structured(yield* pinned.callTool("client_info", {})).protocolVersion).toBe("2025-03-26")
        // A server that only speaks 2024-11-05 is not asked in another version.
        const refused = yield* Effect.flip(
          Backend.make(fixtureBackend("stubborn", ["--protocol", "2024-11-05"], { protocolVersion: "2025-06-18" }))
        )
        expect(refused.summary).toMatch(/^no common MCP protocol version \(2025-06-18: /)
        expect(Backend.isPermanentFailure(refused)).toBe(true)
        // Pinned to the stateless era, a session-era server is refused rather than spoken to in another era.
        const modern = yield* Effect.flip(Backend.make(fixtureBackend("old", [], { protocolVersion: "2026-07-28" })))
        expect(modern.summary).toBe("server/discover did not offer 2026-07-28, the protocolVersion it is pinned to")
      }),
    20_000
  )

  it.live(
    "a server that answers 'not initialized' is initialized again, once, and the calls retried",
    () =>
      Effect.gen(function* () {
        const backend = yield* Backend.make(fixtureBackend("forgetful"))
        expect(structured(yield* backend.callTool("pid", {})).initializeCount).toBe(1)
        yield* backend.callTool("forget_session", {})
        // Three calls notice at once: one re-initialization serves them all.
        const echoed = yield* Effect.all(
          [1, 2, 3].map((n) => backend.callTool("echo", { n })),
          { concurrency: "unbounded" }
        )
        expect(echoed.map(firstText)).toEqual(['{"n":1}', '{"n":2}', '{"n":3}'])
        expect(structured(yield* backend.callTool("pid", {})).initializeCount).toBe(2)
      }),
    15_000
  )

  it.live(
    "maxInstances runs a pool: calls go to the least busy process, and one exit ends it",
    () =>
      Effect.gen(function* () {
        const pool = yield* Backend.make(fixtureBackend("pool", [], { maxInstances: 3, requiresStatefulConnection: false }))
        expect(pool.address).toMatch(/^pid \d+, pid \d+, pid \d+$/)
        expect(pool.tools().length).toBe(FIXTURE_TOOL_COUNT)
        // Two slow calls keep two members busy: the next calls all go to the third, idle one.
        const busy = yield* Effect.forkChild(
          Effect.all([pool.callTool("slow", { ms: 3_000 }), pool.callTool("slow", { ms: 3_000 })], {
            concurrency: "unbounded"
          })
        )
        yield* Effect.sleep(200)
        const idle = new Set<number>()
        for (let i = 0; i < 4; i++) idle.add(structured(yield* pool.callTool("pid", {})).pid)
        expect(idle.size).toBe(1)
        yield* Fiber.join(busy)
        // Idle again: three concurrent calls go one to each.
        const spread = yield* Effect.all(
          [1, 2, 3].map(() => pool.callTool("pid", {})),
          { concurrency: "unbounded" }
        )
        expect(new Set(spread.map((result) => structured(result).pid)).size).toBe(3)
        yield* pool.ping
        // One member crashing ends the pool (the supervisor starts a new one).
        yield* Effect.result(pool.callTool("crash", {}))
        const exit = yield* pool.exited
        expect(exit.description).toBe("exited with code 1")
      }),
    30_000
  )
})
