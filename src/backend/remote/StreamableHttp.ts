/**
 * Streamable HTTP, both protocol eras: each message is one POST, answered with JSON or an event
 * stream; a session (`Mcp-Session-Id`) gets a GET stream for what the server sends outside any
 * request, reopened with backoff; a stateless (2026-07-28) request is cancelled by closing its
 * HTTP request. The "http" transport falls back to HTTP+SSE at the same address when the server
 * refuses the first POST as only an older server does (400, 404, 405), as VS Code does.
 */
import { Effect, Fiber, Schedule } from "effect"
import * as Mcp from "../../protocol/Mcp.js"
import * as Secrets from "../../observability/Secrets.js"
import { readEvents } from "./EventStream.js"
import { McpHeaders } from "./McpHeaders.js"
import * as Fetch from "./Fetch.js"
import type { Outbound } from "../Channel.js"
import * as Meta from "../../json/Meta.js"
import { INSUFFICIENT_SCOPE, scopesChallenged, type Sent, RemoteChannel } from "./RemoteChannel.js"
import { SseChannel } from "./Sse.js"
import { field, stringField } from "../../json/Json.js"

/**
 * The error reply for a request in a session the server no longer knows: worded as servers word
 * it, so Backend's one check for a lost session (re-initialize, retry once) covers it.
 */
const SESSION_ENDED = "session not found: the server ended it (HTTP 404)"

/** The GET stream is opened again after a second, doubling up to a minute while it keeps failing. */
const STREAM_RETRY = Schedule.min([Schedule.exponential("1 second"), Schedule.spaced("1 minute")])
/** A stream that stayed open this long was healthy: the next failure starts the backoff afresh. */
const STREAM_HEALTHY_MS = 10_000

type StreamOutcome = "again" | "healthy" | "done"

export class StreamableHttpChannel extends RemoteChannel {
  private sessionId: string | undefined = undefined
  private protocolVersion: string | undefined = undefined
  private initializeId: string | number | undefined = undefined
  /** Bumped by each `initialize`: a GET stream of an older session stops. */
  private session = 0
  private getStream: Fiber.Fiber<unknown> | undefined = undefined
  /** Stateless requests in flight: cancelling one closes its HTTP request, as that era says. */
  private readonly statelessInFlight = new Map<string | number, Fiber.Fiber<void>>()
  /** Once the server turned out to speak HTTP+SSE: everything goes there. */
  private fallback: SseChannel | undefined = undefined
  /** Frames written while the fallback connects. */
  private queued: Array<Outbound> | undefined = undefined
  /** SEP-2243: every POST says what it is in its headers, as the body does. */
  private readonly mcpHeaders = new McpHeaders()

  /** Which tool arguments travel in `Mcp-Param-*` headers too. */
  toolsListed(tools: ReadonlyArray<Mcp.Tool>) {
    this.mcpHeaders.toolsListed(tools)
  }

  /** Nothing to open before the first request. */
  readonly connect = Effect.void

  override write(out: Outbound, force: boolean) {
    if (this.fallback !== undefined) return this.fallback.write(out, force)
    if (this.queued !== undefined) {
      this.queued.push(out)
      return "ok" as const
    }
    return super.write(out, force)
  }

  /** The gateway stops it: the session is ended politely (bounded), everything in flight is dropped. */
  override abort() {
    if (this.fallback !== undefined) return this.fallback.abort()
    const session = this.sessionId
    if (!this.closed && session !== undefined) {
      // Best effort: a server that is gone must not hold the shutdown.
      Effect.runFork(
        Fetch.request(this.url, { method: "DELETE", headers: this.headers({ "mcp-session-id": session }) }).pipe(
          Effect.flatMap(Fetch.discard),
          Effect.timeout(1_000),
          Effect.ignore
        )
      )
    }
    super.abort()
  }

  private headers(extra: Record<string, string>, authorization?: string): Record<string, string> {
    return { ...this.options.headers, ...extra, ...(authorization === undefined ? {} : { authorization }) }
  }

  /** The OAuth header for the next request, if this server takes one (a refresh happens here). */
  private authorization(renew?: { readonly challenge: string | null }) {
    const tokens = this.options.tokens
    if (tokens === undefined) return Effect.succeed(undefined)
    return Effect.tryPromise({
      try: () => (renew === undefined ? tokens.header() : tokens.rejected(renew.challenge)),
      catch: (error) => error as Error & { readonly needsAuth?: boolean }
    })
  }

