/**
 * Remote backends: an MCP server reached over the network, by Streamable HTTP (both protocol eras),
 * the HTTP+SSE transport of 2024-11-05, or WebSocket (subprotocol `mcp`).
 *
 * A `Link` looks to Backend's connection like a child process: newline-delimited JSON-RPC frames
 * written to its `stdin` go to the server, the server's messages come out of its `stdout` one per
 * line, diagnostics go to its `stderr`, and it emits `exit` once the server cannot be reached. So
 * pending requests, timeouts, cancellation, progress, the server's own requests and the
 * supervisor's restarts with backoff (this transport's reconnect) are one code path for every
 * kind of backend, and the stdio hot path is untouched.
 *
 * Written on Node's `fetch` and `ws` rather than the MCP SDK's client transports: those do not
 * speak the 2026-07-28 era, Node 20 has no WebSocket of its own, and the SDK would bring express
 * and a dozen packages into the install. Longer than most modules until the remote transports are
 * split by kind behind a channel interface (the rebuild's next step): one `Link` holds all three.
 */
import { EventEmitter } from "node:events"
import { PassThrough, Writable } from "node:stream"
import WebSocket from "ws"
import * as Mcp from "../protocol/Mcp.js"
import * as Secrets from "../observability/Secrets.js"

/** "http" is Streamable HTTP that falls back to HTTP+SSE when the server does not speak it (as VS Code does). */
export type Transport = "http" | "streamable-http" | "sse" | "websocket"

export interface Options {
  readonly url: string
  readonly transport: Transport
  /** Sent with every HTTP request and the WebSocket handshake (credentials: never logged). */
  readonly headers: Readonly<Record<string, string>>
  /** The largest message accepted: an SSE event, a JSON body or a WebSocket message. */
  readonly maxFrameBytes: number
}

/** How long connecting (the SSE stream's `endpoint` event, the WebSocket handshake) may take. */
export const CONNECT_TIMEOUT_MS = 30_000
/** The GET stream of a Streamable HTTP session is opened again after this, doubling up to a minute. */
const STREAM_RETRY_MS = 1_000
const STREAM_RETRY_MAX_MS = 60_000
/** How much of an HTTP error's body goes into the error message. */
const ERROR_BODY_CHARS = 300

/** The HTTP status of an error reply the link wrote for a request the server refused. */
export const httpStatusOf = (error: unknown): number | undefined => {
  const status = (error as { data?: { httpStatus?: unknown } } | undefined)?.data?.httpStatus
  return typeof status === "number" ? status : undefined
}

/**
 * The error reply for a request in a session the server no longer knows: worded as servers word
 * it, so Backend's one check for a lost session (re-initialize, retry once) covers it.
 */
const SESSION_ENDED = "session not found: the server ended it (HTTP 404)"

interface Outgoing {
  readonly id?: string | number
  readonly method?: string
  readonly params?: { readonly _meta?: Record<string, unknown>; readonly requestId?: unknown }
}

type Mode = "streamable" | "sse" | "websocket"

export class Link extends EventEmitter {
  /** Not a process: Backend reads this to tell the two apart. */
  readonly pid = undefined
  readonly stdin: Writable
  readonly stdout = new PassThrough()
  readonly stderr = new PassThrough()
  /** Why the server cannot be reached any more: the connection's exit description. */
  lostReason: string | undefined = undefined

  private mode: Mode
  private readonly url: URL
  private readonly stopAll = new AbortController()
  private closed = false
  private sessionId: string | undefined = undefined
  private protocolVersion: string | undefined = undefined
  private initializeId: string | number | undefined = undefined
  /** Bumped by each `initialize`: a GET stream of an older session stops. */
  private session = 0
  private getStream: AbortController | undefined = undefined
  /** The legacy transport's POST address, from its `endpoint` event. */
  private endpoint: URL | undefined = undefined
  private socket: WebSocket | undefined = undefined
  /** Stateless requests in flight: cancelling one closes its HTTP request, as that era says. */
  private readonly statelessInFlight = new Map<string | number, AbortController>()
  /** Frames written before the connection was ready (the legacy endpoint, the socket). */
  private queued: Array<string> | undefined = undefined

  constructor(private readonly options: Options) {
    super()
    this.url = new URL(options.url)
    this.mode = options.transport === "sse" ? "sse" : options.transport === "websocket" ? "websocket" : "streamable"
    this.stdin = new Writable({
      decodeStrings: false,
      write: (chunk: string | Buffer, _encoding, callback) => {
        for (const line of String(chunk).split("\n")) if (line !== "") this.outgoing(line)
        callback()
      }
    })
  }

