/**
 * The server side of one JSON-RPC session, whatever carries it: concurrent dispatch of requests,
 * notifications and batches, id handling, cancellation, and the one reply per request.
 *
 * It takes JSON text (a frame's, or an HTTP body's) and sends message objects to an `Outbox` the
 * transport gives with each message: stdio's is the connection's single writer, an HTTP POST's is
 * that POST's response (JSON, or an SSE stream once a notification comes before the reply). A
 * request's own notifications (progress, log messages during it) go to the same outbox as its
 * reply. The rules it keeps: every request with an id gets exactly one reply, a notification
 * never gets one, and a bad message never stops the messages after it.
 */
import { Cause, Effect, Exit, FiberSet, Option, type Scope } from "effect"
import * as Inbound from "./Inbound.js"
import { ErrorCode, type GatewayError, toRpcError } from "../protocol/Errors.js"
import type { EventsService } from "../observability/Events.js"
import {
  classify,
  failure,
  type Id,
  isId,
  notification as notificationMessage,
  type Notification,
  type Request,
  type Response,
  success
} from "./JsonRpc.js"
import * as Telemetry from "../observability/Telemetry.js"
import * as Secrets from "../observability/Secrets.js"
import { field, messageOf } from "../json/Json.js"
import * as Depth from "../json/Depth.js"

/** Where a message's replies and its requests' notifications go. */
export interface Outbox {
  /** A message object (or a batch's array of replies); never throws. */
  readonly send: (message: unknown) => void
  /**
   * False when only the reply can reach the client (an HTTP POST that accepts JSON only): what
   * else is sent is dropped, so the gateway's own requests must go another way.
   */
  readonly streams?: boolean | undefined
}

/** What a handler can do besides returning its result. */
export interface RequestContext {
  readonly id: Id
  /** Sends a notification tied to this request (progress, log messages): it travels with the reply. */
  readonly notify: (method: string, params: unknown) => Effect.Effect<void>
  /** The same, synchronously, for callbacks. */
  readonly notifyUnsafe: (method: string, params: unknown) => void
  /** Sends any message with this request's reply (a request of the gateway's); false if it cannot. */
  readonly send: (message: unknown) => boolean
}

export interface Handlers<R> {
  /** A request's result; a failure becomes its error reply. */
  readonly request: (request: Request, context: RequestContext) => Effect.Effect<unknown, GatewayError, R>
  /** Notifications other than cancellation (handled here). */
  readonly notification: (notification: Notification) => Effect.Effect<void, never, R>
  /** The client's answer to a request of the gateway's; false if nothing waits for it. */
  readonly response?: ((id: Id | null, payload: Readonly<Record<string, unknown>>) => boolean) | undefined
}

export interface Options {
  /** Names the session in events. */
  readonly sessionId: string
  readonly events?: EventsService | undefined
}

export interface Peer {
  /** Handles one JSON text: a message or a batch. Replies (or a -32700) go to `out`. */
  readonly receive: (text: string, out: Outbox) => void
  /** Handles one message or batch already parsed. */
  readonly receiveValue: (value: unknown, out: Outbox) => void
  /** Requests in flight now. */
  readonly inFlight: () => number
  /**
   * Waits up to `graceMs` for the requests in flight, then cancels the rest, each still sending
   * its one reply (-32800).
   */
  readonly drain: (graceMs: number) => Effect.Effect<void>
}

/**
 * A request's one reply: its result, its error (echoing what the request sent as sent), -32800
 * when cancelled, -32603 for a defect (a bug of ours).
 */
const replyFor = (id: Id, exit: Exit.Exit<unknown, GatewayError>, _ending: Inbound.Ending, sent: unknown): Response => {
  if (Exit.isSuccess(exit)) return success(id, exit.value === undefined ? null : exit.value)
  const failed = Cause.findErrorOption(exit.cause)
  if (Option.isSome(failed)) return failure(id, toRpcError(failed.value, sent))
  if (Cause.hasInterruptsOnly(exit.cause)) return failure(id, { code: ErrorCode.RequestCancelled, message: "Request cancelled" })
  // The client still gets its one reply, without internals.
  const squashed = Cause.squash(exit.cause)
  return failure(id, {
    code: ErrorCode.InternalError,
    message: `Internal error: ${Secrets.scrub(squashed instanceof Error ? squashed.message : "unexpected failure")}`
  })
}

