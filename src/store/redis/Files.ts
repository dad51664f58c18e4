/**
 * Shared files in the team's store: `files:<kind>`, a hash of name to `{text, at}`, each change
 * published on the channel `announced` for the other gateways, heard on a connection of its own
 * (a subscribed one does nothing else). After that connection reconnects, every file is taken as
 * changed: it may have missed some.
 */
import { Effect, Layer, PubSub } from "effect"
import type { Announcement, FileKind, SharedFile } from "../Contract.js"
import { TeamFiles } from "../TeamFiles.js"
import { PREFIX, RedisConnection } from "./Connection.js"
import { isObject, parseJson } from "../../values/Json.js"

const KINDS: ReadonlyArray<FileKind> = ["tokens", "pins", "embeddings", "known"]
const isKind = (kind: unknown): kind is FileKind => KINDS.some((known) => known === kind)
const ANNOUNCED = `${PREFIX}announced`

const parsed = (text: string): Record<string, unknown> | undefined => {
  const value = parseJson(text)
  return isObject(value) ? value : undefined
}

const parseFile = (value: string): SharedFile | undefined => {
  const file = parsed(value)
  return typeof file?.text === "string" && typeof file.at === "number" ? { text: file.text, at: file.at } : undefined
}

const parseAnnouncement = (message: string): { readonly from: string; readonly announcement: Announcement } | undefined => {
  const said = parsed(message)
  if (typeof said?.from !== "string" || typeof said.name !== "string" || !isKind(said.kind)) return undefined
  return { from: said.from, announcement: { kind: said.kind, name: said.name } }
}

export const layer: Layer.Layer<TeamFiles, never, RedisConnection> = Layer.scoped(
  TeamFiles,
  Effect.gen(function* () {
    const { client, run, replicaId } = yield* RedisConnection
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
    void listener
      .connect()
      .then(() =>
        listener.subscribe(ANNOUNCED, (message) => {
          const said = parseAnnouncement(message)
          if (said !== undefined && said.from !== replicaId) Effect.runSync(PubSub.publish(announcements, said.announcement))
        })
      )
      .catch(() => {})
    yield* Effect.addFinalizer(() => Effect.sync(() => listener.destroy()))
    return {
      files: (kind) =>
        Effect.map(
          run(() => client.hGetAll(`${PREFIX}files:${kind}`)),
          (all) => {
            if (all === undefined) return undefined
            const files = new Map<string, SharedFile>()
            for (const [name, value] of Object.entries(all)) {
              const file = typeof value === "string" ? parseFile(value) : undefined
              if (file !== undefined) files.set(name, file)
            }
            return files
          }
        ),
      file: (kind, name) =>
        Effect.map(
          run(() => client.hGet(`${PREFIX}files:${kind}`, name)),
          (value) => (value === undefined ? "unknown" : typeof value === "string" ? (parseFile(value) ?? "none") : "none")
        ),
      put: (kind, name, file) =>
        Effect.map(
          run(() => {
            const said = JSON.stringify({ from: replicaId, kind, name })
            // A removal is kept as one (empty, when): a gateway that was away does not bring the file back.
            const kept: SharedFile = file ?? { text: "", at: Date.now() }
            return client.multi().hSet(`${PREFIX}files:${kind}`, name, JSON.stringify(kept)).publish(ANNOUNCED, said).exec()
          }),
          (answer) => answer !== undefined
        ),
      announcements: PubSub.subscribe(announcements)
    }
  })
)