  /** Where it goes, as it may be printed. */
  get address(): string {
    return Secrets.displayUrl(this.options.url)
  }

  /**
   * Connects: the legacy transport's event stream up to its `endpoint`, the WebSocket handshake.
   * Streamable HTTP has nothing to open before its first request.
   */
  async connect(): Promise<void> {
    if (this.mode === "sse") await this.openSse()
    else if (this.mode === "websocket") await this.openSocket()
  }

  /** The gateway stops it: the session is ended politely, everything in flight is dropped. */
  kill(): void {
    if (this.closed) return
    const session = this.sessionId
    if (this.mode === "streamable" && session !== undefined) {
      // Best effort, bounded: a server that is gone must not hold the shutdown.
      fetch(this.url, {
        method: "DELETE",
        headers: this.headers({ "mcp-session-id": session }),
        signal: AbortSignal.timeout(1_000),
        redirect: "manual"
      }).catch(() => {})
    }
    this.finish(undefined)
  }

  // -- messages out

  private outgoing(line: string) {
    if (this.closed) return
    if (this.queued !== undefined) {
      this.queued.push(line)
      return
    }
    let message: Outgoing
    try {
      message = JSON.parse(line) as Outgoing
    } catch {
      return
    }
    switch (this.mode) {
      case "websocket":
        this.socket?.send(line)
        return
      case "sse":
        void this.postLegacy(message, line)
        return
      case "streamable":
        void this.post(message, line)
    }
  }

  private headers(extra: Record<string, string>): Record<string, string> {
    return { ...this.options.headers, ...extra }
  }

