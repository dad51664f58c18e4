/**
 * What the debug UI shows of each backend (`/api/backends`): its state (an idle one remembered or
 * stopped after `idleMs`), its sign-ins and users (names, never tokens), what it lists (resources
 * and prompts counted, a backend slow to list shown as "?"; kept a few seconds), the characters its
 * descriptions hide, the tools held since they were pinned, and its calls, errors and latency as
 * recorded.
 */
import { Effect, Option } from "effect"
import * as Store from "../auth/Store.js"
import type { BackendsService } from "../backend/Backends.js"
import * as Pins from "../backend/Pins.js"
import { oauthOf } from "../config/Config.js"
import * as Secrets from "../observability/Secrets.js"
import type { Recorder } from "./Recorder.js"

/** How long a backend's resource and prompt counts are reused before they are listed again. */
const COUNTS_TTL_MS = 5_000

/** The view, computed afresh each time it runs (the counts from a cache of a few seconds). */
export const make = (backends: BackendsService, recorder: Recorder) => {
  const counts = new Map<
    string,
    { at: number; resources: string; prompts: string; hidden: ReadonlyArray<{ what: string; name: string; found: string }> }
  >()
  // A backend slow to list is shown as "?" rather than holding the page.
  const countOf = (id: string, capability: string, method: string, field: string) =>
    backends.countListed(id, capability, method, field).pipe(Effect.timeoutOption(1_000), Effect.map(Option.getOrElse(() => "?")))
  const countsOf = (id: string) =>
    Effect.gen(function* () {
      const cached = counts.get(id)
      if (cached !== undefined && Date.now() - cached.at < COUNTS_TTL_MS) return cached
      const fresh = {
        at: Date.now(),
        resources: yield* countOf(id, "resources", "resources/list", "resources"),
        prompts: yield* countOf(id, "prompts", "prompts/list", "prompts"),
        // Descriptions hiding characters (removed from what the gateway's model reads).
        hidden: (yield* backends
          .hiddenIn(id, backends.toolsSync().find((b) => b.backendId === id)?.tools ?? [])
          .pipe(Effect.timeoutOption(1_000), Effect.map(Option.getOrElse(() => [])))).map(({ what, name, found }) => ({
          what,
          name,
          found
        }))
      }
      counts.set(id, fresh)
      return fresh
    })

  return Effect.gen(function* () {
    const states = yield* backends.states
    return yield* Effect.forEach(
      states,
      (s) =>
        Effect.gen(function* () {
          const stats = recorder.stats.get(s.id)
          const latency = recorder.latencyOf(s.id)
          const ready = s.state === "ready"
          const c = ready ? yield* countsOf(s.id) : undefined
          return {
            id: s.id,
            displayName: s.displayName,
            state: s.state,
            // An idle one: "remembered" (not started in this run) or "stopped" (after idleMs unused, at idleSince).
            idle: s.idle,
            idleSince: s.idleSince,
            enabled: s.enabled,
            pid: s.pid,
            address: backends.backend(s.id)?.address,
            restarts: s.restarts,
            // The backend's own (a crash, a failed start: cleared once it is ready again), else its
            // last failed call's (an isError result counts, as in `errors`); null when there is none.
            lastError: s.lastError !== undefined ? Secrets.scrub(s.lastError) : (stats?.lastError?.message ?? null),
            protocolVersion: s.protocolVersion,
            // Where the gateway is signed in at a remote OAuth backend (issuer, scopes): never a token.
            signIn: (() => {
              const config = backends.configOf(s.id)
              return config?.url === undefined || oauthOf(config) === undefined
                ? null
                : Store.describe(Store.read(Store.directory(), s.id), s.id)
            })(),
            // A backend that acts as each user: who is signed in there as themselves (names, never tokens).
            users:
              oauthOf(backends.configOf(s.id) ?? {})?.perUser === true
                ? Store.usersOf(Store.directory(), s.id).map((u) => ({ subject: u.subject, signIn: Store.describe(u, s.id) }))
                : undefined,
            tools: s.toolCount,
            resources: c?.resources,
            prompts: c?.prompts,
            hidden: c?.hidden ?? [],
            // Tools whose definitions changed since they were pinned, with what changed.
            pinned: (() => {
              const listed = backends.toolsSync().find((b) => b.backendId === s.id)
              return (listed?.changed ?? []).map((change) => ({
                name: change.name,
                changed: change.changed,
                held: listed?.pinMode === "quarantine",
                diff: Pins.describeChange(change),
                trust: `mcp-agentify trust ${s.id} ${change.name}`
              }))
            })(),
            calls: stats?.calls ?? 0,
            errors: stats?.errors ?? 0,
            p50Ms: latency.p50,
            p99Ms: latency.p99
          }
        }),
      { concurrency: "unbounded" }
    )
  })
}
