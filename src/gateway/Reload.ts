/**
 * Configuration changes without a restart: each change of the config file or `--servers-dir`
 * (see config/Watch) is read, checked as at start-up, and applied as a difference
 * (`Backends.apply`): added backends start, removed ones stop, changed ones restart, the rest keep
 * their process and their sessions. Sessions then hear of what changed for them (see ListChanged,
 * driven by the backends' tools changing).
 *
 * A change that cannot be applied (a file that does not parse or validate, a profile naming no
 * backend, a tool name two backends would share) is refused with the message start-up would give,
 * logged, and published; the running configuration stays. `initializationOptions` and the
 * environment are not read again.
 */
import { Effect, Result, Redacted, Stream } from "effect"
import type { Applied, BackendsService, BackendTools } from "../backend/Backends.js"
import type { GatewayConfig, ResolvedConfig } from "../config/Config.js"
import * as Watch from "../config/Watch.js"
import { buildCatalog, catalogOf, describeConflict } from "../catalog/ToolCatalog.js"
import type { EventsService } from "../observability/Events.js"
import * as Logging from "../observability/Logging.js"

export interface Deps {
  readonly config: GatewayConfig["Service"]
  readonly backends: BackendsService
  readonly events: EventsService
}

/** Every change on disk, applied or refused, one after the other, while the scope is open. */
export const watch = (deps: Deps): Effect.Effect<void> =>
  deps.config.disk === undefined ? Effect.void : Watch.changes(deps.config.disk).pipe(Stream.runForEach(() => reload(deps)))

/**
 * The tool names the next configuration would make two backends share, beyond those shared now:
 * known for the backends that keep running (their tools are listed); the others' tools are not
 * known until they start, and their conflicts are reported then.
 */
const newConflicts = (running: ReadonlyArray<BackendTools>, next: ResolvedConfig): Array<string> => {
  const tools = new Map(running.map((b) => [b.backendId, b.tools]))
  const predicted = buildCatalog(
    next.backends.flatMap((config) => {
      const listed = tools.get(config.id)
      return listed === undefined || !config.enabled ? [] : [{ backendId: config.id, tools: listed, exposure: config }]
    })
  ).conflicts.map(describeConflict)
  const now = new Set(catalogOf(running).conflicts.map(describeConflict))
  return predicted.filter((c) => !now.has(c))
}

/** Two configurations the same in every setting, secrets compared by value (never printed). */
const same = (a: ResolvedConfig, b: ResolvedConfig): boolean => {
  const text = (config: ResolvedConfig) =>
    JSON.stringify({ ...config, notes: [] }, (_key, value: unknown) =>
      Redacted.isRedacted(value) ? Redacted.value(value) : value
    )
  return text(a) === text(b)
}

const summary = (applied: Applied): string => {
  const parts = [
    applied.added.length > 0 ? `added ${applied.added.join(", ")}` : "",
    applied.removed.length > 0 ? `removed ${applied.removed.join(", ")}` : "",
    applied.restarted.length > 0 ? `restarted ${applied.restarted.join(", ")}` : "",
    applied.reexposed.length > 0 ? `re-exposed ${applied.reexposed.join(", ")}` : ""
  ].filter((p) => p !== "")
  return parts.length === 0 ? "backends unchanged, other settings applied" : parts.join("; ")
}

/** Reads the disk once and applies what it holds, or refuses it. Never fails. */
export const reload = ({ config, backends, events }: Deps): Effect.Effect<void> =>
  Effect.gen(function* () {
    const started = Date.now()
    const refuse = (message: string) =>
      Effect.andThen(
        Effect.logError(`configuration change refused, the running configuration stays: ${message}`),
        Effect.sync(() => {
          if (events.active()) events.publish({ _tag: "ConfigReload", at: started, outcome: "refused", message })
        })
      )
    const candidate = yield* config.candidate
    if (Result.isFailure(candidate)) return yield* refuse(candidate.failure)
    const next = candidate.success.config
    const conflicts = newConflicts(backends.toolsSync(), next)
    if (conflicts.length > 0) return yield* refuse(conflicts.join("; "))
    const before = yield* config.current
    if (same(before, next)) {
      // Said to observers too: an earlier refusal is no longer what the file holds.
      if (events.active()) events.publish({ _tag: "ConfigReload", at: started, outcome: "unchanged" })
      return yield* Effect.logDebug("configuration file changed; nothing in it did")
    }
    yield* config.replace(candidate.success)
    if (next.logLevel !== before.logLevel) yield* Logging.applyLevel(next.logLevel)
    const applied = yield* backends.apply(next.backends)
    const ms = Date.now() - started
    yield* Effect.logInfo(`configuration reloaded from ${next.backendsSource}: ${summary(applied)}`, { ms })
    if (events.active()) events.publish({ _tag: "ConfigReload", at: started, outcome: "applied", ...applied, ms })
  }).pipe(Effect.catchDefect((defect) => Effect.logError("configuration reload failed", defect)))
