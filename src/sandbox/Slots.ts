/**
 * How many scripts run at once in this gateway process, and how many may wait for a turn. Each run
 * holds a thread and up to `memoryMb` of memory: without a bound as a whole, a client that starts
 * runs faster than they end (tasks do not wait for their result) grows the process without end.
 * Past both bounds a run is refused at once, naming the settings, rather than queued forever.
 *
 * Each gateway's (`RunSlots`: its settings are its own); the threads the runs take are the process's
 * (see Sandbox: a spare thread is kept for the next run, whichever gateway makes it).
 */
import { Context, Effect, Layer, Semaphore } from "effect"

export interface Bounds {
  /** Scripts running at once. */
  readonly maxRuns: number
  /** Scripts waiting for a turn beyond those. */
  readonly maxQueuedRuns: number
}

export const DEFAULT_BOUNDS: Bounds = { maxRuns: 8, maxQueuedRuns: 64 }

/** Why a run did not start: both bounds were reached. */
export interface Busy {
  readonly _tag: "Busy"
  readonly message: string
}

export interface SlotsService {
  /**
   * Runs `run` in a turn of its own, waiting for one if every turn is taken and fewer than
   * `maxQueuedRuns` wait; else fails with `Busy` without running it. The bounds are the latest
   * run's settings (a reload resizes them; runs already started keep their turn).
   */
  readonly withTurn: <A, E, R>(bounds: Bounds, run: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Busy, R>
}

/** A fresh set of turns. */
export const make = (): SlotsService => {
  let permits = DEFAULT_BOUNDS.maxRuns
  const semaphore = Semaphore.makeUnsafe(permits)
  /** Runs that hold a turn or wait for one. */
  let admitted = 0
  return {
    withTurn: <A, E, R>(bounds: Bounds, run: Effect.Effect<A, E, R>) =>
      Effect.suspend((): Effect.Effect<A, E | Busy, R> => {
        if (bounds.maxRuns !== permits) {
          permits = bounds.maxRuns
          semaphore.resize(permits).pipe(Effect.runSync)
        }
        if (admitted >= bounds.maxRuns + bounds.maxQueuedRuns) {
          return Effect.fail<Busy>({
            _tag: "Busy",
            message: `code mode is busy: ${bounds.maxRuns} scripts are running (codeMode.maxRuns) and ${bounds.maxQueuedRuns} are waiting (codeMode.maxQueuedRuns); try again when some have ended`
          })
        }
        admitted++
        return semaphore
          .withPermits(1)(run)
          .pipe(Effect.ensuring(Effect.sync(() => admitted--)))
      })
  }
}

/**
 * The gateway's turns: each gateway its own (its layer, `RunSlots.layer`), so two embedded in one
 * process keep each its settings; code run without one takes turns of the process's (the default,
 * made once). A reference is no requirement: a layer that provides it adds nothing to its output type.
 */
const reference = Context.Reference<SlotsService>("mcp-agentify/RunSlots", { defaultValue: make })
export const RunSlots: Context.Reference<SlotsService> & { readonly layer: Layer.Layer<never> } = Object.assign(reference, {
  layer: Layer.sync(reference, make)
})

/** `run` in a turn of the current gateway's (see RunSlots). */
export const withTurn = <A, E, R>(bounds: Bounds, run: Effect.Effect<A, E, R>): Effect.Effect<A, E | Busy, R> =>
  RunSlots.use((slots) => slots.withTurn(bounds, run))
