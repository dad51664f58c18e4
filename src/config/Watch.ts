/**
 * Watching the configuration on disk: the config file and `--servers-dir` (the folder itself, for
 * servers added or removed and its `config.json`, and each server's folder, for its manifest).
 *
 * The config file is watched through its directory, because editors save by writing a new file
 * and renaming it over the old one, which ends a watch on the file itself. Nothing is watched
 * recursively: a server's `node_modules` would cost an inotify watch per folder. Events come in
 * bursts (a save is several), so they are debounced into one change.
 */
import { Duration, Effect, Queue, Stream } from "effect"
import { type FSWatcher, readdirSync, watch } from "node:fs"
import * as path from "node:path"
import type { DiskSources } from "./Resolve.js"

/** A save is a burst of events over some milliseconds: one change after this much quiet. */
export const DEFAULT_DEBOUNCE_MS = 150

/** What to watch: each directory, and the names in it that matter (undefined: any). */
const watchList = (disk: DiskSources): Map<string, ReadonlySet<string> | undefined> => {
  const list = new Map<string, Set<string> | undefined>()
  if (disk.configPath !== undefined) {
    const file = path.resolve(disk.configPath)
    const dir = path.dirname(file)
    const names = list.get(dir) ?? new Set<string>()
    list.set(dir, names.add(path.basename(file)))
  }
  if (disk.serversDir !== undefined) {
    const dir = path.resolve(disk.serversDir)
    list.set(dir, undefined)
    try {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        if (entry.isDirectory() && !entry.name.startsWith(".") && entry.name !== "node_modules") {
          list.set(path.join(dir, entry.name), undefined)
        }
      }
    } catch {
      // Gone or unreadable: the reload says so; its parent's watch sees it come back.
    }
  }
  return list
}

/** Names inside a server's folder whose changes never change how it is run. */
const IGNORED = /^(node_modules|\.git|dist|build|target|__pycache__|\.venv)$/

/**
 * One element per change of the configuration on disk, debounced. The watches are made again
 * after each change, so a server folder added to `--servers-dir` is watched too.
 */
export const changes = (disk: DiskSources, debounceMs = DEFAULT_DEBOUNCE_MS): Stream.Stream<void> =>
  Stream.callback<void>(
    (queue) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          const watchers = new Map<string, FSWatcher>()
          const refresh = () => {
            const wanted = watchList(disk)
            for (const [dir, watcher] of watchers) {
              if (!wanted.has(dir)) {
                watcher.close()
                watchers.delete(dir)
              }
            }
            for (const [dir, names] of wanted) {
              if (watchers.has(dir)) continue
              try {
                const watcher = watch(dir, { persistent: false }, (_event, name) => {
                  const file = name === null ? undefined : String(name)
                  if (names !== undefined && file !== undefined && !names.has(file)) return
                  if (names === undefined && file !== undefined && IGNORED.test(file)) return
                  // A server folder added or removed is watched, or not, from now on.
                  if (disk.serversDir !== undefined) refresh()
                  Queue.offerUnsafe(queue, undefined)
                })
                watcher.on("error", () => {
                  watcher.close()
                  watchers.delete(dir)
                })
                watchers.set(dir, watcher)
              } catch {
                // A directory that is not there (yet): the next change looks again.
              }
            }
          }
          refresh()
          return watchers
        }),
        (watchers) =>
          Effect.sync(() => {
            for (const watcher of watchers.values()) watcher.close()
            watchers.clear()
          })
      ),
    // A change not yet read makes the ones after it redundant (they are debounced into one).
    { bufferSize: 1, strategy: "sliding" }
  ).pipe(Stream.debounce(Duration.millis(debounceMs)))
