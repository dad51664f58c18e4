/**
 * What every remote transport shares: a channel (see ../Channel) whose work runs in fibers of its
 * own scope, so that closing it interrupts every request, stream and socket at once; messages
 * handed to the connection as they arrive; errors for requests the transport failed; the loss
 * of the server as the channel's end (the supervisor then reconnects, with its backoff).
 */
import { Effect, type Fiber, FiberSet, type Scope } from "effect"
import * as Secrets from "../../observability/Secrets.js"
import type { Channel, Outbound, Outgoing, Receiver, WriteOutcome } from "../Channel.js"
import { isObject } from "../../json/Json.js"
import * as Depth from "../../json/Depth.js"

/** "http" is Streamable HTTP that falls back to HTTP+SSE when the server does not speak it (as VS Code does). */
export type Transport = "http" | "streamable-http" | "sse" | "websocket"

export interface Options {
  readonly url: string
  readonly transport: Transport
  /** Sent with every HTTP request and the WebSocket handshake (credentials: never logged). */
  readonly headers: Readonly<Record<string, string>>
  /** The largest message accepted: an SSE event, a JSON body or a WebSocket message. */
  readonly maxFrameBytes: number
  /** OAuth access tokens for this server (see auth/Client), when it may need them. */
  readonly tokens?: Authorizer | undefined
}

/** Where a remote channel gets its `Authorization` header, and a new one after a 401. */
export interface Authorizer {
  /** The header for the next request; undefined: send none (nothing stored, none required). */
  readonly header: () => Promise<string | undefined>
  /** The server answered 401 with this challenge: a new header, or a rejection (a `NeedsAuth`). */
  readonly rejected: (challenge: string | null) => Promise<string | undefined>
}

/** The marker in an error reply's data that a person must sign in (the backend is then "needs auth"). */
export const NEEDS_AUTH = "needsAuth"

/**
 * The marker in an error reply's data that the server wants a token with more scope for this
 * request (403 `insufficient_scope`): the scopes its challenge names. The gateway asks the user to
 * sign in for them and tries once more (see gateway/pipeline/stages/Credentials).
 */
export const INSUFFICIENT_SCOPE = "insufficientScope"

/** The scopes a `WWW-Authenticate: Bearer error="insufficient_scope", scope="..."` challenge asks for; else undefined. */
export const scopesChallenged = (challenge: string | null): ReadonlyArray<string> | undefined => {
  if (challenge === null || !/error="insufficient_scope"/i.test(challenge)) return undefined
  return (/scope="([^"]*)"/i.exec(challenge)?.[1] ?? "").split(" ").filter((s) => s !== "")
}

/** How long connecting (the SSE stream's `endpoint` event, the WebSocket handshake) may take. */
export const CONNECT_TIMEOUT_MS = 30_000

/** A message as a remote transport looks into it: its id, method and params object. */
export interface Sent {
  readonly id?: string | number
  readonly method?: string
  readonly params?: Readonly<Record<string, unknown>>
}

const sentOf = (message: Outgoing): Sent => ({
  ...(typeof message.id === "string" || typeof message.id === "number" ? { id: message.id } : {}),
  ...(message.method === undefined ? {} : { method: message.method }),
  ...(isObject(message.params) ? { params: message.params } : {})
})

/**
 * Where a channel's own work runs (the event stream it reads, the requests it posts): fibers of
 * its backend's scope, with the app's services (its tracer, its logger), interrupted when that
 * scope closes, or at once when the channel is lost.
 */
export interface Runner {
  readonly run: <A, E>(effect: Effect.Effect<A, E>) => Fiber.Fiber<A, E>
  /** Interrupts what this runner runs, without waiting (the channel's end is delivered meanwhile). */
  readonly stop: () => void
  /** One for a channel within this one (a fallback): stopping it stops only its own work. */
  readonly child: () => Runner
}

const tracking = (run: Runner["run"]): Runner => {
  const running = new Set<Fiber.Fiber<unknown, unknown>>()
  return {
    run: (effect) => {
      const fiber = run(effect)
      running.add(fiber)
      fiber.addObserver(() => running.delete(fiber))
      return fiber
    },
    stop: () => {
      for (const fiber of running) fiber.interruptUnsafe()
    },
    child: () => tracking(run)
  }
}

