import { describe, expect, it } from "@effect/vitest"
import { Effect, PubSub, Queue } from "effect"
import * as TestClock from "effect/testing/TestClock"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Announcement, SharedFile } from "../../../src/store/Contract.js"
import type { TeamFilesService } from "../../../src/store/TeamFiles.js"
import * as Mirror from "../../../src/store/Mirror.js"
import * as WrittenFiles from "../../../src/store/WrittenFiles.js"

/** A store in memory, as the contract has it: the other gateways' announcements sent by the test. */
const memory = Effect.gen(function* () {
  const files = new Map<string, SharedFile>()
  const hub = yield* PubSub.unbounded<Announcement>()
  const state: TeamFilesService = {
    files: () => Effect.sync(() => new Map(files)),
    file: (_kind, name) => Effect.sync(() => files.get(name) ?? "none"),
    put: (_kind, name, file) => Effect.sync(() => (files.set(name, file ?? { text: "", at: Date.now() }), true)),
    announcements: PubSub.subscribe(hub)
  }
  /** Another gateway stores a file (or removes it) and says so. */
  const elsewhere = (name: string, text: string) =>
    Effect.andThen(
      Effect.sync(() => files.set(name, { text, at: Date.now() })),
      PubSub.publish(hub, { kind: "tokens" as const, name })
    )
  return { state, files, elsewhere }
})

const dirWith = (entries: Record<string, string>) => {
  const dir = mkdtempSync(join(tmpdir(), "mirror-"))
  for (const [name, text] of Object.entries(entries)) {
    mkdirSync(join(dir, name, ".."), { recursive: true })
    writeFileSync(join(dir, `${name}.json`), text)
  }
  return dir
}
/** A mirror that hears `written`'s writes (a gateway's own: see WrittenFiles). */
const mirrorHearing = (written: WrittenFiles.WrittenFilesService, ...args: Parameters<typeof Mirror.make>) =>
  Mirror.make(...args).pipe(Effect.provideService(WrittenFiles.WrittenFiles, written))

const read = (dir: string, name: string) =>
  existsSync(join(dir, `${name}.json`)) ? readFileSync(join(dir, `${name}.json`), "utf8") : undefined

