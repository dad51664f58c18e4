/**
 * How many backends start at once: a few per core, so that many starting together (seventy Node
 * servers on two cores) do not starve the gateway, its `ping` included, and each other. Every start
 * takes a slot, those at `initialize` and those on use alike; a start a request waits for (on use)
 * takes the next free slot before any start nobody waits for (and one nobody waited for goes first
 * from when a request starts waiting for it). A start holds its slot at most for a bound (its
 * start-up timeout): one that hangs cannot keep the others out.
 *
 * Effect's semaphore has no priority, hence this one: two queues of waiting starts.
 */
import { Deferred, Duration, Effect, Exit, Fiber } from "effect"

/** A start waiting for a slot: what it is handed, and whose start it is (to hurry it). */
interface Waiting {
  readonly handed: Deferred.Deferred<void>
  readonly owner: object | undefined
}

export class StartSlots {
  private free: number
  /** Starts waiting for a slot: those a request waits for, then the others, each in arrival order. */
  private readonly urgent: Array<Waiting> = []
  private readonly later: Array<Waiting> = []
  /** Owners a request waits for whose start has not asked for its slot yet. */
  private readonly hurried = new WeakSet<object>()

  constructor(readonly size: number) {
    this.free = Math.max(1, size)
  }

  /** How many starts wait for a slot now. */
  waiting(): number {
    return this.urgent.length + this.later.length
  }

  /**
   * A request now waits for `owner`'s start: if it waits for a slot, or asks for one later, it goes
   * before those nobody waits for.
   */
  hurry(owner: object): void {
    const i = this.later.findIndex((w) => w.owner === owner)
    if (i < 0) return void this.hurried.add(owner)
    const [waiting] = this.later.splice(i, 1)
    if (waiting !== undefined) this.urgent.push(waiting)
  }

  /**
   * Runs `start` in a slot, waiting for one first; `urgent` when a request waits for it (`owner`
   * names whose start it is, for `hurry`). The slot is given back when `start` ends, or after
   * `holdMs` when it is still running then.
   */
  with<A, E, R>(urgent: boolean, holdMs: number, start: Effect.Effect<A, E, R>, owner?: object): Effect.Effect<A, E, R> {
    return Effect.suspend(() => {
      // Given back once: at the end of the start, or at `holdMs` if that comes first.
      let held = true
      const giveBack = Effect.sync(() => {
        if (!held) return
        held = false
        this.release()
      })
      return Effect.acquireUseRelease(
        this.take(urgent, owner),
        () =>
          Effect.flatMap(Effect.forkChild(Effect.delay(giveBack, Duration.millis(holdMs))), (timer) =>
            Effect.ensuring(start, Fiber.interrupt(timer))
          ),
        () => giveBack
      )
    })
  }

  /** A slot, now when one is free and nobody waits, else when one is handed over. */
  private take(urgent: boolean, owner: object | undefined): Effect.Effect<void> {
    return Effect.suspend(() => {
      const hurried = owner !== undefined && this.hurried.delete(owner)
      if (this.free > 0 && this.waiting() === 0) {
        this.free--
        return Effect.void
      }
      const handed = Deferred.makeUnsafe<void>()
      ;(urgent || hurried ? this.urgent : this.later).push({ handed, owner })
      return Effect.interruptible(Deferred.await(handed)).pipe(
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            // Still queued: it leaves the queue. Handed a slot as it was interrupted: it goes on.
            if (!this.leave(handed)) this.release()
          })
        )
      )
    })
  }

  /** A slot given back: to the first urgent start waiting, else to the first other one, else free. */
  private release(): void {
    const next = this.urgent.shift() ?? this.later.shift()
    if (next === undefined) this.free++
    else Deferred.doneUnsafe(next.handed, Exit.void)
  }

  private leave(handed: Deferred.Deferred<void>): boolean {
    for (const queue of [this.urgent, this.later]) {
      const i = queue.findIndex((w) => w.handed === handed)
      if (i >= 0) {
        queue.splice(i, 1)
        return true
      }
    }
    return false
  }
}
