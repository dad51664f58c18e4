/**
 * JSON-RPC over a byte stream: the MCP stdio transport (and any pipe or socket). Frames are cut by
 * `JsonRpc.FrameDecoder` (newline-delimited JSON or `Content-Length` headers, detected from the
 * first bytes), handed to a `Peer`, and every reply and notification goes out through one writer
 * in the client's framing.
 *
 * A connection is an Effect `Stream` in and a `Sink` out, or, for the process's own stdin/stdout,
 * Node's streams read and written directly: the hot path then costs one fiber per request and
 * nothing per chunk (see docs/benchmarks.md).
 */
// The module, not the package's index, which loads every platform module (0.3 s, 30 MB at start-up).
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Cause, Chunk, Deferred, Effect, Either, Exit, Fiber, FiberSet, Option, Scope, type Sink, Stream } from "effect"
import { Readable, Writable } from "node:stream"
import { Backends, type BackendsService, startOptionsOf } from "../backend/Backends.js"
import { SHARED_CLIENT_CAPABILITIES } from "../gateway/ClientAsk.js"
import { GatewayConfig, type ResolvedConfig } from "../config/Config.js"
import { ErrorCode } from "../protocol/Errors.js"
import { Events } from "../observability/Events.js"
import { Gateway, type GatewayService } from "../gateway/Gateway.js"
import type { InputBridge } from "../gateway/InputBridge.js"
import { Session, type Target } from "../gateway/Session.js"
import type { EventsService } from "../observability/Events.js"
import {
  classify,
  encode,
  failure,
  type Frame,
  FrameDecoder,
  type Framing,
  idOfDropped,
  notification
} from "../jsonrpc/JsonRpc.js"
import * as Peer from "../jsonrpc/Peer.js"
import { encodeBounded } from "./ReplyBound.js"
import { STATELESS_PROTOCOL_VERSION } from "../protocol/Mcp.js"
import * as Dispatch from "../gateway/Dispatch.js"
import * as Era from "../gateway/Era.js"
import { field } from "../data/Json.js"

export interface ServeOptions<E, R> {
  /**
   * The client's bytes. A Node `Readable` (stdin) is read directly from its `data` events: the
   * hot path then runs no stream pipeline per chunk.
   */
  readonly input: Stream.Stream<Uint8Array, E> | Readable
  /**
   * Where frames go. A Node `Writable` (stdout) is written directly, the frames of one tick in one
   * `write`: no writer fiber, no stream pipeline per frame.
   */
  readonly output: Sink.Sink<unknown, string, never, unknown> | Writable
  /** The method table, or a function that opens a session on this connection and returns it. */
  readonly handlers: Peer.Handlers<R> | ((connection: Connection) => Effect.Effect<Peer.Handlers<R>, never, R | Scope.Scope>)
  readonly maxFrameBytes: number
  /** The longest frame written (see ReplyBound); none: no bound (a pipe to a peer of the gateway's own). */
  readonly maxReplyBytes?: number | undefined
  /**
   * Sees each frame's text before the peer does; true when it took the frame. The stateless era's
   * lock lives here: the connection's first message decides its era.
   */
  readonly intercept?: ((text: string, out: Peer.Outbox) => boolean) | undefined
  /** Completing this ends the connection like end of input (`exit`). */
  readonly stop?: Deferred.Deferred<void> | undefined
  /** How long in-flight requests may go on after end of input before they are interrupted. */
  readonly drainMs?: number | undefined
  /** Framing for frames sent before the client's first bytes decide it. */
  readonly framing?: Framing | undefined
  readonly sessionId?: string | undefined
  readonly events?: EventsService | undefined
}

/** The connection as its session sees it. */
export interface Connection {
  /** Sends a notification in the client's framing. */
  readonly notify: (method: string, params: unknown) => Effect.Effect<void>
  readonly notifyUnsafe: (method: string, params: unknown) => void
  /** Sends any message (a request of the gateway's) in the client's framing. */
  readonly send: (message: unknown) => void
  /** Requests in flight now. */
  readonly inFlight: () => number
}

/** The single writer of a connection: frames never interleave, and `end` flushes them all. */
interface Writer {
  readonly offer: (frame: string) => void
  readonly end: Effect.Effect<void>
}

/**
 * Frames for a `Sink`, written by one fiber. They wait in a plain array, swapped out whole when
 * the fiber takes it, so the frames queued since the last write leave in one write.
 *
 * Not an Effect `Queue`: its linked list leaves each removed node pointing at the next, and once
 * one node survives into V8's old generation it keeps every later node (and frame) alive through
 * scavenges, so about a kilobyte per call was promoted and RSS grew until the next full GC.
 */