/** A session's peer; its requests run in the current scope and are interrupted when it closes. */
export const make = <R>(handlers: Handlers<R>, options: Options): Effect.Effect<Peer, never, R | Scope.Scope> =>
  Effect.gen(function* () {
    const events = options.events
    // The engine's fibers start at once, from anywhere, a Node callback included. The peer must be
    // made in an interruptible region (its requests inherit it), which the transports see to.
    const inbound = yield* Inbound.make<Id, unknown, GatewayError, R>({ duplicates: "refuse", reply: replyFor })
    const runFork = yield* FiberSet.runtime(yield* FiberSet.make<unknown, unknown>())<R>()

    const traced = (out: Outbox): Outbox =>
      events === undefined
        ? out
        : {
            send: (message) => {
              if (events.active()) {
                events.publish({ _tag: "ClientMessage", at: Date.now(), sessionId: options.sessionId, direction: "out", message })
              }
              out.send(message)
            },
            streams: out.streams
          }

    const contextFor = (request: Request, out: Outbox): RequestContext => {
      const notifyUnsafe = (method: string, params: unknown) => out.send(notificationMessage(method, params))
      const send = (message: unknown) => {
        if (out.streams === false) return false
        out.send(message)
        return true
      }
      return { id: request.id, notifyUnsafe, send, notify: (method, params) => Effect.sync(() => notifyUnsafe(method, params)) }
    }

    // Suspended: a handler that throws while building its effect is a defect of that request only.
    const handle = (request: Request, out: Outbox): Effect.Effect<unknown, GatewayError, R> => {
      const handled = Effect.suspend(() => handlers.request(request, contextFor(request, out)))
      return Telemetry.isActive()
        ? Telemetry.serverSpan(request.method, request.id, request.params, options.sessionId, handled)
        : handled
    }

    const start = (request: Request, out: Outbox): void => {
      inbound.run(request.id, request.id, handle(request, out), (response) => out.send(response), [
        request.method,
        request.params
      ])
    }

    /** A request in a batch: its reply joins the batch's. */
    const runRequest = (request: Request, out: Outbox) =>
      inbound.reply(request.id, request.id, handle(request, out), [request.method, request.params])

    const cancelRequest = (params: unknown) => {
      const target = field(params, "requestId") ?? field(params, "id")
      if (!isId(target)) return Effect.void
      if (!inbound.cancel(target)) return Effect.logDebug("cancellation for no request in flight", { id: target })
      return Effect.logDebug("request cancelled by the client", { id: target, reason: field(params, "reason") })
    }

    /** One message's reply, or none for a notification. */
    const handleOne = (value: unknown, out: Outbox): Effect.Effect<Response | undefined, never, R> => {
      const incoming = classify(value)
      switch (incoming._tag) {
        case "Request":
          return runRequest(incoming.request, out)
        case "Notification": {
          const { method, params } = incoming.notification
          if (method === "notifications/cancelled" || method === "$/cancelRequest") {
            return Effect.as(cancelRequest(params), undefined)
          }
          return Effect.as(
            handlers
              .notification(incoming.notification)
              .pipe(Effect.catchCause((cause) => Effect.logWarning("notification handler failed", { method }, cause))),
            undefined
          )
        }
        case "Response":
          if (handlers.response?.(incoming.id, incoming.payload) === true) return Effect.succeed(undefined)
          return Effect.as(Effect.logDebug("a response from the client to no request of ours", { id: incoming.id }), undefined)
        case "Invalid":
          return Effect.succeed(
            failure(incoming.id, { code: ErrorCode.InvalidRequest, message: `Invalid Request: ${incoming.reason}` })
          )
      }
    }

    /**
     * Handles one message synchronously, in arrival order: a request's fiber is forked (and starts)
     * here, a notification runs here until it first suspends, so a cancellation always finds a
     * request that came before it.
     */
    const receiveValue = (value: unknown, rawOut: Outbox): void => {
      if (events?.active()) {
        events.publish({ _tag: "ClientMessage", at: Date.now(), sessionId: options.sessionId, direction: "in", message: value })
      }
      const out = traced(rawOut)
      if (Array.isArray(value)) {
        if (value.length === 0) {
          return out.send(failure(null, { code: ErrorCode.InvalidRequest, message: "Invalid Request: empty batch" }))
        }
        runFork(
          Effect.forEach(value, (item) => handleOne(item, out), { concurrency: "unbounded" }).pipe(
            Effect.map((replies) => {
              const present = replies.filter((r): r is Response => r !== undefined)
              if (present.length > 0) out.send(present)
            })
          )
        )
        return
      }
      const incoming = classify(value)
      if (incoming._tag === "Request") return start(incoming.request, out)
      runFork(
        Effect.suspend(() => handleOne(value, out)).pipe(
          Effect.map((r) => {
            if (r !== undefined) out.send(r)
          })
        )
      )
    }

    const receive = (text: string, out: Outbox): void => {
      let value: unknown
      try {
        value = Depth.parse(text)
      } catch (error) {
        return traced(out).send(failure(null, { code: ErrorCode.ParseError, message: `Parse error: ${messageOf(error)}` }))
      }
      receiveValue(value, out)
    }

    return { receive, receiveValue, inFlight: inbound.size, drain: inbound.drain }
  })