  /** One message to a Streamable HTTP server; what it answers comes out of stdout. */
  private async post(message: Outgoing, body: string): Promise<void> {
    const isRequest = message.id !== undefined && message.method !== undefined
    const metaVersion = message.params?._meta?.[Mcp.Meta.protocolVersion]
    const stateless = typeof metaVersion === "string"
    if (message.method === "notifications/cancelled" && this.cancelStateless(message.params?.requestId)) return
    const extra: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream"
    }
    if (message.method === "initialize") {
      // A new session: the old one's id and stream go (a re-initialize after the server forgot it).
      this.sessionId = undefined
      this.protocolVersion = undefined
      this.initializeId = message.id
      this.session++
      this.getStream?.abort()
      // The new session opens its own stream once initialized.
      this.getStream = undefined
    } else {
      if (this.sessionId !== undefined && !stateless) extra["mcp-session-id"] = this.sessionId
      const version = stateless ? metaVersion : this.protocolVersion
      if (version !== undefined) extra["mcp-protocol-version"] = version
    }
    const controller = new AbortController()
    const signal = AbortSignal.any([this.stopAll.signal, controller.signal])
    if (stateless && isRequest) this.statelessInFlight.set(message.id!, controller)
    try {
      const response = await fetch(this.url, { method: "POST", headers: this.headers(extra), body, signal, redirect: "manual" })
      if (message.method === "initialize" && response.ok) {
        const session = response.headers.get("mcp-session-id")
        if (session !== null && /^[\x21-\x7e]{1,1024}$/.test(session)) this.sessionId = session
      }
      if (!response.ok) {
        const status = response.status
        const text = await readText(response, ERROR_BODY_CHARS * 4).catch(() => "")
        if (
          this.options.transport === "http" &&
          this.mode === "streamable" &&
          message.method === "initialize" &&
          (status === 400 || status === 404 || status === 405)
        ) {
          // Not a Streamable HTTP server: the older HTTP+SSE transport at the same address.
          this.note(`POST initialize answered HTTP ${status}: trying the HTTP+SSE transport`)
          return await this.fallBackToSse(message, body)
        }
        if (!isRequest) return this.note(`${message.method ?? "a reply"} was refused: HTTP ${status}`)
        const expired = status === 404 && extra["mcp-session-id"] !== undefined
        return this.replyError(message.id!, expired ? SESSION_ENDED : httpProblem(response, text), status)
      }
      if (message.method === "notifications/initialized") this.openGetStream()
      if (response.status === 202 || !isRequest || response.body === null) {
        await response.body?.cancel().catch(() => {})
        return
      }
      const type = response.headers.get("content-type") ?? ""
      if (type.includes("text/event-stream")) {
        await readEvents(response.body, this.options.maxFrameBytes, (event) => this.incoming(event.data), this.note)
      } else {
        const text = await readText(response, this.options.maxFrameBytes)
        if (text.length >= this.options.maxFrameBytes) {
          return this.replyError(
            message.id!,
            `the reply is over the limit of ${this.options.maxFrameBytes} bytes (maxFrameBytes)`
          )
        }
        this.incoming(text)
      }
    } catch (error) {
      if (this.closed || controller.signal.aborted) return
      this.lose(`could not be reached (${describeFetchError(error)})`)
    } finally {
      if (stateless && isRequest) this.statelessInFlight.delete(message.id!)
    }
  }

  /** Closes a stateless request's HTTP request (that era's cancellation); false if it is not one. */
  private cancelStateless(requestId: unknown): boolean {
    if (typeof requestId !== "string" && typeof requestId !== "number") return false
    const controller = this.statelessInFlight.get(requestId)
    if (controller === undefined) return false
    controller.abort()
    this.statelessInFlight.delete(requestId)
    return true
  }

  /** Server-sent messages outside any request: the session's GET stream, kept open while it lives. */
  private openGetStream() {
    const session = this.session
    if (this.sessionId === undefined || this.getStream !== undefined) return
    const controller = new AbortController()
    this.getStream = controller
    const signal = AbortSignal.any([this.stopAll.signal, controller.signal])
    void (async () => {
      let delay = STREAM_RETRY_MS
      while (!this.closed && !signal.aborted && session === this.session) {
        const opened = Date.now()
        try {
          const headers: Record<string, string> = { accept: "text/event-stream", "mcp-session-id": this.sessionId! }
          if (this.protocolVersion !== undefined) headers["mcp-protocol-version"] = this.protocolVersion
          const response = await fetch(this.url, { method: "GET", headers: this.headers(headers), signal, redirect: "manual" })
          if (response.status === 405) return // The server offers no such stream.
          if (!response.ok || response.body === null) {
            await response.body?.cancel().catch(() => {})
            this.note(`the session's event stream was refused: HTTP ${response.status}`)
            if (response.status === 404 || response.status === 401 || response.status === 403) return
          } else {
            await readEvents(response.body, this.options.maxFrameBytes, (event) => this.incoming(event.data), this.note)
            if (Date.now() - opened > 10 * STREAM_RETRY_MS) delay = STREAM_RETRY_MS
          }
        } catch (error) {
          if (signal.aborted) return
          this.note(`the session's event stream failed: ${describeFetchError(error)}`)
        }
        await sleep(delay, signal)
        delay = Math.min(delay * 2, STREAM_RETRY_MAX_MS)
      }
    })().finally(() => {
      if (this.getStream === controller) this.getStream = undefined
    })
  }

  private async fallBackToSse(message: Outgoing, body: string): Promise<void> {
    this.mode = "sse"
    this.queued = []
    try {
      await this.openSse()
    } catch (error) {
      this.queued = undefined
      return this.lose(error instanceof Error ? error.message : String(error))
    }
    await this.postLegacy(message, body)
    const queued = this.queued ?? []
    this.queued = undefined
    for (const line of queued) this.outgoing(line)
  }

  // -- HTTP+SSE (2024-11-05)

  /** Opens the event stream and waits for the `endpoint` event that says where to POST. */
  private openSse(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let connected = false
      const timeout = setTimeout(() => {
        if (connected) return
        reject(new Error(`the server sent no endpoint within ${CONNECT_TIMEOUT_MS} ms`))
        this.stopAll.abort()
      }, CONNECT_TIMEOUT_MS)
      const failed = (why: string) => {
        clearTimeout(timeout)
        if (!connected) reject(new Error(why))
        else if (!this.closed) this.lose(why)
      }
      fetch(this.url, {
        method: "GET",
        headers: this.headers({ accept: "text/event-stream" }),
        signal: this.stopAll.signal,
        redirect: "manual"
      }).then(
        async (response) => {
          const type = response.headers.get("content-type") ?? ""
          if (!response.ok || response.body === null || !type.includes("text/event-stream")) {
            const text = await readText(response, ERROR_BODY_CHARS * 4).catch(() => "")
            return failed(`could not open the event stream: ${httpProblem(response, text)}`)
          }
          await readEvents(
            response.body,
            this.options.maxFrameBytes,
            (event) => {
              if (event.event === "endpoint" && !connected) {
                const endpoint = sameOrigin(this.url, event.data)
                if (endpoint === undefined) {
                  return failed("the server's endpoint is on another origin (refused: credentials would follow it)")
                }
                this.endpoint = endpoint
                connected = true
                clearTimeout(timeout)
                resolve()
              } else if (event.event === "message") this.incoming(event.data)
            },
            this.note
          )
          failed("closed its event stream")
        },
        (error) => failed(`could not be reached (${describeFetchError(error)})`)
      )
    }).catch((error: Error) => {
      if (this.closed) return
      throw error
    })
  }

  private async postLegacy(message: Outgoing, body: string): Promise<void> {
    if (this.endpoint === undefined) return
    const isRequest = message.id !== undefined && message.method !== undefined
    try {
      const response = await fetch(this.endpoint, {
        method: "POST",
        headers: this.headers({ "content-type": "application/json" }),
        body,
        signal: this.stopAll.signal,
        redirect: "manual"
      })
      const text = await readText(response, ERROR_BODY_CHARS * 4).catch(() => "")
      if (response.ok) return
      // The server forgot this connection: only a new one helps, which the supervisor makes.
      if (response.status === 404) return this.lose("ended the connection (HTTP 404 on its endpoint)")
      if (isRequest) this.replyError(message.id!, httpProblem(response, text), response.status)
      else this.note(`${message.method ?? "a reply"} was refused: HTTP ${response.status}`)
    } catch (error) {
      if (!this.closed) this.lose(`could not be reached (${describeFetchError(error)})`)
    }
  }

  // -- WebSocket

  private openSocket(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const socket = new WebSocket(this.url, ["mcp"], {
        headers: this.options.headers,
        maxPayload: this.options.maxFrameBytes,
        handshakeTimeout: CONNECT_TIMEOUT_MS,
        followRedirects: false
      })
      this.socket = socket
      let open = false
      socket.on("open", () => {
        open = true
        resolve()
      })
      socket.on("unexpected-response", (_request, response) => {
        reject(new Error(`the WebSocket handshake was refused: HTTP ${response.statusCode}`))
        socket.terminate()
      })
      socket.on("message", (data, isBinary) => {
        if (!isBinary) this.incoming(data.toString())
      })
      socket.on("error", (error) => {
        if (!open) reject(new Error(`could not be reached (${describeFetchError(error)})`))
        else this.note(`WebSocket error: ${describeFetchError(error)}`)
      })
      socket.on("close", (code) => {
        if (!open) reject(new Error(`the WebSocket closed before it opened (code ${code})`))
        else if (!this.closed) this.lose(`closed the WebSocket (code ${code})`)
      })
    })
  }

  // -- messages in

  /** A message from the server: out of stdout as one line. */
  private incoming(data: string) {
    if (this.closed || data.trim() === "") return
    let parsed: unknown
    try {
      parsed = JSON.parse(data)
    } catch {
      // Not JSON-RPC: the connection logs it as junk, on one line.
      this.stdout.write(`${data.replace(/[\r\n]+/g, " ")}\n`)
      return
    }
    for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
      const m = message as { id?: unknown; result?: { protocolVersion?: unknown } }
      // Sent back as a header: only a plausible version (a newline would break every later request).
      if (
        m.id !== undefined &&
        m.id === this.initializeId &&
        typeof m.result?.protocolVersion === "string" &&
        /^[A-Za-z0-9._-]{1,32}$/.test(m.result.protocolVersion)
      ) {
        this.protocolVersion = m.result.protocolVersion
      }
      this.stdout.write(`${JSON.stringify(message)}\n`)
    }
  }

  /** An error reply for a request the transport failed; `data.httpStatus` tells it from the server's own. */
  private replyError(id: string | number, message: string, httpStatus?: number) {
    const error = { code: -32603, message, ...(httpStatus === undefined ? {} : { data: { httpStatus } }) }
    this.incoming(JSON.stringify({ jsonrpc: "2.0", id, error }))
  }

  /** A diagnostic line, logged at debug level with the backend's id (and kept for start-up errors). */
  private note = (text: string) => {
    if (!this.closed) this.stderr.write(`${Secrets.scrub(text)}\n`)
  }

  // -- the end

  /** The server cannot be reached: every call in flight fails, and the supervisor reconnects. */
  private lose(reason: string) {
    this.finish(Secrets.scrub(reason))
  }

  private finish(reason: string | undefined) {
    if (this.closed) return
    this.closed = true
    this.lostReason = reason
    this.stopAll.abort()
    this.socket?.terminate()
    this.stdout.end()
    this.stderr.end()
    // After what was already read has been handed on (the ends above are queued behind it).
    setImmediate(() => {
      this.emit("exit", reason === undefined ? null : 1, reason === undefined ? "SIGTERM" : null)
      this.emit("close")
    })
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP helpers

/** `endpoint` resolved against the stream's URL, only when it stays on the same origin. */
const sameOrigin = (base: URL, endpoint: string): URL | undefined => {
  try {
    const url = new URL(endpoint.trim(), base)
    return url.origin === base.origin ? url : undefined
  } catch {
    return undefined
  }
}

/** "HTTP 401 Unauthorized: <the server's words>", with a hint where one helps; scrubbed. */
const httpProblem = (response: Response, body: string): string => {
  const status = response.status
  let detail = body.trim()
  try {
    const parsed = JSON.parse(detail) as { error?: { message?: unknown } | string; message?: unknown }
    const message = typeof parsed.error === "object" ? parsed.error?.message : (parsed.error ?? parsed.message ?? undefined)
    if (typeof message === "string") detail = message
  } catch {
    // Plain text.
  }
  detail = detail.replace(/\s+/g, " ").slice(0, ERROR_BODY_CHARS)
  const hint =
    status === 401 || status === 403
      ? " (check the backend's headers or bearer token)"
      : status >= 300 && status < 400
        ? ` (redirected to ${Secrets.displayUrl(new URL(response.headers.get("location") ?? "", response.url || "http://x").href)}: configure that URL)`
        : ""
  return Secrets.scrub(
    `HTTP ${status}${response.statusText ? ` ${response.statusText}` : ""}${hint}${detail ? `: ${detail}` : ""}`
  )
}

/** At most `limit` characters of a body (the rest is not read). */
const readText = async (response: Response, limit: number): Promise<string> => {
  if (response.body === null) return ""
  const decoder = new TextDecoder()
  let text = ""
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    text += decoder.decode(chunk, { stream: true })
    if (text.length >= limit) {
      await response.body.cancel().catch(() => {})
      return text.slice(0, limit)
    }
  }
  return text + decoder.decode()
}

