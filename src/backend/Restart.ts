/**
 * When a crashed backend is started again: the policy (first delay, its cap, how many failures in
 * a row before it is left failed, how long a run counts as healthy) and the waits as a `Schedule`.
 */
import { Duration, Schedule } from "effect"

export interface RestartPolicy {
  /** The first delay after a crash; it doubles with each consecutive failure. */
  readonly initialDelayMs: number
  readonly maxDelayMs: number
  /** Consecutive failures (crashes or failed starts) before the backend is left "failed". */
  readonly maxConsecutiveFailures: number
  /** A backend that stayed ready this long starts counting failures afresh. */
  readonly healthyAfterMs: number
}

/** The waits between restarts: `initialDelayMs`, doubling with each consecutive failure, at most `maxDelayMs`. */
export const restartDelays = (policy: RestartPolicy): Schedule.Schedule<Duration.Duration> =>
  // The shorter of the two waits each time (and recurring while either does): the cap.
  Schedule.min([
    Schedule.exponential(Duration.millis(policy.initialDelayMs)),
    Schedule.spaced(Duration.millis(policy.maxDelayMs))
  ])

export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  maxConsecutiveFailures: 10,
  healthyAfterMs: 60_000
}
