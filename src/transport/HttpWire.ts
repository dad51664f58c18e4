/**
 * What the HTTP transport puts on the wire and reads from it: JSON and SSE replies, refusals as
 * JSON-RPC errors, the client's `Accept` (which forms it takes, and which it prefers), bounded
 * bodies, and the exchange that turns one POST's messages into its response.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { Effect, Queue, Stream } from "effect"
import { ErrorCode } from "../protocol/Errors.js"
import { field } from "../json/Json.js"
import { failure, isReply, stringify } from "../jsonrpc/JsonRpc.js"
import type * as Peer from "../jsonrpc/Peer.js"

/** A stream with nothing to say sends a comment this often, so proxies keep it open. */
export const KEEPALIVE_MS = 25_000
/** Messages waiting for a slow SSE reader before the oldest are dropped. */
export const STREAM_BUFFER = 4_096

// ---------------------------------------------------------------------------------------------
// Responses

export const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  HttpServerResponse.text(stringify(body), { status, contentType: "application/json", headers })

/** A transport-level refusal, as a JSON-RPC error with id null (what the SDKs expect). */
export const reject = (
  status: number,
  message: string,
  headers: Record<string, string> = {},
  code: ErrorCode = ErrorCode.InvalidRequest
) => json(status, failure(null, { code, message }), headers)

export const encoder = new TextEncoder()
export const sseEvent = (message: unknown) => encoder.encode(`event: message\ndata: ${stringify(message)}\n\n`)
export const SSE_HEADERS = { "cache-control": "no-cache, no-transform", "x-accel-buffering": "no" }

interface Accepted {
  readonly json: boolean
  readonly sse: boolean
  /** The client ranks the event stream first (by q, then by order): a reply goes as a stream too. */
  readonly prefersSse: boolean
}
const accepted = new Map<string, Accepted>()

/** What an Accept header admits, remembered: clients send the same one every time. */
export const acceptsOf = (header: string | undefined): Accepted => {
  if (header === undefined) return { json: true, sse: true, prefersSse: false }
  let verdict = accepted.get(header)
  if (verdict === undefined) {
    const json = accepts(header, "application/json")
    const sse = accepts(header, "text/event-stream")
    verdict = { json, sse, prefersSse: sse && (!json || ranksFirst(header, "text/event-stream", "application/json")) }
    if (accepted.size >= 256) accepted.clear()
    accepted.set(header, verdict)
  }
  return verdict
}

/** Whether `a` is ranked above `b` in an Accept header: a higher q, or the same q and listed first. */
const ranksFirst = (header: string, a: string, b: string): boolean => {
  const ranked = header
    .toLowerCase()
    .split(",")
    .map((part, index) => {
      const [media, ...parameters] = part.split(";").map((x) => x.trim())
      const q = Number(/^q=([0-9.]+)$/.exec(parameters.find((x) => x.startsWith("q=")) ?? "")?.[1] ?? "1")
      return { media, q: Number.isFinite(q) ? q : 1, index }
    })
  const rank = (type: string) => ranked.find((r) => r.media === type)
  const first = rank(a)
  const second = rank(b)
  if (first === undefined || second === undefined) return false
  return first.q > second.q || (first.q === second.q && first.index < second.index)
}

export const accepts = (header: string | undefined, type: "application/json" | "text/event-stream"): boolean => {
  if (header === undefined || header.trim() === "") return true
  const [major] = type.split("/")
  return header
    .toLowerCase()
    .split(",")
    .some((part) => {
      const media = (part.split(";")[0] ?? "").trim()
      return media === type || media === "*/*" || media === `${major}/*`
    })
}

/**
 * Reads a body of at most `limit` bytes; `undefined` when it is larger, `null` when it failed.
 * From Node's request itself: a body is one or two chunks, and a stream pipeline per request cost
 * more than the rest of the exchange.
 */
