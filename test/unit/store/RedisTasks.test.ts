/**
 * Finished tasks in a team's store (a real redis-server), bounded per owner in records and bytes:
 * one session's flood of tasks keeps at most its share, the newest kept; a record too large is kept
 * without its result, saying so.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Layer } from "effect"
import * as RedisDriver from "../../../src/store/redis/Driver.js"
import * as Store from "../../../src/store/Store.js"
import { MAX_RECORDS_PER_OWNER, TaskRecords } from "../../../src/store/TaskRecords.js"
import { REDIS_SERVER, startRedis } from "../../support/redis.js"
import { spawnSync } from "node:child_process"

const SKIP = REDIS_SERVER === undefined && process.env.CI !== "true"

const reply = (id: string, text = "done") => ({ taskId: id, status: "completed", result: { content: [{ type: "text", text }] } })

describe.skipIf(SKIP)("finished tasks in the team's store", () => {
  it.live(
    "keep at most MAX_RECORDS_PER_OWNER per owner, and MAX_BYTES_PER_OWNER of them; the oldest go",
    () =>
      Effect.gen(function* () {
        const redis = yield* Effect.promise(() => startRedis())
        yield* Effect.addFinalizer(() => Effect.promise(() => redis.close()))
        const records = yield* Effect.provide(
          TaskRecords,
          yield* Layer.build(Store.layerOn(RedisDriver.layer({ url: redis.url }, "replica-a")))
        )
        const store = { saveTask: records.save, taskRecord: records.get }
        const cli = (...args: Array<string>) =>
          spawnSync("redis-cli", ["-p", String(redis.port), ...args], { encoding: "utf8" }).stdout.trim()
        for (let i = 0; i < 130; i++) {
          yield* store.saveTask(`t${i}`, { owner: "session:mallory", reply: reply(`t${i}`) }, 60_000)
        }
        yield* store.saveTask("other", { owner: "session:alice", reply: reply("other") }, 60_000)
        expect(cli("--scan", "--pattern", "mcp-agentify:task:t*").split("\n")).toHaveLength(MAX_RECORDS_PER_OWNER)
        expect(yield* store.taskRecord("t0")).toBe("none")
        expect(yield* store.taskRecord("t129")).toMatchObject({ owner: "session:mallory" })
        expect(yield* store.taskRecord("other")).toMatchObject({ owner: "session:alice" })

        // 7 MiB results, 64 MiB an owner: the newest nine stay.
        const big = "y".repeat(7 * 1024 * 1024)
        for (let i = 0; i < 12; i++) {
          yield* store.saveTask(`b${i}`, { owner: "session:big", reply: reply(`b${i}`, big) }, 60_000)
        }
        const kept = []
        for (let i = 0; i < 12; i++) kept.push((yield* store.taskRecord(`b${i}`)) !== "none")
        expect(kept).toEqual([false, false, false, true, true, true, true, true, true, true, true, true])

        // Over MAX_RECORD_BYTES: kept without its result, saying why.
        yield* store.saveTask("huge", { owner: "session:huge", reply: reply("huge", "z".repeat(9 * 1024 * 1024)) }, 60_000)
        const huge = yield* store.taskRecord("huge")
        expect(huge).toMatchObject({
          reply: { status: "failed", error: { message: expect.stringContaining("more than the team's store keeps") } }
        })
        expect(JSON.stringify(huge).length).toBeLessThan(1_000)
      }).pipe(Effect.scoped),
    60_000
  )
})
