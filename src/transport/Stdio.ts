/**
 * JSON-RPC over a byte stream: the MCP stdio transport (and any pipe or socket). Frames are cut by
 * `JsonRpc.FrameDecoder` (newline-delimited JSON or `Content-Length` headers, detected from the
 * first bytes), handed to what the connection opened (the client the Protocol's server connects:
 * see gateway/clients/StreamConnection; or any JSON-RPC peer), and every reply and notification
 * goes out through one writer in the client's framing. `layerStreams` provides the Protocol on a
 * stdin/stdout pair.
 *
 * A connection is an Effect `Stream` in and a `Sink` out, or, for the process's own stdin/stdout,
 * Node's streams read and written directly: the hot path then costs one fiber per request and
 * nothing per chunk (see docs/benchmarks.md).
 */
// The module, not the package's index, which loads every platform module (0.3 s, 30 MB at start-up).
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Cause, Deferred, Effect, Fiber, Latch, Layer, type Scope, type Sink, Stream } from "effect"
import { Readable, Writable } from "node:stream"
import { GatewayConfig } from "../config/Config.js"
import { ErrorCode } from "../protocol/Errors.js"
import { Protocol } from "../gateway/clients/Protocol.js"
import { encode, failure, type Frame, FrameDecoder, type Framing, idOfDropped } from "../jsonrpc/JsonRpc.js"
import * as Peer from "../jsonrpc/Peer.js"
import { encodeBounded } from "./ReplyBound.js"

/** What a connection's frames are handed to: MCP behind the transport, or any JSON-RPC peer. */
export interface Carried {
  /** One frame's text. */
  readonly receive: (text: string) => void
  /** Requests in flight get `graceMs` to finish after end of input, then are cancelled (each still replies). */
  readonly drain: (graceMs: number) => Effect.Effect<void>
  /** Completes when the other side ends the connection itself (MCP's `exit`). */
  readonly ended?: Effect.Effect<void> | undefined
}

