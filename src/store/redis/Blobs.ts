/**
 * Small files in Redis: `files:<kind>`, a hash of name to `{text, at}`, each change published on
 * the channel `announced` in the same MULTI, heard on a connection of its own (a subscribed one does
 * nothing else). After that connection reconnects, every file is taken as changed: it may have
 * missed some.
 */
import { Effect, Option, PubSub, type Scope } from "effect"
import type { Announcement, FileKind, SharedFile } from "../Contract.js"
import type { Blobs } from "../Driver.js"
import { isObject, parseJson } from "../../json/Json.js"
import { pause, PREFIX, type RedisConnectionService } from "./Connection.js"

const KINDS: ReadonlyArray<FileKind> = ["tokens", "pins", "embeddings", "known"]
const isKind = (kind: unknown): kind is FileKind => KINDS.some((known) => known === kind)
const ANNOUNCED = `${PREFIX}announced`
/** How long the driver's start waits for its subscription (as for its connection). */
const SUBSCRIBE_WAIT_MS = 2_000

const parsed = (text: string): Record<string, unknown> | undefined => {
  const value = parseJson(text)
  return isObject(value) ? value : undefined
}

const parseFile = (value: unknown): SharedFile | undefined => {
  const file = typeof value === "string" ? parsed(value) : undefined
  return typeof file?.text === "string" && typeof file.at === "number" ? { text: file.text, at: file.at } : undefined
}

const parseAnnouncement = (message: string): { readonly from: string; readonly announcement: Announcement } | undefined => {
  const said = parsed(message)
  if (typeof said?.from !== "string" || typeof said.name !== "string" || !isKind(said.kind)) return undefined
  return { from: said.from, announcement: { kind: said.kind, name: said.name } }
}

export const make = (connection: RedisConnectionService): Effect.Effect<Blobs, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { client, run, replicaId } = connection
    const announcements = yield* PubSub.unbounded<Announcement>()
    const listener = client.duplicate()
    listener.on("error", () => {
      // Said by the main connection's failure; this one reconnects by itself.
    })
    let heard = false
    listener.on("ready", () => {
      // Reconnected: what was announced meanwhile is lost, so every file may have changed.
      if (heard) for (const kind of KINDS) Effect.runSync(PubSub.publish(announcements, { kind, name: "*" }))
      heard = true
    })
    const subscribed = listener
      .connect()
      .then(() =>
        listener.subscribe(ANNOUNCED, (message) => {
          const said = parseAnnouncement(message)
          if (said !== undefined && said.from !== replicaId) Effect.runSync(PubSub.publish(announcements, said.announcement))
        })
      )
      .catch(() => {})
    yield* Effect.addFinalizer(() => Effect.sync(() => listener.destroy()))
    // Subscribed before the driver is in use: what another replica announces from now on is heard
    // (a store out of reach at start, already waited for, delays nothing more).
    if (client.isReady) yield* Effect.promise(() => Promise.race([subscribed, pause(SUBSCRIBE_WAIT_MS)]))

    const put = (kind: FileKind, name: string, file: SharedFile) =>
      Effect.asVoid(
        run(() => {
          const said = JSON.stringify({ from: replicaId, kind, name })
          return client.multi().hSet(`${PREFIX}files:${kind}`, name, JSON.stringify(file)).publish(ANNOUNCED, said).exec()
        })
      )
    return {
      list: (kind) =>
        Effect.map(
          run(() => client.hGetAll(`${PREFIX}files:${kind}`)),
          (all) => {
            const files = new Map<string, SharedFile>()
            for (const [name, value] of Object.entries(all)) {
              const file = parseFile(value)
              if (file !== undefined) files.set(name, file)
            }
            return files
          }
        ),
      get: (kind, name) =>
        Effect.map(
          run(() => client.hGet(`${PREFIX}files:${kind}`, name)),
          (value) => Option.fromNullishOr(parseFile(value))
        ),
      put,
      remove: (kind, name) => Effect.suspend(() => put(kind, name, { text: "", at: Date.now() })),
      announcements: PubSub.subscribe(announcements)
    }
  })
