/**
 * HTTP for the remote transports, in Effect: a request that is aborted when its fiber is
 * interrupted (a closed channel interrupts them all), bodies read up to a limit, and failures
 * worded for a person ("HTTP 401 Unauthorized (check the backend's headers ...): ...").
 */
import { Data, Effect } from "effect"
import * as Secrets from "../../observability/Secrets.js"
import { field, isObject } from "../../json/Json.js"
import * as Depth from "../../json/Depth.js"

/** How much of an HTTP error's body goes into the error message. */
export const ERROR_BODY_CHARS = 300

/** A request that got no HTTP answer: its root cause, scrubbed. */
export class FetchFailed extends Data.TaggedError("FetchFailed")<{ readonly message: string }> {}

/** One HTTP request, never following redirects (credentials must not follow them). */
export const request = (url: URL, init: RequestInit): Effect.Effect<Response, FetchFailed> =>
  Effect.tryPromise({
    try: (signal) => fetch(url, { ...init, signal, redirect: "manual" }),
    catch: (error) => new FetchFailed({ message: describeFetchError(error) })
  })

/**
 * Reads a body chunk by chunk with `onChunk` until it ends or `onChunk` says "stop"; interrupting
 * the fiber cancels the body (and with it the connection).
 */
export const readBody = (
  body: ReadableStream<Uint8Array>,
  onChunk: (chunk: Uint8Array) => "more" | "stop"
): Effect.Effect<void, FetchFailed> =>
  Effect.tryPromise({
    try: async (signal) => {
      const reader = body.getReader()
      const cancel = () => void reader.cancel().catch(() => {})
      signal.addEventListener("abort", cancel)
      try {
        for (;;) {
          const { done, value } = await reader.read()
          if (done) return
          if (onChunk(value) === "stop") return cancel()
        }
      } finally {
        signal.removeEventListener("abort", cancel)
      }
    },
    catch: (error) => new FetchFailed({ message: describeFetchError(error) })
  })

/** At most `limit` characters of a body (the rest is not read). */
export const readText = (response: Response, limit: number): Effect.Effect<string> => {
  if (response.body === null) return Effect.succeed("")
  const decoder = new TextDecoder()
  let text = ""
  return readBody(response.body, (chunk) => {
    text += decoder.decode(chunk, { stream: true })
    return text.length >= limit ? "stop" : "more"
  }).pipe(
    Effect.orElseSucceed(() => undefined),
    Effect.map(() => (text.length >= limit ? text.slice(0, limit) : text + decoder.decode()))
  )
}

/** Drops a body nobody reads. */
export const discard = (response: Response): Effect.Effect<void> =>
  Effect.promise(() => response.body?.cancel().catch(() => {}) ?? Promise.resolve())

/** `endpoint` resolved against the stream's URL, only when it stays on the same origin. */
export const sameOrigin = (base: URL, endpoint: string): URL | undefined => {
  try {
    const url = new URL(endpoint.trim(), base)
    return url.origin === base.origin ? url : undefined
  } catch {
    return undefined
  }
}

/** "HTTP 401 Unauthorized: <the server's words>", with a hint where one helps; scrubbed. */
/** Whether an HTTP error's body is a JSON-RPC error reply to request `id` (a server's own refusal). */
export const isErrorReplyTo = (body: string, id: unknown): boolean => {
  let parsed: unknown
  try {
    parsed = Depth.parse(body)
  } catch {
    return false
  }
  const error = field(parsed, "error")
  return field(parsed, "jsonrpc") === "2.0" && field(parsed, "id") === id && isObject(error) && typeof error.code === "number"
}

export const httpProblem = (response: Response, body: string): string => {
  const status = response.status
  let detail = body.trim()
  try {
    const parsed: unknown = Depth.parse(detail)
    const error = field(parsed, "error")
    const message = isObject(error) ? error.message : (error ?? field(parsed, "message"))
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

/** The root cause of a failed request, in a few words ("connect ECONNREFUSED 127.0.0.1:3000"). */
export const describeFetchError = (error: unknown): string => {
  let cause: unknown = error
  while (cause instanceof Error && cause.cause !== undefined) cause = cause.cause
  const message = cause instanceof Error ? cause.message : String(cause)
  return Secrets.scrub(message.slice(0, ERROR_BODY_CHARS))
}
