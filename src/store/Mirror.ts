/**
 * A directory of small files kept alike on every gateway of a team through the store: OAuth
 * tokens (sealed: the store holds nothing it could open) and pinned tool definitions. The files on
 * disk stay what the gateway reads (synchronously, on its hot paths); the store is where they
 * meet.
 *
 * - At start, what the store holds comes down (a file the store has and this disk lacks, or an
 *   older one) and what only this disk holds goes up.
 * - A file this gateway writes or removes (see WrittenFiles) goes up at once, and the others hear.
 * - A file another gateway wrote comes down when it says so; after the store was out of reach, all
 *   of them, since announcements were lost meanwhile.
 *
 * Two versions of one file become the newer one, or, where the kind says how (`merge`: pins), one
 * made of both. Nothing here stops the gateway: a store that fails leaves the disk as it is.
 */
import { Deferred, Effect, PubSub, Queue, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { WrittenFiles } from "./WrittenFiles.js"
import * as RegularFile from "../config/RegularFile.js"
import type { FileKind, SharedFile } from "./Contract.js"
import type { TeamFilesService } from "./TeamFiles.js"

export interface Options {
  readonly kind: FileKind
  /** Where the files are: `<dir>/<name>.json` (a name may hold `/`). */
  readonly dir: string
  /** Two versions made one (absent: the newer wins): the store's parts win where both have one. */
  readonly merge?: ((local: string, shared: string) => string) | undefined
  /** After a file came from another gateway (or went). */
  readonly arrived?: ((name: string) => Effect.Effect<void>) | undefined
}

export interface Mirror {
  /** Completes when everything written so far is in the store (or the store failed to take it). */
  readonly settled: Effect.Effect<void>
}

type Job =
  | { readonly _tag: "Push"; readonly name: string }
  | { readonly _tag: "Pull"; readonly name: string }
  | { readonly _tag: "PullAll" }
  | { readonly _tag: "Mark"; readonly done: Deferred.Deferred<void> }

/** How soon a gateway asks a store that did not answer again. */
const RETRY_MS = 2_000

/** The largest file of a team's kept alike: the largest any kind writes (vectors, see catalog/semantic/Embeddings). */
const MAX_SHARED_FILE_BYTES = 256 * 1024 * 1024

const fileOf = (dir: string, name: string) => path.join(dir, `${name}.json`)

/** Every `.json` file under `dir`, by name (its path within, without `.json`). */
const namesIn = (dir: string): ReadonlyArray<string> => {
  const names: Array<string> = []
  const walk = (sub: string, depth: number) => {
    let entries: Array<fs.Dirent>
    try {
      entries = fs.readdirSync(path.join(dir, sub), { withFileTypes: true })
    } catch {
      return
    }
    for (const entry of entries) {
      const relative = sub === "" ? entry.name : `${sub}/${entry.name}`
      if (entry.isDirectory() && depth < 3) walk(relative, depth + 1)
      else if (entry.isFile() && entry.name.endsWith(".json")) names.push(relative.slice(0, -".json".length))
    }
  }
  walk("", 0)
  return names
}

const readLocal = (dir: string, name: string): SharedFile | undefined => {
  // A file that is not a regular one (a FIFO, a link), or too large: said once, never sent to the team.
  const read = RegularFile.readState(fileOf(dir, name), MAX_SHARED_FILE_BYTES)
  // Whole milliseconds, as the store's times are (Date.now()): a file written in the same
  // millisecond as the store's copy is not the newer, and the team's copy is taken.
  return read === undefined ? undefined : { text: read.bytes.toString("utf8"), at: Math.floor(read.mtimeMs) }
}

/** Written whole (a temporary file renamed over the old one), 0600 in 0700 directories, as the gateway writes them. */
const writeLocal = (dir: string, name: string, text: string): void => {
  const file = fileOf(dir, name)
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  const temporary = `${file}.${process.pid}.mirror.tmp`
  fs.writeFileSync(temporary, text, { mode: 0o600 })
  fs.chmodSync(temporary, 0o600)
  fs.renameSync(temporary, file)
}

/** `name` must stay inside the directory: a name from the store is never a way out of it. */
const safe = (name: string): boolean =>
  name !== "" && !name.startsWith("/") && name.split("/").every((part) => part !== "" && part !== "." && part !== "..")

export const make = (state: TeamFilesService, options: Options): Effect.Effect<Mirror, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { kind, dir } = options
    const jobs = yield* Queue.unbounded<Job>()
    const scope = yield* Effect.scope

    // Until the store answers again (or takes what it did not), this machine's own are used, and
    // everything is taken again a moment later: an empty store restarted is filled again this way.
    let retrying = false
    const again = (why: string) =>
      Effect.suspend(() => {
        if (retrying) return Effect.void
        retrying = true
        return Effect.andThen(
          Effect.logWarning(`shared ${kind}: ${why}; this machine's own are used until it does`),
          Effect.forkIn(
            Effect.sleep(RETRY_MS).pipe(
              Effect.andThen(Effect.sync(() => (retrying = false))),
              Effect.andThen(Queue.offer(jobs, { _tag: "PullAll" }))
            ),
            scope
          )
        )
      })

    const push = (name: string) =>
      Effect.flatMap(
        Effect.suspend(() => state.put(kind, name, readLocal(dir, name))),
        (taken) => (taken ? Effect.void : again(`the store did not take ${name}`))
      )

    /** The store's version of `name` made this disk's (its removal too), sending up what only this disk has. */
    const take = (name: string, shared: SharedFile | "none") =>
      Effect.gen(function* () {
        if (!safe(name)) return
        const local = readLocal(dir, name)
        if (shared === "none") return
        if (shared.text === "") {
          // Removed elsewhere; a file written here since then is the newer.
          if (local === undefined) return
          if (local.at > shared.at) return yield* push(name)
          fs.rmSync(fileOf(dir, name), { force: true })
        } else if (local === undefined) {
          writeLocal(dir, name, shared.text)
        } else if (local.text === shared.text) {
          return
        } else if (options.merge !== undefined) {
          const merged = options.merge(local.text, shared.text)
          if (merged !== local.text) writeLocal(dir, name, merged)
          if (merged !== shared.text) yield* push(name)
          if (merged === local.text) return
        } else if (local.at > shared.at) {
          // Written here after the store's (while it was out of reach): this one is the newer.
          return yield* push(name)
        } else {
          writeLocal(dir, name, shared.text)
        }
        yield* Effect.logDebug(`shared ${kind}: ${name} taken from the store`)
        if (options.arrived !== undefined) yield* options.arrived(name)
      }).pipe(Effect.catchDefect((defect) => Effect.logWarning(`shared ${kind}: could not take ${name} from the store`, defect)))

    /** Everything taken, what only this disk has sent up; false when the store did not answer. */
    const pullAll = Effect.gen(function* () {
      const shared = yield* state.files(kind)
      if (shared === undefined) return false
      for (const [name, file] of shared) yield* take(name, file)
      for (const name of namesIn(dir)) if (!shared.has(name)) yield* push(name)
      return true
    })
    const pullAllOrRetry = Effect.flatMap(pullAll, (answered) => (answered ? Effect.void : again("the store did not answer")))

    const run = (job: Job): Effect.Effect<void> => {
      switch (job._tag) {
        case "Push":
          return Effect.asVoid(push(job.name))
        case "PullAll":
          return pullAllOrRetry
        case "Pull":
          return Effect.flatMap(state.file(kind, job.name), (shared) =>
            shared === "unknown" ? Effect.void : take(job.name, shared)
          )
        case "Mark":
          return Deferred.succeed(job.done, undefined)
      }
    }

    // One job at a time, in order: a push and a pull of one file never cross.
    yield* pullAllOrRetry
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(jobs), run)))
    // What this gateway writes (see WrittenFiles), in the queue before its writer returns.
    yield* (yield* WrittenFiles).listen((written, name) => {
      if (written === kind) Queue.offerUnsafe(jobs, { _tag: "Push", name })
    })
    // Subscribed before this returns: what another gateway says from now on is heard.
    const heard = yield* state.announcements
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.flatMap(PubSub.take(heard), (said) =>
          said.kind !== kind
            ? Effect.void
            : Queue.offer(jobs, said.name === "*" ? { _tag: "PullAll" } : { _tag: "Pull", name: said.name })
        )
      )
    )

    return {
      settled: Effect.gen(function* () {
        const done = yield* Deferred.make<void>()
        yield* Queue.offer(jobs, { _tag: "Mark", done })
        yield* Deferred.await(done)
      })
    }
  })