/** A runner in the current scope (the backend's): what it runs ends with that scope at the latest. */
export const runner: Effect.Effect<Runner, never, Scope.Scope> = Effect.gen(function* () {
  const set = yield* FiberSet.make<unknown, unknown>()
  // Each fiber it runs is a root fiber with the backend's services, interruptible whatever the
  // caller's region (a backend opens its channel in an acquire, which is uninterruptible).
  return tracking(yield* FiberSet.runtime(set)<never>())
})

export abstract class RemoteChannel implements Channel {
  readonly pid = undefined
  readonly tag = ""
  readonly remote = true
  readonly url: URL
  protected closed = false

  constructor(
    readonly options: Options,
    protected readonly receiver: Receiver,
    protected readonly runner: Runner
  ) {
    this.url = new URL(options.url)
  }

  /** Where it goes, as it may be printed. */
  get address(): string {
    return Secrets.displayUrl(this.options.url)
  }

  /** Opens what must be open before the first message (an event stream, a socket). */
  abstract readonly connect: Effect.Effect<void, Error>

  /** Sends one message; what the server answers comes back through `incoming`. */
  protected abstract send(message: Sent, line: string): void

  /** Runs `effect` until the channel closes. */
  protected run<A, E>(effect: Effect.Effect<A, E>): Fiber.Fiber<A, E> {
    return this.runner.run(effect)
  }

  write(out: Outbound, _force: boolean): WriteOutcome {
    // Once the server is lost, frames are dropped and their calls fail with the loss's reason
    // when the channel's end is delivered (a moment later), not with a generic "closed".
    if (this.closed || out.text === "") return "ok"
    this.send(sentOf(out.message), out.text.endsWith("\n") ? out.text.slice(0, -1) : out.text)
    return "ok"
  }

  /** A remote server's pace is its transport's: nothing waits here. */
  backlog() {
    return { bytes: 0, idleMs: 0 }
  }

  endInput() {}

  /** The gateway stops it: everything in flight is dropped. */
  abort() {
    this.finish(undefined)
  }

  dispose() {}

  /** What the server sent: one message or a batch, handed on one message at a time. */
  protected incoming(data: string) {
    if (this.closed || data.trim() === "") return
    let parsed: unknown
    try {
      parsed = Depth.parse(data)
    } catch {
      // Not JSON-RPC: the connection logs it as junk, on one line.
      return this.receiver.text(data.replace(/[\r\n]+/g, " "))
    }
    for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
      this.observe(message)
      this.receiver.message(message, data)
    }
  }

  /** A look at each message from the server before it is handed on (the negotiated version). */
  protected observe(_message: unknown): void {}

  /** An error reply for a request the transport failed; `data.httpStatus` tells it from the server's own (see Channel.httpStatusOf). */
  protected replyError(
    id: string | number,
    message: string,
    httpStatus?: number,
    needsAuth = false,
    extra: Readonly<Record<string, unknown>> = {}
  ) {
    const error = {
      code: -32603,
      message,
      ...(httpStatus === undefined ? {} : { data: { httpStatus, ...(needsAuth ? { [NEEDS_AUTH]: true } : {}), ...extra } })
    }
    this.incoming(JSON.stringify({ jsonrpc: "2.0", id, error }))
  }

  /** A diagnostic line, logged at debug level with the backend's id (and kept for start-up errors). */
  protected note = (text: string) => {
    if (!this.closed) this.receiver.diagnostic(Secrets.scrub(text))
  }

  /** The server cannot be reached: every call in flight fails, and the supervisor reconnects. */
  protected lose(reason: string) {
    this.finish(Secrets.scrub(reason))
  }

  protected finish(reason: string | undefined) {
    if (this.closed) return
    this.closed = true
    this.runner.stop()
    // After what is being handed on now, as a process's exit comes after its last output.
    setImmediate(() => {
      this.receiver.ended({ code: reason === undefined ? null : 1, signal: reason === undefined ? "SIGTERM" : null, reason })
      this.receiver.finished()
    })
  }
}