/** The root cause of a failed fetch, in a few words ("connect ECONNREFUSED 127.0.0.1:3000"). */
const describeFetchError = (error: unknown): string => {
  let cause: unknown = error
  while (cause instanceof Error && cause.cause !== undefined) cause = cause.cause
  const message = cause instanceof Error ? cause.message : String(cause)
  return Secrets.scrub(message.slice(0, ERROR_BODY_CHARS))
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener("abort", () => {
      clearTimeout(timer)
      resolve()
    })
  })

export interface ServerSentEvent {
  readonly event: string
  readonly data: string
  readonly id: string | undefined
}

/**
 * Reads a `text/event-stream` body, calling `onEvent` for each event. Lines end in LF or CRLF; an
 * event whose data grows past `maxBytes` is dropped whole (and said so), so a server cannot make
 * the gateway hold an unbounded message.
 */
export const readEvents = async (
  body: ReadableStream<Uint8Array>,
  maxBytes: number,
  onEvent: (event: ServerSentEvent) => void,
  note: (text: string) => void
): Promise<void> => {
  const decoder = new TextDecoder()
  let buffer = ""
  let data: Array<string> = []
  let size = 0
  let event = ""
  let id: string | undefined
  let dropping = false
  /** The rest of a line that was already too long: skipped up to its end. */
  let skipping = false
  const line = (text: string) => {
    if (text === "") {
      if (!dropping && data.length > 0) onEvent({ event: event || "message", data: data.join("\n"), id })
      data = []
      size = 0
      event = ""
      dropping = false
      return
    }
    if (text.startsWith(":")) return
    const colon = text.indexOf(":")
    const field = colon === -1 ? text : text.slice(0, colon)
    let value = colon === -1 ? "" : text.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    if (field === "data") {
      size += value.length + 1
      if (size > maxBytes) {
        if (!dropping) note(`dropped an event over the limit of ${maxBytes} bytes (maxFrameBytes)`)
        dropping = true
        data = []
      } else if (!dropping) data.push(value)
    } else if (field === "event") event = value
    else if (field === "id") id = value
  }
  try {
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true })
      let start = 0
      let newline: number
      while ((newline = buffer.indexOf("\n", start)) !== -1) {
        const end = newline > start && buffer.charCodeAt(newline - 1) === 13 ? newline - 1 : newline
        if (skipping) skipping = false
        else line(buffer.slice(start, end))
        start = newline + 1
      }
      buffer = buffer.slice(start)
      if (buffer.length > maxBytes) {
        // One line without end past the limit: dropped as it streams by.
        if (!dropping) note(`dropped an event over the limit of ${maxBytes} bytes (maxFrameBytes)`)
        dropping = true
        skipping = true
        data = []
        buffer = ""
      }
    }
  } catch (error) {
    if ((error as Error)?.name !== "AbortError") note(`the event stream broke: ${describeFetchError(error)}`)
  }
}
