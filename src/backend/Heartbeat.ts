/**
 * A backend's heartbeat (`healthCheck`): judged by what it does, pinged only when it has gone quiet
 * or a call timed out, and ended (for the supervisor to restart it) after enough silent probes.
 */
import { Effect } from "effect"
import type { HealthCheck } from "../config/Config.js"
import type * as Backend from "./Backend.js"

/**
 * Watches a running backend until it stops answering: every `intervalMs` it is asked (`probe`)
 * only if it sent nothing in that time or a call to it timed out, so a busy healthy backend is
 * never pinged. After `failures` silent probes in a row it ends, with why, and the lifecycle
 * restarts the backend as if it had crashed (closing its scope stops the process).
 */
export const watch = (backend: Backend.Backend, check: HealthCheck): Effect.Effect<Backend.ExitInfo> =>
  Effect.gen(function* () {
    let misses = 0
    let lastLook = Date.now()
    while (true) {
      yield* Effect.sleep(check.intervalMs)
      const { heardAt, timedOutAt } = backend.activity()
      const now = Date.now()
      const quiet = now - heardAt >= check.intervalMs
      const timingOut = timedOutAt > lastLook
      lastLook = now
      if (!quiet && !timingOut) {
        misses = 0
        continue
      }
      if ((yield* backend.probe(check.timeoutMs)) === "alive") {
        misses = 0
        continue
      }
      misses++
      yield* Effect.logWarning(`health check: no answer to ping within ${check.timeoutMs} ms (${misses} of ${check.failures})`)
      if (misses >= check.failures) {
        return {
          code: null,
          signal: null,
          description: `stopped answering: ${misses} health checks in a row got no answer within ${check.timeoutMs} ms`
        }
      }
    }
  })