const sinkWriter = (sink: Sink.Sink<unknown, string, never, unknown>): Effect.Effect<Writer, never, Scope.Scope> =>
  Effect.gen(function* () {
    let frames: Array<string> = []
    let ended = false
    const latch = Effect.unsafeMakeLatch(false)
    const take: Effect.Effect<Chunk.Chunk<string>, Option.Option<never>> = Effect.suspend(() => {
      if (frames.length > 0) {
        const taken = frames
        frames = []
        return Effect.succeed(Chunk.of(taken.length === 1 ? taken[0]! : taken.join("")))
      }
      if (ended) return Effect.fail(Option.none())
      latch.unsafeClose()
      return Effect.zipRight(latch.await, take)
    })
    const fiber = yield* Stream.repeatEffectChunkOption(take).pipe(
      Stream.run(sink),
      Effect.catchAllCause((cause) => Effect.logError("cannot write to the client", cause)),
      Effect.forkScoped
    )
    return {
      offer: (frame) => {
        if (frame === "" || ended) return
        frames.push(frame)
        latch.unsafeOpen()
      },
      end: Effect.suspend(() => {
        ended = true
        latch.unsafeOpen()
        return Fiber.await(fiber)
      })
    }
  })

/**
 * Frames for a Node `Writable`, written directly: those offered in one tick (the replies of every
 * fiber that finished in it) are joined into one `write`, one syscall under load.
 */
const writableWriter = (writable: Writable): Writer => {
  let frames: Array<string> = []
  let scheduled = false
  let failed: Error | undefined
  const onError = (error: Error) => {
    failed ??= error
  }
  writable.on("error", onError)
  const flush = () => {
    scheduled = false
    if (frames.length === 0 || failed !== undefined) return
    const text = frames.length === 1 ? frames[0]! : frames.join("")
    frames = []
    writable.write(text)
  }
  return {
    offer: (frame) => {
      if (frame === "" || failed !== undefined) return
      frames.push(frame)
      if (!scheduled) {
        scheduled = true
        process.nextTick(flush)
      }
    },
    end: Effect.suspend(() => {
      flush()
      const drained: Effect.Effect<void> =
        failed !== undefined || !writable.writableNeedDrain
          ? Effect.void
          : Effect.async<void>((resume) => {
              const done = () => resume(Effect.void)
              writable.once("drain", done)
              writable.once("close", done)
              return Effect.sync(() => {
                writable.off("drain", done)
                writable.off("close", done)
              })
            })
      return Effect.zipRight(
        drained,
        Effect.suspend(() => {
          writable.off("error", onError)
          return failed === undefined ? Effect.void : Effect.logError("cannot write to the client", failed)
        })
      )
    })
  }
}

/**
 * Reads a Node `Readable` until it ends (or fails), each chunk's frames dispatched in the `data`
 * callback itself. Interrupting it stops listening.
 */
const readReadable = (readable: Readable, decoder: FrameDecoder, dispatch: (frame: Frame) => void): Effect.Effect<void> =>
  Effect.flatten(
    Effect.async<Effect.Effect<void>>((resume) => {
      const onData = (chunk: Buffer | string) => {
        for (const frame of decoder.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk)) dispatch(frame)
      }
      const finish = (outcome: Effect.Effect<void>) => {
        stop()
        resume(Effect.succeed(outcome))
      }
      const onEnd = () => {
        for (const frame of decoder.end()) dispatch(frame)
        finish(Effect.void)
      }
      const onError = (error: Error) => finish(Effect.logWarning("client input failed", error))
      const stop = () => {
        readable.off("data", onData)
        readable.off("end", onEnd)
        readable.off("close", onEnd)
        readable.off("error", onError)
      }
      if (readable.readableEnded || readable.destroyed) return onEnd()
      readable.on("data", onData)
      readable.once("end", onEnd)
      // Destroyed without an end (the client went away).
      readable.once("close", onEnd)
      readable.once("error", onError)
      return Effect.sync(stop)
    })
  )

/**
 * Serves one connection until its input ends (or `stop` completes), then waits up to `drainMs`
 * for requests in flight and flushes every reply before returning.
 */