  /**
   * A person must sign in: the request fails saying so, and the connection is given up, so the
   * backend is started again, finds no token, and shows "needs auth" until someone signs in.
   */
  private needsAuth(id: string | number | undefined, error: Error & { readonly needsAuth?: boolean }) {
    const message = Secrets.scrub(error.message)
    // The authorization server could not be asked (down, a timeout): this request fails, the
    // tokens stay, and the next request asks again.
    if (error.needsAuth !== true) {
      if (id !== undefined) this.replyError(id, message, 503)
      return
    }
    if (id !== undefined) this.replyError(id, message, 401, true)
    // Once it was working, the backend is started again (and finds it needs auth); before, the
    // error reply is enough: the handshake fails with it.
    if (!this.closed && this.answered) this.lose(message)
  }

  /** The server has answered a request: the connection was up (see `needsAuth`). */
  private answered = false

  protected send(message: Sent, body: string) {
    /** Set when the message is a request: its id, which its reply will carry. */
    const requestId = message.method !== undefined ? message.id : undefined
    const metaVersion = Meta.get(message.params, Mcp.Meta.protocolVersion)
    const stateless = typeof metaVersion === "string"
    if (message.method === "notifications/cancelled" && this.cancelStateless(message.params?.requestId)) return
    const extra: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...this.mcpHeaders.for(message)
    }
    if (message.method === "initialize") {
      // A new session: the old one's id and stream go (a re-initialize after the server forgot it).
      this.sessionId = undefined
      this.protocolVersion = undefined
      this.initializeId = message.id
      this.session++
      if (this.getStream !== undefined) Effect.runFork(Fiber.interrupt(this.getStream))
      // The new session opens its own stream once initialized.
      this.getStream = undefined
    } else {
      if (this.sessionId !== undefined && !stateless) extra["mcp-session-id"] = this.sessionId
      const version = stateless ? metaVersion : this.protocolVersion
      if (version !== undefined) extra["mcp-protocol-version"] = version
    }
    const fiber = this.run(this.post(message, body, extra, requestId))
    if (stateless && requestId !== undefined) {
      const id = requestId
      this.statelessInFlight.set(id, fiber)
      fiber.addObserver(() => {
        if (this.statelessInFlight.get(id) === fiber) this.statelessInFlight.delete(id)
      })
    }
  }

  /** One message; what the server answers is handed on as it arrives. */
  private post(message: Sent, body: string, extra: Record<string, string>, requestId: Sent["id"]) {
    return Effect.gen({ self: this }, function* () {
      const authorized = yield* Effect.result(this.authorization())
      if (authorized._tag === "Failure") return this.needsAuth(message.id, authorized.failure)
      let response = yield* Fetch.request(this.url, { method: "POST", headers: this.headers(extra, authorized.success), body })
      // 401: the token expired early or was revoked, or the server wants one it was never given.
      if (response.status === 401 && this.options.tokens !== undefined) {
        const renewed = yield* Effect.result(this.authorization({ challenge: response.headers.get("www-authenticate") }))
        if (renewed._tag === "Failure") {
          yield* Fetch.discard(response)
          return this.needsAuth(message.id, renewed.failure)
        }
        if (renewed.success !== undefined) {
          yield* Fetch.discard(response)
          response = yield* Fetch.request(this.url, { method: "POST", headers: this.headers(extra, renewed.success), body })
        }
      }
      if (response.ok) this.answered = true
      if (message.method === "initialize" && response.ok) {
        const session = response.headers.get("mcp-session-id")
        if (session !== null && /^[\x21-\x7e]{1,1024}$/.test(session)) this.sessionId = session
      }
      if (!response.ok) {
        const status = response.status
        const text = yield* Fetch.readText(response, Fetch.ERROR_BODY_CHARS * 4)
        if (
          this.options.transport === "http" &&
          message.method === "initialize" &&
          (status === 400 || status === 404 || status === 405)
        ) {
          // Not a Streamable HTTP server: the older HTTP+SSE transport at the same address.
          this.note(`POST initialize answered HTTP ${status}: trying the HTTP+SSE transport`)
          return yield* this.fallBackToSse({ message: { jsonrpc: "2.0", ...message }, text: body })
        }
        if (requestId === undefined) return this.note(`${message.method ?? "a reply"} was refused: HTTP ${status}`)
        const expired = status === 404 && extra["mcp-session-id"] !== undefined
        // A 2026-07-28 server refuses with a status and its JSON-RPC error in the body (-32021 names
        // the capability the client lacks): that error is the backend's answer, passed on as sent.
        if (!expired && status !== 401 && status !== 403 && Fetch.isErrorReplyTo(text, requestId)) return this.incoming(text)
        // A token without the scope this request needs: said so, with the scopes asked for (a step-up).
        const wanted =
          status === 403 && this.options.tokens !== undefined
            ? scopesChallenged(response.headers.get("www-authenticate"))
            : undefined
        if (wanted !== undefined) {
          return this.replyError(requestId, Fetch.httpProblem(response, text), status, false, { [INSUFFICIENT_SCOPE]: wanted })
        }
        return this.replyError(requestId, expired ? SESSION_ENDED : Fetch.httpProblem(response, text), status)
      }
      if (message.method === "notifications/initialized") this.openGetStream()
      if (response.status === 202 || requestId === undefined || response.body === null) return yield* Fetch.discard(response)
      const type = response.headers.get("content-type") ?? ""
      if (type.includes("text/event-stream")) {
        return yield* readEvents(response.body, this.options.maxFrameBytes, (event) => this.incoming(event.data), this.note)
      }
      const text = yield* Fetch.readText(response, this.options.maxFrameBytes)
      if (text.length >= this.options.maxFrameBytes) {
        return this.replyError(requestId, `the reply is over the limit of ${this.options.maxFrameBytes} bytes (maxFrameBytes)`)
      }
      this.incoming(text)
    }).pipe(
      Effect.catch((error) =>
        Effect.sync(() => {
          if (!this.closed) this.lose(`could not be reached (${error.message})`)
        })
      )
    )
  }

  /** The `initialize` this transport was refused, and what followed it, go to an HTTP+SSE channel. */
  private fallBackToSse(initialize: Outbound) {
    return Effect.gen({ self: this }, function* () {
      this.queued = []
      const sse = new SseChannel(this.options, this.receiver, this.runner.child())
      const connected = yield* Effect.result(sse.connect)
      const queued = this.queued
      this.queued = undefined
      if (connected._tag === "Failure") {
        sse.abort()
        return this.lose(connected.failure.message)
      }
      this.fallback = sse
      sse.write(initialize, false)
      for (const out of queued) sse.write(out, false)
    })
  }

  /** Closes a stateless request's HTTP request (that era's cancellation); false if it is not one. */
  private cancelStateless(requestId: unknown): boolean {
    if (typeof requestId !== "string" && typeof requestId !== "number") return false
    const fiber = this.statelessInFlight.get(requestId)
    if (fiber === undefined) return false
    this.statelessInFlight.delete(requestId)
    Effect.runFork(Fiber.interrupt(fiber))
    return true
  }

  /** Server-sent messages outside any request: the session's GET stream, kept open while it lives. */
  private openGetStream() {
    const session = this.session
    const sessionId = this.sessionId
    if (sessionId === undefined || this.getStream !== undefined) return
    const alive = () => !this.closed && session === this.session
    const once: Effect.Effect<StreamOutcome> = Effect.gen({ self: this }, function* () {
      const opened = Date.now()
      const headers: Record<string, string> = { accept: "text/event-stream", "mcp-session-id": sessionId }
      if (this.protocolVersion !== undefined) headers["mcp-protocol-version"] = this.protocolVersion
      const authorization = yield* Effect.orElseSucceed(this.authorization(), () => undefined)
      const response = yield* Fetch.request(this.url, { method: "GET", headers: this.headers(headers, authorization) })
      if (response.status === 405) return "done" as const // The server offers no such stream.
      if (!response.ok || response.body === null) {
        yield* Fetch.discard(response)
        this.note(`the session's event stream was refused: HTTP ${response.status}`)
        return response.status === 404 || response.status === 401 || response.status === 403
          ? ("done" as const)
          : ("again" as const)
      }
      yield* readEvents(response.body, this.options.maxFrameBytes, (event) => this.incoming(event.data), this.note)
      return Date.now() - opened > STREAM_HEALTHY_MS ? ("healthy" as const) : ("again" as const)
    }).pipe(
      Effect.catch((error) =>
        Effect.sync(() => {
          this.note(`the session's event stream failed: ${error.message}`)
          return "again" as const
        })
      )
    )
    // Failing streams back off; after a healthy one the backoff starts afresh, a second later.
    let last: StreamOutcome = "again"
    const backingOff = once.pipe(
      Effect.tap((outcome) => Effect.sync(() => void (last = outcome))),
      Effect.repeat({ schedule: STREAM_RETRY, while: (outcome) => outcome === "again" && alive() }),
      Effect.map(() => last)
    )
    const fiber = this.run(
      backingOff.pipe(
        Effect.repeat({ schedule: Schedule.spaced("1 second"), while: (outcome) => outcome === "healthy" && alive() }),
        Effect.ensuring(
          Effect.sync(() => {
            if (this.getStream === fiber) this.getStream = undefined
          })
        )
      )
    )
    this.getStream = fiber
  }

  /** The version the server chose, sent back as a header: only a plausible one (a newline would break every later request). */
  protected override observe(message: unknown) {
    const id = field(message, "id")
    const version = stringField(field(message, "result"), "protocolVersion")
    if (id !== undefined && id === this.initializeId && version !== undefined && /^[A-Za-z0-9._-]{1,32}$/.test(version)) {
      this.protocolVersion = version
    }
  }
}