describe("a directory kept alike through the store", () => {
  it.effect("takes down what the store has, sends up what only this disk has, and brings back nothing removed", () =>
    Effect.gen(function* () {
      const { state, files } = yield* memory
      const past = Date.now() - 60_000
      const dir = dirWith({ mine: "only here", "crm/users/abc": "a user's", revoked: "old", rewritten: "new" })
      utimesSync(join(dir, "revoked.json"), past / 1000, past / 1000)
      files.set("theirs", { text: "only there", at: past })
      files.set("revoked", { text: "", at: past + 1_000 })
      files.set("rewritten", { text: "", at: past })
      files.set("../outside", { text: "no", at: Date.now() })
      yield* Mirror.make(state, { kind: "tokens", dir })
      expect(read(dir, "theirs")).toBe("only there")
      expect(files.get("mine")?.text).toBe("only here")
      expect(files.get("crm/users/abc")?.text).toBe("a user's")
      // Removed elsewhere after this disk's copy was written: gone here too, not sent up again.
      expect(read(dir, "revoked")).toBeUndefined()
      expect(files.get("revoked")?.text).toBe("")
      // Written here after the removal: the newer, sent up.
      expect(files.get("rewritten")?.text).toBe("new")
      // A name from the store never leads out of the directory.
      expect(existsSync(join(dir, "..", "outside.json"))).toBe(false)
    })
  )

  it.effect("sends up what this process writes, and takes what another gateway announces", () =>
    Effect.gen(function* () {
      const { state, files, elsewhere } = yield* memory
      const dir = dirWith({})
      const arrived = yield* Queue.unbounded<string>()
      const written = WrittenFiles.make()
      const mirror = yield* mirrorHearing(written, state, { kind: "tokens", dir, arrived: (name) => Queue.offer(arrived, name) })
      writeFileSync(join(dir, "crm.json"), "signed in")
      written.wrote("tokens", "crm")
      writeFileSync(join(dir, "other.json"), "a pin")
      written.wrote("pins", "other")
      yield* mirror.settled
      expect(files.get("crm")?.text).toBe("signed in")
      // Another kind's file is not this mirror's.
      expect(files.has("other")).toBe(false)
      yield* elsewhere("crm", "signed in again")
      expect(yield* Queue.take(arrived)).toBe("crm")
      expect(read(dir, "crm")).toBe("signed in again")
      yield* elsewhere("crm", "")
      expect(yield* Queue.take(arrived)).toBe("crm")
      expect(read(dir, "crm")).toBeUndefined()
    })
  )

  it.effect("hears its own gateway's writes only: two gateways in one process each have their own", () =>
    Effect.gen(function* () {
      const { state, files } = yield* memory
      const dir = dirWith({})
      const mine = WrittenFiles.make()
      const theirs = WrittenFiles.make()
      const mirror = yield* mirrorHearing(mine, state, { kind: "tokens", dir })
      writeFileSync(join(dir, "theirs.json"), "the other gateway's")
      theirs.wrote("tokens", "theirs")
      writeFileSync(join(dir, "mine.json"), "signed in here")
      mine.wrote("tokens", "mine")
      yield* mirror.settled
      expect(files.get("mine")?.text).toBe("signed in here")
      expect(files.has("theirs")).toBe(false)
    })
  )

  it.effect("hears what another gateway announces the moment it is made (subscribed before it returns)", () =>
    Effect.gen(function* () {
      const { state, elsewhere } = yield* memory
      const dir = dirWith({})
      const arrived = yield* Queue.unbounded<string>()
      yield* Mirror.make(state, { kind: "tokens", dir, arrived: (name) => Queue.offer(arrived, name) })
      // No yield between: a subscription made by a fiber not yet started would miss it.
      yield* elsewhere("crm", "signed in elsewhere")
      expect(yield* Queue.take(arrived)).toBe("crm")
      expect(read(dir, "crm")).toBe("signed in elsewhere")
    })
  )

  it.effect("takes the store's copy of a file written here in the same millisecond (times are whole milliseconds)", () =>
    Effect.gen(function* () {
      const { state, files } = yield* memory
      const at = Date.now() - 10_000
      const dir = dirWith({ crm: "written here" })
      // This disk's copy half a millisecond into the store's copy's millisecond.
      utimesSync(join(dir, "crm.json"), (at + 0.5) / 1000, (at + 0.5) / 1000)
      files.set("crm", { text: "written elsewhere", at })
      yield* Mirror.make(state, { kind: "tokens", dir })
      expect(read(dir, "crm")).toBe("written elsewhere")
      expect(files.get("crm")?.text).toBe("written elsewhere")
    })
  )

  it.effect(
    "asks a store that did not answer (or did not take a file) again until it does: what only this disk has goes up then",
    () =>
      Effect.gen(function* () {
        const { state, files } = yield* memory
        let answering = false
        const flaky: TeamFilesService = {
          ...state,
          files: (kind) => (answering ? state.files(kind) : Effect.succeed(undefined)),
          put: (kind, name, file) => (answering ? state.put(kind, name, file) : Effect.succeed(false))
        }
        const dir = dirWith({ mine: "only here" })
        const written = WrittenFiles.make()
        const mirror = yield* mirrorHearing(written, flaky, { kind: "tokens", dir })
        writeFileSync(join(dir, "later.json"), "written while it failed")
        written.wrote("tokens", "later")
        yield* mirror.settled
        expect(files.has("mine")).toBe(false)
        expect(files.has("later")).toBe(false)
        answering = true
        yield* TestClock.adjust("2 seconds")
        for (let i = 0; i < 20 && !(files.has("mine") && files.has("later")); i++) {
          yield* Effect.yieldNow
          yield* mirror.settled
        }
        expect(files.get("mine")?.text).toBe("only here")
        expect(files.get("later")?.text).toBe("written while it failed")
      })
  )

  it.effect("sends a file the store did not take up again once it takes them", () =>
    Effect.gen(function* () {
      const { state, files } = yield* memory
      let taking = false
      const refusing: TeamFilesService = {
        ...state,
        put: (kind, name, file) => (taking ? state.put(kind, name, file) : Effect.succeed(false))
      }
      const dir = dirWith({})
      const written = WrittenFiles.make()
      const mirror = yield* mirrorHearing(written, refusing, { kind: "tokens", dir })
      writeFileSync(join(dir, "crm.json"), "signed in")
      written.wrote("tokens", "crm")
      yield* mirror.settled
      expect(files.has("crm")).toBe(false)
      taking = true
      yield* TestClock.adjust("2 seconds")
      for (let i = 0; i < 20 && !files.has("crm"); i++) {
        yield* Effect.yieldNow
        yield* mirror.settled
      }
      expect(files.get("crm")?.text).toBe("signed in")
    })
  )
})