/** A plain JSON-RPC peer with these handlers behind a connection. */
export const peer =
  <R>(handlers: Peer.Handlers<R>, sessionId = "stdio") =>
  (out: Peer.Outbox): Effect.Effect<Carried, never, R | Scope.Scope> =>
    Effect.map(Peer.make(handlers, { sessionId }), (p) => ({ receive: (text) => p.receive(text, out), drain: p.drain }))

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
  /** What the frames go to, opened on the connection's outbox (everything sent goes there, in the client's framing). */
  readonly connect: (out: Peer.Outbox) => Effect.Effect<Carried, never, R>
  readonly maxFrameBytes: number
  /** The longest frame written (see ReplyBound); none: no bound (a pipe to a peer of the gateway's own). */
  readonly maxReplyBytes?: number | undefined
  /** Completing this ends the connection like end of input (`exit`). */
  readonly stop?: Deferred.Deferred<void> | undefined
  /** How long in-flight requests may go on after end of input before they are interrupted. */
  readonly drainMs?: number | undefined
  /** Framing for frames sent before the client's first bytes decide it. */
  readonly framing?: Framing | undefined
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
    const latch = Latch.makeUnsafe(false)
    // One string a pull (the frames queued since the last); `Cause.Done` ends the stream.
    const take: Effect.Effect<ReadonlyArray<string>, Cause.Done> = Effect.suspend(() => {
      if (frames.length > 0) {
        const taken = frames
        frames = []
        return Effect.succeed([taken.join("")])
      }
      if (ended) return Cause.done()
      latch.closeUnsafe()
      return Effect.andThen(latch.await, take)
    })
    const fiber = yield* Stream.fromIterableEffectRepeat(take).pipe(
      Stream.run(sink),
      Effect.catchCause((cause) => Effect.logError("cannot write to the client", cause)),
      Effect.forkScoped
    )
    return {
      offer: (frame) => {
        if (frame === "" || ended) return
        frames.push(frame)
        latch.openUnsafe()
      },
      end: Effect.suspend(() => {
        ended = true
        latch.openUnsafe()
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
    const text = frames.join("")
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
          : Effect.callback<void>((resume) => {
              const done = () => resume(Effect.void)
              writable.once("drain", done)
              writable.once("close", done)
              return Effect.sync(() => {
                writable.off("drain", done)
                writable.off("close", done)
              })
            })
      return Effect.andThen(
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
    Effect.callback<Effect.Effect<void>>((resume) => {
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
export const serve = <E, R>(options: ServeOptions<E, R>): Effect.Effect<void, never, Exclude<R, Scope.Scope>> =>
  Effect.scoped(
    Effect.gen(function* () {
      const decoder = new FrameDecoder(options.maxFrameBytes)
      const framing = () => decoder.framing ?? options.framing ?? "ndjson"
      const writer = options.output instanceof Writable ? writableWriter(options.output) : yield* sinkWriter(options.output)
      const maxReply = options.maxReplyBytes
      // Its own logs (a reply refused for its length) go to this connection's loggers, never Effect's default one.
      const log = Effect.runForkWith(yield* Effect.context<never>())
      const out: Peer.Outbox = {
        send:
          maxReply === undefined
            ? (message) => writer.offer(encode(framing(), message))
            : (message) => {
                const bounded = encodeBounded(framing(), message, maxReply)
                if (bounded.refused !== undefined) {
                  log(
                    Effect.logWarning("a message too long for the client was not sent", {
                      ...bounded.refused,
                      maxReplyBytes: maxReply
                    })
                  )
                }
                writer.offer(bounded.frame)
              }
      }
      const carried = yield* options.connect(out)

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
            return carried.receive(frame.text)
        }
      }

      const reader =
        options.input instanceof Readable
          ? readReadable(options.input, decoder, dispatch)
          : options.input.pipe(
              Stream.map((chunk) => decoder.push(chunk)),
              Stream.flattenIterable,
              Stream.concat(Stream.suspend(() => Stream.fromIterable(decoder.end()))),
              Stream.runForEach((frame) => Effect.sync(() => dispatch(frame))),
              Effect.catchCause((cause) =>
                Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logWarning("client input failed", cause)
              )
            )
      const ends = [
        ...(options.stop === undefined ? [] : [Deferred.await(options.stop)]),
        ...(carried.ended === undefined ? [] : [carried.ended])
      ]
      yield* ends.length === 0 ? reader : Effect.raceAll([reader, ...ends])

      // End of input: let in-flight requests finish (bounded), then flush what they wrote.
      yield* carried.drain(options.drainMs ?? 2_000)
      yield* writer.end
    })
  )

/** The client closed its end of stdout: nothing more can reach it, and end of input follows. */
const ignoreStdoutError = (): void => {}

/** The streams a stdio client speaks on. */
export interface StreamsOptions {
  readonly stdin: Readable
  readonly stdout: Writable
}

/**
 * The Protocol on `stdin`/`stdout`: its run serves one client until stdin ends or `exit` arrives;
 * then the backends stop (see gateway/clients/StreamConnection). Nothing but frames is ever
 * written to `stdout`.
 */
export const layerStreams = (options: StreamsOptions): Layer.Layer<Protocol, never, GatewayConfig> =>
  Layer.effect(
    Protocol,
    Effect.gen(function* () {
      const { stdin, stdout } = options
      const config = yield* (yield* GatewayConfig).current
      return {
        run: (server) =>
          Effect.suspend(() => {
            // The writer listens for stdout errors only while it runs: the EPIPE of a last reply written to
            // a client that went away arrives after, and unheard it would crash the process (exit 1, with
            // the backends not yet stopped). Kept for the life of the stream.
            if (!stdout.listeners("error").includes(ignoreStdoutError)) stdout.on("error", ignoreStdoutError)
            return serve({
              // stdin as an Effect stream (NodeStream: a chunk at a time, so its cost is per chunk, not per
              // frame); replies go straight to stdout, a tick's frames in one write (a Sink per reply
              // measured 2-3x the gateway's CPU per call).
              input: NodeStream.fromReadable({ evaluate: () => stdin, onError: (error) => error, closeOnDone: false }),
              output: stdout,
              connect: server.connect,
              maxFrameBytes: config.maxFrameBytes,
              maxReplyBytes: config.maxReplyBytes
            })
          })
      }
    })
  )

/** The Protocol on this process's stdin/stdout. */
export const layerProcess: Layer.Layer<Protocol, never, GatewayConfig> = Layer.suspend(() =>
  layerStreams({ stdin: process.stdin, stdout: process.stdout })
)