export const serve = <E, R>(options: ServeOptions<E, R>): Effect.Effect<void, never, R> =>
  Effect.scoped(
    Effect.gen(function* () {
      const decoder = new FrameDecoder(options.maxFrameBytes)
      const framing = () => decoder.framing ?? options.framing ?? "ndjson"
      const writer = options.output instanceof Writable ? writableWriter(options.output) : yield* sinkWriter(options.output)
      const maxReply = options.maxReplyBytes
      const out: Peer.Outbox = {
        send:
          maxReply === undefined
            ? (message) => writer.offer(encode(framing(), message))
            : (message) => {
                const bounded = encodeBounded(framing(), message, maxReply)
                if (bounded.refused !== undefined) {
                  Effect.runFork(
                    Effect.logWarning("a message too long for the client was not sent", {
                      ...bounded.refused,
                      maxReplyBytes: maxReply
                    })
                  )
                }
                writer.offer(bounded.frame)
              }
      }
      const notifyUnsafe = (method: string, params: unknown) => out.send(notification(method, params))
      let peer: Peer.Peer | undefined
      const connection: Connection = {
        notifyUnsafe,
        send: out.send,
        notify: (method, params) => Effect.sync(() => notifyUnsafe(method, params)),
        inFlight: () => peer?.inFlight() ?? 0
      }
      const handlers = typeof options.handlers === "function" ? yield* options.handlers(connection) : options.handlers
      peer = yield* Peer.make(handlers, { sessionId: options.sessionId ?? "stdio", events: options.events })
      const live = peer

      const dispatch = (frame: Frame): void => {
        switch (frame._tag) {
          case "TooLarge":
            return out.send(
              failure(idOfDropped(frame), {
                code: ErrorCode.InvalidRequest,
                message: `Invalid Request: frame of ${frame.bytes} bytes exceeds the limit of ${options.maxFrameBytes} bytes`
              })
            )
          case "BadHeader":
            return out.send(failure(null, { code: ErrorCode.ParseError, message: `Parse error: ${frame.detail}` }))
          case "Text":
            if (options.intercept?.(frame.text, out) === true) return
            return live.receive(frame.text, out)
        }
      }

      const reader =
        options.input instanceof Readable
          ? readReadable(options.input, decoder, dispatch)
          : options.input.pipe(
              Stream.mapConcat((chunk) => decoder.push(chunk)),
              Stream.concat(Stream.suspend(() => Stream.fromIterable(decoder.end()))),
              Stream.runForEach((frame) => Effect.sync(() => dispatch(frame))),
              Effect.catchAllCause((cause) =>
                Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logWarning("client input failed", cause)
              )
            )
      yield* options.stop === undefined ? reader : Effect.raceFirst(reader, Deferred.await(options.stop))

      // End of input: let in-flight requests finish (bounded), then flush what they wrote.
      yield* live.drain(options.drainMs ?? 2_000)
      yield* writer.end
    })
  )

/** `subscriptions/listen` streams one stdio connection may hold. */
const MAX_STDIO_LISTENERS = 64

/**
 * The era lock of a stdio connection: when its first message is a request of the stateless era
 * (2026-07-28), every message after it goes to the era's dispatcher (the backends start with that
 * first request, telling them what any request may relay); otherwise the session era's peer serves
 * them all and this lets every frame through.
 */
