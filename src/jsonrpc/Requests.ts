/**
 * The requesting side of JSON-RPC, one engine wherever the gateway sends requests (to its backends
 * and to its clients): ids, the table of pending requests, an optional timeout, cancellation when
 * the caller goes away, delivery in order behind the peer's notifications, and exactly one outcome
 * per id (a reply, a timeout, a cancellation or the peer's end, whichever comes first).
 *
 * Plain mutable state on the one JS thread: the hot path allocates one `Effect.callback` per request
 * and no fiber.
 */
import { Effect, Exit } from "effect"

/** What the engine needs from its owner: the wire, and the owner's own wording of failures. */
export interface Peer<E, R = undefined> {
  /** Writes the request (`route`: where the caller asked it to go); an error refuses it at once. */
  readonly send: (id: number, method: string, params: unknown, route: R | undefined) => E | undefined
  /** The request was given up (timed out, or its caller went away): tell the peer, if it is told. */
  readonly cancelled: (id: number, method: string, reason: string, route: R | undefined) => void
  /** The error of a request whose answer took longer than its timeout. */
  readonly timedOut: (method: string, ms: number) => E
  /** The peer's error reply, as the caller's error. */
  readonly failed: (method: string, error: unknown) => E
  /** Refuses a request while `limit` already wait (see `Options.limit`). */
  readonly full?: (method: string, limit: number) => E
}

export interface Options {
  /** At most this many requests wait at once; a further one is refused with `Peer.full`. */
  readonly limit?: number
  /** Sent when the caller goes away (`notifications/cancelled`'s reason). */
  readonly interruptedReason?: string
}

interface Pending<E, R> {
  readonly route: R | undefined
  readonly resume: (exit: Exit.Exit<unknown, E>) => void
  readonly timer: ReturnType<typeof setTimeout> | undefined
  readonly method: string
  readonly timeoutMs: number
  /** Its outcome waits for the notifications the peer sent before its reply (see `request`). */
  readonly ordered: boolean
}

export class Requests<E, R = undefined> {
  private readonly pending = new Map<number, Pending<E, R>>()
  private nextId = 1
  /** When a request last timed out (a sign of a hung peer). */
  timedOutAt = 0
  /**
   * Notifications received from the peer and handed on by its relay: an ordered request's outcome
   * waits for those the peer sent before its reply, so a client sees a call's progress before its result.
   */
  private notificationsReceived = 0
  private notificationsRelayed = 0
  private readonly relayWaiters = new Set<{ readonly upTo: number; readonly resume: () => void }>()
  private relayStopped = false

  constructor(
    private readonly peer: Peer<E, R>,
    private readonly options: Options = {}
  ) {}

  get size(): number {
    return this.pending.size
  }

  /** The method of a pending request, if `id` is one. */
  methodOf(id: number): string | undefined {
    return this.pending.get(id)?.method
  }

  /** The id of the only pending request, if exactly one waits. */
  sole(): number | undefined {
    if (this.pending.size !== 1) return undefined
    for (const id of this.pending.keys()) return id
    return undefined
  }

  /** An id no request of this engine will use: a request whose answer nobody waits for. */
  takeId(): number {
    return this.nextId++
  }

  /**
   * Sends a request and waits for its outcome. `timeoutMs` undefined waits as long as the peer
   * lives. `ordered`: the outcome is delivered once every notification the peer sent before the
   * reply has been relayed (see `noteNotification`, `markRelayed`); without notifications in
   * flight this costs one comparison. Interrupting the wait cancels the request. `route` is handed
   * to the peer's `send` and `cancelled` (which stream it goes on).
   */
  request(method: string, params: unknown, timeoutMs?: number, ordered = false, route?: R): Effect.Effect<unknown, E> {
    // One parameter: Effect.callback then allocates no AbortController.
    return Effect.callback<unknown, E>((resume) => {
      const limit = this.options.limit
      if (limit !== undefined && this.pending.size >= limit && this.peer.full !== undefined) {
        return resume(Exit.fail(this.peer.full(method, limit)))
      }
      const id = this.nextId++
      const refused = this.peer.send(id, method, params, route)
      if (refused !== undefined) return resume(Exit.fail(refused))
      const timer = timeoutMs === undefined ? undefined : setTimeout(this.onTimeout, timeoutMs, id)
      this.pending.set(id, { route, resume, timer, method, timeoutMs: timeoutMs ?? 0, ordered })
      return Effect.sync(() => this.cancel(id, this.options.interruptedReason ?? "cancelled by the client"))
    })
  }

  /** The peer's reply to `id`: its request's outcome. False if no request waits for it. */
  settle(id: number, reply: { readonly result?: unknown; readonly error?: unknown }): boolean {
    const pending = this.take(id)
    if (pending === undefined) return false
    this.deliver(
      pending,
      reply.error !== undefined ? Exit.fail(this.peer.failed(pending.method, reply.error)) : Exit.succeed(reply.result)
    )
    return true
  }

  /** Fails one pending request with the owner's error (a reply it could not read). */
  fail(id: number, error: (method: string) => E): boolean {
    const pending = this.take(id)
    if (pending === undefined) return false
    pending.resume(Exit.fail(error(pending.method)))
    return true
  }

  /** The peer is gone: every pending request fails, each with its own method named. */
  failAll(error: (method: string) => E): void {
    const pending = [...this.pending.values()]
    this.pending.clear()
    for (const p of pending) {
      if (p.timer !== undefined) clearTimeout(p.timer)
      p.resume(Exit.fail(error(p.method)))
    }
  }

  private take(id: number): Pending<E, R> | undefined {
    const pending = this.pending.get(id)
    if (pending === undefined) return undefined
    this.pending.delete(id)
    if (pending.timer !== undefined) clearTimeout(pending.timer)
    return pending
  }

  private onTimeout = (id: number) => {
    const pending = this.pending.get(id)
    if (pending === undefined) return
    this.pending.delete(id)
    this.timedOutAt = Date.now()
    this.peer.cancelled(id, pending.method, `timed out after ${pending.timeoutMs} ms`, pending.route)
    pending.resume(Exit.fail(this.peer.timedOut(pending.method, pending.timeoutMs)))
  }

  /** The caller went away (interrupted): tell the peer, as MCP cancellation says. */
  private cancel(id: number, reason: string) {
    const pending = this.take(id)
    if (pending !== undefined) this.peer.cancelled(id, pending.method, reason, pending.route)
  }

  // -- order behind notifications

  private deliver(pending: Pending<E, R>, exit: Exit.Exit<unknown, E>) {
    const upTo = this.notificationsReceived
    if (!pending.ordered || upTo <= this.notificationsRelayed || this.relayStopped) return pending.resume(exit)
    this.relayWaiters.add({ upTo, resume: () => pending.resume(exit) })
  }

  /** The peer sent a notification that its relay will hand on. */
  noteNotification(): void {
    this.notificationsReceived++
  }

  /** Called by the relay after each notification (relayed or not). */
  markRelayed(): void {
    this.notificationsRelayed++
    for (const waiter of this.relayWaiters) {
      if (waiter.upTo <= this.notificationsRelayed) {
        this.relayWaiters.delete(waiter)
        waiter.resume()
      }
    }
  }

  /** The relay is gone: nobody waits for it any more. */
  stopRelay(): void {
    this.relayStopped = true
    for (const waiter of this.relayWaiters) waiter.resume()
    this.relayWaiters.clear()
  }
}
