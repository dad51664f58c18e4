/**
 * The one engine for requests that arrive: from a client of either era (`Peer`, the stateless
 * `Dispatch`) and from a backend (its sampling, elicitation and roots requests, `Handshake`).
 *
 * In the manner of Effect's RpcServer (`effect/rpc`): each request is a fiber in a `FiberMap` keyed by its
 * id, started at once (so a cancellation in the same chunk finds it), and its exit becomes exactly
 * one reply (or none, where the protocol says so). What differs between the sides is only how an
 * exit reads as a reply (`Options.reply`); keying, duplicate ids, cancellation and the drain at
 * shutdown are the same code for all of them.
 */
import { Cause, Effect, type Exit, type Fiber, FiberMap, type Scope } from "effect"
import { ErrorCode } from "../protocol/Errors.js"
import { failure, type Id, type Response } from "./Message.js"

/** How a request's fiber ended, besides its exit: cancelled by its peer, or stopped with the engine. */
export type Ending = "done" | "cancelled" | "stopped"

export interface Options<A, E> {
  /**
   * The one reply for a finished request; undefined sends none (a backend's own cancelled request).
   * `sent`: what the request carried, as given to `run` (its reply may echo it).
   */
  readonly reply: (id: Id, exit: Exit.Exit<A, E>, ending: Ending, sent: unknown) => Response | undefined
  /**
   * A request whose key is still in flight. "refuse": answered -32600 (one peer's ids are its own
   * and must not be reused while in flight). "allow": run, but not cancellable by key (the
   * stateless era's requests come from many clients that may pick the same ids).
   */
  readonly duplicates: "refuse" | "allow"
}

export interface Inbound<K, A, E, R> {
  /**
   * Starts a request now; its one reply goes to `send` when it ends. Its fiber, for a transport
   * that stops it when its client goes away (undefined: refused at once).
   */
  readonly run: (
    key: K,
    id: Id,
    effect: Effect.Effect<A, E, R>,
    send: (response: Response) => void,
    sent?: unknown
  ) => Fiber.Fiber<A, E> | undefined
  /** The same, as an effect that waits for the reply (a batch's items). */
  readonly reply: (key: K, id: Id, effect: Effect.Effect<A, E, R>, sent?: unknown) => Effect.Effect<Response | undefined>
  /** The peer gave up on a request: it is interrupted and ends as "cancelled". False: none in flight. */
  readonly cancel: (key: K) => boolean
  /** Requests in flight now. */
  readonly size: () => number
  /** Waits up to `graceMs` for the requests in flight, then stops the rest (each still replies). */
  readonly drain: (graceMs: number) => Effect.Effect<void>
}

/** The refusal of an id already in flight, the same words on both sides of the gateway. */
export const idInUse = (id: Id): Response =>
  failure(id, { code: ErrorCode.InvalidRequest, message: `Invalid Request: id ${JSON.stringify(id)} is already in use` })

/**
 * An engine whose requests run in the current scope (closing it stops them, each still replying).
 * It must be made in an interruptible region: its requests inherit the region.
 */
export const make = <K, A, E, R = never>(options: Options<A, E>): Effect.Effect<Inbound<K, A, E, R>, never, R | Scope.Scope> =>
  Effect.gen(function* () {
    const fibers = yield* FiberMap.make<K | symbol, A, E>()
    const runFork = yield* FiberMap.runtime(fibers)<R>()
    const log = Effect.runForkWith(yield* Effect.context<never>())
    /** Keys the peer cancelled: their reply says so (any other interruption is the engine stopping). */
    const cancelled = new Set<K>()
    let inFlight = 0

    /** Starts a request; `done` hears its reply, or undefined when the policy sends none. */
    const start = (
      key: K,
      id: Id,
      effect: Effect.Effect<A, E, R>,
      done: (response: Response | undefined) => void,
      sent: unknown
    ): Fiber.Fiber<A, E> | undefined => {
      let slot: K | symbol = key
      if (FiberMap.hasUnsafe(fibers, key)) {
        if (options.duplicates === "refuse") {
          done(idInUse(id))
          return undefined
        }
        slot = Symbol("duplicate")
      }
      const fiber = runFork(slot, effect)
      inFlight++
      fiber.addObserver((exit) => {
        inFlight--
        const ending: Ending =
          exit._tag === "Success" || !Cause.hasInterruptsOnly(exit.cause)
            ? "done"
            : slot === key && cancelled.delete(key)
              ? "cancelled"
              : "stopped"
        // A defect is a bug of ours: logged here, while the peer gets a reply without internals.
        if (exit._tag === "Failure" && Cause.hasDies(exit.cause))
          log(Effect.logError("request failed with a defect", { id }, exit.cause))
        done(options.reply(id, exit, ending, sent))
      })
      return fiber
    }

    const run = (key: K, id: Id, effect: Effect.Effect<A, E, R>, send: (response: Response) => void, sent?: unknown) =>
      start(
        key,
        id,
        effect,
        (response) => {
          if (response !== undefined) send(response)
        },
        sent
      )

    const reply = (key: K, id: Id, effect: Effect.Effect<A, E, R>, sent?: unknown) =>
      Effect.callback<Response | undefined>((resume) => {
        start(key, id, effect, (response) => resume(Effect.succeed(response)), sent)
      })

    const cancel = (key: K): boolean => {
      const fiber = FiberMap.getUnsafe(fibers, key)
      if (fiber._tag === "None") return false
      cancelled.add(key)
      fiber.value.interruptUnsafe()
      return true
    }

    const drain = (graceMs: number): Effect.Effect<void> =>
      Effect.gen(function* () {
        // Interruptible: a drain at shutdown runs in a finalizer, where a timeout could not
        // otherwise cut the wait short.
        const drained = yield* FiberMap.awaitEmpty(fibers).pipe(
          Effect.ignore,
          Effect.interruptible,
          Effect.timeoutOption(graceMs)
        )
        if (drained._tag === "Some") return
        yield* Effect.logWarning("stopping requests still in flight", { count: inFlight })
        yield* Effect.sync(() => {
          for (const [, fiber] of fibers) fiber.interruptUnsafe()
        })
        // Bounded: a request stuck in an uninterruptible region must not hold the stop.
        yield* FiberMap.awaitEmpty(fibers).pipe(Effect.ignore, Effect.interruptible, Effect.timeoutOption(1_000))
      })

    const inbound: Inbound<K, A, E, R> = { run, reply, cancel, size: () => inFlight, drain }
    return inbound
  })