export const readBody = (
  request: HttpServerRequest.HttpServerRequest,
  limit: number
): Effect.Effect<string | undefined | null> => {
  const declared = Number(request.headers["content-length"])
  if (Number.isFinite(declared) && declared > limit) return Effect.succeed(undefined)
  const source = NodeHttpServerRequest.toIncomingMessage(request)
  return Effect.callback<string | undefined | null>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        done()
        // The rest is read and dropped, so the connection can still carry the 413.
        source.resume()
        return resume(Effect.succeed(undefined))
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      done()
      const [only] = chunks
      resume(
        Effect.succeed(
          chunks.length === 1 && only !== undefined ? only.toString("utf8") : Buffer.concat(chunks, size).toString("utf8")
        )
      )
    }
    const onError = () => {
      done()
      resume(Effect.succeed(null))
    }
    const done = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
      source.off("aborted", onError)
    }
    source.on("data", onData)
    source.once("end", onEnd)
    source.once("error", onError)
    source.once("aborted", onError)
    return Effect.sync(done)
  })
}

/**
 * A whole request refused by `limits` (its one reply is -32029) is said in HTTP's terms too: 429
 * with `Retry-After` in seconds, which proxies, load balancers and HTTP clients act on without
 * reading JSON-RPC. The body is the JSON-RPC error all the same. A batch's replies, or a refusal
 * after a stream began, keep their 200: the other messages in them were served.
 */
const quotaRefusal = (reply: unknown): Record<string, string> | undefined => {
  const error = field(reply, "error")
  if (field(error, "code") !== ErrorCode.QuotaExceeded) return undefined
  const after = field(field(error, "data"), "retryAfterMs")
  return { "retry-after": String(typeof after === "number" && after > 0 ? Math.ceil(after / 1_000) : 1) }
}

/**
 * Dispatches a body that expects replies and answers with them: JSON when the reply comes first,
 * an SSE stream when a notification does (and the client accepts one), or always a stream when the
 * client ranks it first (`alwaysStream`).
 */
export const exchangeWith = (
  dispatch: (out: Peer.Outbox) => void,
  sse: boolean,
  headers: Record<string, string>,
  statusOf: (reply: unknown) => number,
  alwaysStream = false
): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.suspend(() => {
    // Messages wait in a plain array until the first decides the response's form; a queue is
    // made only for a stream, so a plain request-reply costs one callback.
    const early: Array<unknown> = []
    let wake: (() => void) | undefined
    let queue: Queue.Queue<unknown> | undefined
    dispatch({
      send: (message) => {
        if (queue !== undefined) Queue.offerUnsafe(queue, message)
        else {
          early.push(message)
          wake?.()
        }
      },
      streams: sse
    })
    const first = (): Effect.Effect<unknown> =>
      early.length > 0
        ? Effect.succeed(early.shift())
        : Effect.callback<unknown>((resume) => {
            wake = () => {
              wake = undefined
              resume(Effect.succeed(early.shift()))
            }
            return Effect.sync(() => {
              wake = undefined
            })
          })
    const untilReply: Effect.Effect<unknown> = Effect.flatMap(first(), (message) =>
      // The client takes JSON only: what comes before the reply cannot be sent.
      isReply(message) || sse ? Effect.succeed(message) : untilReply
    )
    return Effect.flatMap(untilReply, (message) => {
      if (isReply(message)) {
        const quota = quotaRefusal(message)
        if (quota !== undefined) return Effect.succeed(json(429, message, { ...headers, ...quota }))
        if (!alwaysStream) return Effect.succeed(json(statusOf(message), message, headers))
        return Effect.succeed(
          HttpServerResponse.stream(Stream.make(sseEvent(message)), {
            contentType: "text/event-stream",
            headers: { ...SSE_HEADERS, ...headers }
          })
        )
      }
      // Sliding: a client that stops reading loses the oldest notifications, never the gateway's
      // memory, and never the reply (it comes last).
      return Effect.map(Queue.sliding<unknown>(STREAM_BUFFER), (q) => {
        queue = q
        for (const m of early.splice(0)) Queue.offerUnsafe(q, m)
        const rest = Stream.fromQueue(q).pipe(Stream.takeUntil(isReply), Stream.ensuring(Queue.shutdown(q)))
        const events = Stream.concat(Stream.make(message), rest).pipe(Stream.map(sseEvent))
        return HttpServerResponse.stream(events, {
          contentType: "text/event-stream",
          headers: { ...SSE_HEADERS, ...headers }
        })
      })
    })
  })