const statelessEra = (gateway: GatewayService, backends: BackendsService, config: ResolvedConfig, target: Target) =>
  Effect.gen(function* () {
    const started: Effect.Effect<void> = yield* Effect.cached(
      backends.start(config.backends, startOptionsOf(config, SHARED_CLIENT_CAPABILITIES))
    )
    const dispatcher: Dispatch.Dispatcher = yield* Dispatch.make(gateway, backends, {
      transport: "stdio",
      ready: started,
      // They last as long as the connection: a client that keeps opening them is refused past a bound.
      listenRefusal: () =>
        dispatcher.listening() >= MAX_STDIO_LISTENERS
          ? { status: 503, message: `${MAX_STDIO_LISTENERS} listen streams are open on this connection` }
          : undefined
    })
    const runFork = yield* FiberSet.runtime(yield* FiberSet.make<unknown, never>())<never>()
    const listeners = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(listeners, Exit.void))
    let era: "undecided" | "session" | "stateless" = "undecided"
    const intercept = (text: string, out: Peer.Outbox): boolean => {
      if (era === "session") return false
      let value: unknown
      try {
        value = JSON.parse(text)
      } catch {
        return era === "stateless"
          ? (out.send(failure(null, { code: ErrorCode.ParseError, message: "Parse error" })), true)
          : false
      }
      if (era === "undecided") era = Era.isStateless(value) ? "stateless" : "session"
      if (era === "session") return false
      const incoming = classify(value)
      if (incoming._tag === "Invalid") {
        out.send(failure(incoming.id, { code: ErrorCode.InvalidRequest, message: `Invalid Request: ${incoming.reason}` }))
        return true
      }
      if (incoming._tag === "Notification") {
        const { method, params } = incoming.notification
        if (method === "notifications/cancelled") dispatcher.cancel(field(params, "requestId"))
        return true
      }
      if (incoming._tag !== "Request") return true
      const request = incoming.request
      // The era is this connection's: a session-era handshake on it is a removed method, not bad _meta.
      if (request.method === "initialize") {
        out.send(
          failure(request.id, {
            code: ErrorCode.MethodNotFound,
            message: `Method not found: initialize (this connection speaks ${STATELESS_PROTOCOL_VERSION})`
          })
        )
        return true
      }
      const admitted = dispatcher.admit(request, null)
      if (Either.isLeft(admitted)) {
        out.send(admitted.left.response)
        return true
      }
      if (request.method === "subscriptions/listen") {
        runFork(
          Scope.extend(dispatcher.listen(request, target, out), listeners).pipe(
            Effect.map((refusal) => {
              if (refusal !== undefined)
                out.send(failure(request.id, { code: ErrorCode.InternalError, message: refusal.message }))
            })
          )
        )
        return true
      }
      dispatcher.serve(request, admitted.right, target, out)
      return true
    }
    return { intercept }
  })

/** The client closed its end of stdout: nothing more can reach it, and end of input follows. */
const ignoreStdoutError = (): void => {}

/** The streams a stdio client speaks on, and the view it is served. */
export interface StreamsOptions {
  readonly stdin: Readable
  readonly stdout: Writable
  /** A profile's view of the aggregate (`--profile`); the whole aggregate without. */
  readonly profile?: string | undefined
}

/**
 * Serves the gateway on `stdin`/`stdout` until stdin ends or `exit` arrives, then stops every
 * backend. Nothing but frames is ever written to `stdout`.
 */
export const serveStreams = (
  options: StreamsOptions
): Effect.Effect<void, never, Gateway | InputBridge | GatewayConfig | Backends | Events> =>
  Effect.scoped(
    Effect.gen(function* () {
      const { stdin, stdout, profile } = options
      // The writer listens for stdout errors only while it runs: the EPIPE of a last reply written to
      // a client that went away arrives after, and unheard it would crash the process (exit 1, with
      // the backends not yet stopped). Kept for the life of the stream.
      if (!stdout.listeners("error").includes(ignoreStdoutError)) stdout.on("error", ignoreStdoutError)
      const gateway = yield* Gateway
      const config = yield* (yield* GatewayConfig).current
      const backends = yield* Backends
      const events = yield* Events
      let connection: Connection | undefined
      const target = { _tag: "Aggregate", profile } as const
      const session = new Session({
        id: "stdio",
        transport: "stdio",
        target,
        send: (message) => {
          if (connection === undefined) return false
          connection.send(message)
          return true
        }
      })
      const era = yield* statelessEra(gateway, backends, config, target)
      yield* serve({
        intercept: era.intercept,
        // stdin as an @effect/platform stream (a chunk at a time, so its cost is per chunk, not per
        // frame); replies go straight to stdout, a tick's frames in one write (a Sink per reply
        // measured 2-3x the gateway's CPU per call).
        input: NodeStream.fromReadable(
          () => stdin,
          (error) => error,
          { closeOnDone: false }
        ),
        output: stdout,
        handlers: (c) => {
          connection = c
          return gateway.open(session)
        },
        maxFrameBytes: config.maxFrameBytes,
        maxReplyBytes: config.maxReplyBytes,
        stop: session.ended,
        sessionId: session.id,
        events
      })
      yield* Effect.logInfo("client disconnected: stopping backends")
      yield* backends.stopAll
    })
  )

/** This process's stdin/stdout, with a `profile` (`--profile`) or the whole aggregate. */
export const serveProcessAs = (
  profile: string | undefined
): Effect.Effect<void, never, Gateway | InputBridge | GatewayConfig | Backends | Events> =>
  serveStreams({ stdin: process.stdin, stdout: process.stdout, profile })

/** `serveProcessAs` the whole aggregate. */
export const serveProcess = serveProcessAs(undefined)
