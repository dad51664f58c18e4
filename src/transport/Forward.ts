/**
 * A request for a session another gateway of the team holds (see store/SessionDirectory), handed to that
 * gateway over HTTP as it came (method, path, headers, body) and its response streamed back as it
 * goes (a JSON reply, an SSE stream, a GET stream that lasts): so a load balancer need not be
 * sticky. The holder checks the request as if it came to it directly (the client's own token and
 * Origin are passed on); its Host is the holder's own, the client's having been checked by the
 * gateway it reached. `FORWARDED_HEADER` marks it, and a forwarded request is never forwarded
 * again (no loops: a session its holder no longer has is 404 there).
 *
 * On `node:http` with a keep-alive agent: one connection per pair of gateways is reused, so a
 * hand-off costs a round trip on an open socket.
 */
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Effect } from "effect"
import * as http from "node:http"

/** Says which gateway handed the request on (its replica id). */
export const FORWARDED_HEADER = "x-mcp-agentify-forwarded"

/** Headers of one hop only: never passed on (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
  "content-length"
])

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 })

/** Whether a request was handed on by another gateway already. */
export const wasForwarded = (request: HttpServerRequest.HttpServerRequest): boolean =>
  request.headers[FORWARDED_HEADER] !== undefined

/**
 * Where a request goes at the holder (`to`, `http://host:port`): its path and query there, never
 * another origin (a request line in absolute form, `GET http://elsewhere/ HTTP/1.1`, names one).
 */
export const targetOf = (requested: string | undefined, to: string): URL => {
  const given = new URL(requested ?? "/", "http://holder.invalid")
  const url = new URL(to)
  url.pathname = given.pathname
  url.search = given.search
  return url
}

/** The headers `incoming` is passed on with: as it came but for one hop's, marked, and the holder's Host. */
const headersFor = (
  incoming: { readonly headers: http.IncomingHttpHeaders },
  to: URL,
  from: string
): http.OutgoingHttpHeaders => {
  const headers: http.OutgoingHttpHeaders = { [FORWARDED_HEADER]: from }
  for (const [name, value] of Object.entries(incoming.headers)) {
    // Its length stays: a body sent whole, not in chunks.
    if ((!HOP_BY_HOP.has(name) || name === "content-length") && value !== undefined) headers[name] = value
  }
  headers["host"] = to.host
  return headers
}

/**
 * The same at the Node listener, before anything of this gateway reads the request (see
 * `Listener.first`): for a session whose holder the store named a moment ago, most of a session's
 * requests. Bytes both ways as they come; `failed` is the body of the 502 when the holder cannot
 * be reached.
 */
export const handOn = (
  incoming: http.IncomingMessage,
  response: http.ServerResponse,
  to: string,
  from: string,
  failed: (message: string) => string
): void => {
  const url = targetOf(incoming.url, to)
  const outgoing = http.request(url, { method: incoming.method, headers: headersFor(incoming, url, from), agent })
  outgoing.once("response", (answer) => {
    const passed: http.OutgoingHttpHeaders = {}
    for (const [name, value] of Object.entries(answer.headers)) {
      // The holder's length holds: the body passes byte for byte.
      if ((!HOP_BY_HOP.has(name) || name === "content-length") && value !== undefined) passed[name] = value
    }
    response.writeHead(answer.statusCode ?? 502, passed)
    // A stream's head goes at once: its first event may be a while.
    if (answer.headers["content-type"]?.startsWith("text/event-stream") === true) response.flushHeaders()
    answer.pipe(response)
    answer.once("error", () => response.destroy())
  })
  outgoing.once("error", (error) => {
    if (response.headersSent) return response.destroy()
    response.writeHead(502, { "content-type": "application/json" })
    response.end(failed(`Bad Gateway: the gateway that holds this session did not answer (${error.message})`))
  })
  // The client gone before its response ended: the holder's request ends too (a GET stream's, say).
  response.once("close", () => {
    if (!response.writableFinished) outgoing.destroy()
  })
  incoming.pipe(outgoing)
}

/**
 * `request` at the gateway at `to` (`http://host:port`), its response as this gateway's; a holder
 * that cannot be reached is 502 and the session's client may start afresh.
 */
export const forward = (
  request: HttpServerRequest.HttpServerRequest,
  to: string,
  from: string,
  refuse: (status: number, message: string) => HttpServerResponse.HttpServerResponse,
  /** The body, when it was read already (to see what it resumes). */
  body?: string
): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.callback<HttpServerResponse.HttpServerResponse>((resume) => {
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    const url = targetOf(incoming.url, to)
    const headers = headersFor(incoming, url, from)
    if (body !== undefined) headers["content-length"] = Buffer.byteLength(body)
    const outgoing = http.request(url, { method: incoming.method, headers, agent })
    outgoing.once("response", (answer) => {
      const passed: Record<string, string> = {}
      for (const [name, value] of Object.entries(answer.headers)) {
        if (!HOP_BY_HOP.has(name) && name !== "content-type" && value !== undefined) {
          passed[name] = Array.isArray(value) ? value.join(", ") : value
        }
      }
      const contentType = answer.headers["content-type"]
      const head = { status: answer.statusCode ?? 502, headers: passed, ...(contentType === undefined ? {} : { contentType }) }
      // A stream (SSE) is passed on as it goes; a whole reply (JSON) at once, as its holder wrote it.
      if (contentType?.startsWith("text/event-stream") === true) {
        const body = NodeStream.fromReadable<Uint8Array, Error>({
          evaluate: () => answer,
          onError: (error) => (error instanceof Error ? error : new Error(String(error)))
        })
        resume(Effect.succeed(HttpServerResponse.stream(body, head)))
        return
      }
      const chunks: Array<Buffer> = []
      answer.on("data", (chunk: Buffer) => chunks.push(chunk))
      answer.once("end", () => resume(Effect.succeed(HttpServerResponse.uint8Array(Buffer.concat(chunks), head))))
      answer.once("error", (error) =>
        resume(Effect.succeed(refuse(502, `Bad Gateway: the gateway that holds this session failed (${error.message})`)))
      )
    })
    outgoing.once("error", (error) =>
      resume(Effect.succeed(refuse(502, `Bad Gateway: the gateway that holds this session did not answer (${error.message})`)))
    )
    // The body as it arrives (a POST's), or none; or as it was read.
    if (body === undefined) incoming.pipe(outgoing)
    else outgoing.end(body)
    return Effect.sync(() => outgoing.destroy())
  })
