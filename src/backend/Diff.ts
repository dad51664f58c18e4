/**
 * What a new configuration changes about a running set of backends: which of a backend's settings
 * decide how it runs (a change restarts it) and which only what it exposes (a change keeps it).
 */
import { type BackendConfig, EXPOSURE_KEYS } from "../config/Config.js"

/** What `apply` changed, by backend id. */
export interface Applied {
  readonly added: ReadonlyArray<string>
  readonly removed: ReadonlyArray<string>
  /** Restarted: how they run changed. */
  readonly restarted: ReadonlyArray<string>
  /** Kept running; what they expose (or how they are described) changed. */
  readonly reexposed: ReadonlyArray<string>
}

/** Settings that do not change how a backend runs: a change in them keeps its process. */
const EXPOSURE_ONLY = new Set<string>([...EXPOSURE_KEYS, "description", "displayName"])

/** Whether two configurations of one backend run it the same way. */
export const runsTheSame = (a: BackendConfig, b: BackendConfig): boolean => {
  const running = (config: BackendConfig) =>
    JSON.stringify(Object.entries(config).filter(([key, value]) => !EXPOSURE_ONLY.has(key) && value !== undefined))
  return running(a) === running(b)
}

export const NOTHING_APPLIED: Applied = { added: [], removed: [], restarted: [], reexposed: [] }

/** What making `next` the set in force changes about `running`, by backend id (each list in its set's order). */
export const diff = (running: ReadonlyArray<BackendConfig>, next: ReadonlyArray<BackendConfig>): Applied => {
  const before = new Map(running.map((c) => [c.id, c]))
  const kept = new Set(next.map((c) => c.id))
  const ids = (configs: ReadonlyArray<BackendConfig>) => configs.map((c) => c.id)
  const stays = next.filter((c) => before.has(c.id))
  return {
    added: ids(next.filter((c) => !before.has(c.id))),
    removed: ids(running.filter((c) => !kept.has(c.id))),
    restarted: ids(stays.filter((c) => !runsTheSame(before.get(c.id)!, c))),
    reexposed: ids(
      stays.filter((c) => runsTheSame(before.get(c.id)!, c) && JSON.stringify(before.get(c.id)) !== JSON.stringify(c))
    )
  }
}
