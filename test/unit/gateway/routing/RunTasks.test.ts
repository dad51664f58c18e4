/**
 * The gateway's own tasks bounded: one owner cannot keep more than its share of runs, and finished
 * results are bounded in bytes per owner (the oldest finished go first, never a running one).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as RunTasks from "../../../../src/gateway/routing/RunTasks.js"
import { toRpcError } from "../../../../src/protocol/Errors.js"

const ids = (started: ReadonlyArray<unknown>) => started.map((s) => (s as { taskId: string }).taskId)

describe("the gateway's own tasks, bounded", () => {
  it.effect("an owner keeps at most its share: its oldest finished run goes; all running, the next start is refused", () =>
    Effect.gen(function* () {
      const tasks = yield* RunTasks.make(() => "")
      const mallory = { key: "session:mallory" }
      const started = yield* Effect.forEach(Array.from({ length: RunTasks.MAX_RUNS_PER_OWNER }), () =>
        tasks.start(mallory, () => Effect.succeed({ content: [] }), "extension")
      )
      // Each finished at once: room is made by forgetting the oldest.
      yield* Effect.yieldNow
      yield* tasks.start(mallory, () => Effect.succeed({ content: [] }), "extension")
      const first = yield* Effect.result(tasks.get(mallory, ids(started)[0]!))
      expect(first._tag === "Failure" && toRpcError(first.failure).message).toMatch(/^Unknown task/)
      expect((yield* tasks.get(mallory, ids(started)[1]!)) as { status: string }).toMatchObject({ status: "completed" })
      // Another owner is untouched by mallory's flood; a flood of runs that never end is refused.
      const busy = { key: "session:busy" }
      yield* Effect.forEach(Array.from({ length: RunTasks.MAX_RUNS_PER_OWNER }), () =>
        tasks.start(busy, () => Effect.never, "extension")
      )
      const refused = yield* Effect.result(tasks.start(busy, () => Effect.never, "extension"))
      expect(refused._tag === "Failure" && refused.failure.message).toMatch(/of your tasks are running already/)
      yield* tasks.start({ key: "session:alice" }, () => Effect.succeed({ content: [] }), "extension")
    })
  )

  it.effect("finished results are bounded in bytes per owner: the oldest go, the newest stays", () =>
    Effect.gen(function* () {
      const tasks = yield* RunTasks.make(() => "")
      const owner = { key: "session:big" }
      const big = "x".repeat(20 * 1024 * 1024)
      const started = []
      for (let i = 0; i < 5; i++) {
        started.push(yield* tasks.start(owner, () => Effect.succeed({ content: [{ type: "text", text: big }] }), "extension"))
        yield* Effect.yieldNow
      }
      const kept = []
      for (const id of ids(started)) kept.push((yield* Effect.result(tasks.get(owner, id)))._tag === "Success")
      // 20 MiB each, 64 MiB per owner: the three newest.
      expect(kept).toEqual([false, false, true, true, true])
    })
  )
})
