/**
 * MCP on one endpoint (a target: the aggregate, a backend, a profile) over Streamable HTTP: `POST`
 * carries a body in (a session's, an `initialize` that opens one, a 2026-07-28 request) and its
 * replies out, as JSON or as an SSE stream; `GET` is a session's own notification stream; `DELETE`
 * ends a session. Bodies and streams only: what a body is, and every session's life, are the
 * Protocol's (gateway/clients/SharedSessions).
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { type Cause, Effect, Result, type Fiber, Queue, Stream } from "effect"
import type { ResolvedConfig } from "../config/Config.js"
import type { SharedSession, SharedSessions, Target } from "../gateway/clients/Protocol.js"
import { classify, failure } from "../jsonrpc/JsonRpc.js"
import { ErrorCode } from "../protocol/Errors.js"
import { messageOf } from "../json/Json.js"
import * as Depth from "../json/Depth.js"
import type { Principal } from "./HttpAccess.js"
import type { HandOff } from "./HttpHandOff.js"
import {
  accepts,
  acceptsOf,
  encoder,
  exchangeWith,
  json,
  KEEPALIVE_MS,
  readBody,
  reject,
  SESSION_HEADER,
  SSE_HEADERS,
  sseEvent,
  STREAM_BUFFER,
  VERSION_HEADER
} from "./HttpWire.js"

/** What a 2026-07-28 request (no session) is served with. */
interface Stateless {
  readonly request: HttpServerRequest.HttpServerRequest
  readonly value: unknown
  readonly body: string
  readonly target: Target
  readonly principal: Principal
  /** The client accepts an SSE stream. */
  readonly sse: boolean
}

/** A 2026-07-28 request: handed to the gateway that holds its call, a listen stream, or served beside the others. */
const stateless = (
  sessions: SharedSessions,
  handOff: HandOff,
  { request, value, body, target, principal, sse }: Stateless
): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.gen(function* () {
    // A round's answers for a call, or a task, another gateway of the team holds: handed to it.
    const handed = yield* handOff.stateless(request, value, body, principal?.subject)
    if (handed !== undefined) return handed
    const admitted = sessions.admit(value, request.headers, request.headers[VERSION_HEADER], target)
    if (Result.isFailure(admitted)) return json(admitted.failure.status, admitted.failure.response)
    if (admitted.success.request.method === "subscriptions/listen") {
      if (!sse) return reject(406, "Not Acceptable: subscriptions/listen answers with a stream: accept text/event-stream")
      const refusal = sessions.listenRefusal()
      if (refusal !== undefined) return reject(refusal.status, refusal.message, refusal.headers, ErrorCode.InternalError)
      // The listener lives as long as the stream: a client that goes away ends it.
      const events = Stream.unwrap(
        Effect.gen(function* () {
          const q = yield* Queue.sliding<unknown>(STREAM_BUFFER)
          yield* sessions.listen(admitted.success, target, { send: (m: unknown) => Queue.offerUnsafe(q, m) })
          return Stream.fromQueue(q)
        })
      ).pipe(Stream.map(sseEvent))
      return HttpServerResponse.stream(events, { contentType: "text/event-stream", headers: SSE_HEADERS })
    }
    let served: Fiber.Fiber<unknown, unknown> | undefined
    // A client that goes away mid-call cancels it (the backend hears notifications/cancelled):
    // the connection closing before the response ended says so, whatever the response's form.
    const response = NodeHttpServerRequest.toServerResponse(request)
    response.once("close", () => {
      if (!response.writableFinished) served?.interruptUnsafe()
    })
    return yield* exchangeWith(
      (out) => {
        served = sessions.serve(admitted.success, target, out, principal)
      },
      sse,
      {},
      sessions.statusOf
    )
  })

/** `serveOn(request, target, principal)`: the endpoint's answer to a request that passed the checks in front of it. */
export const make = (sessions: SharedSessions, handOff: HandOff, config: ResolvedConfig) => {
  /** The session a request names, or the response that refuses it. */
  const findSession = (request: HttpServerRequest.HttpServerRequest, target: Target, principal: Principal) => {
    const found = sessions.find(request.headers[SESSION_HEADER], target, principal?.subject, request.headers[VERSION_HEADER])
    return "status" in found ? { refused: reject(found.status, found.message) } : { session: found }
  }

  /**
   * Dispatches a body that expects replies and answers with them: JSON when the reply comes
   * first, an SSE stream when a notification does (and the client accepts one), or always a
   * stream when the client ranks it first (`alwaysStream`).
   */
  const exchange = (
    session: SharedSession,
    value: unknown,
    sse: boolean,
    headers: Record<string, string>,
    alwaysStream = false
  ): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
    exchangeWith(
      (out) => session.receive(value, out),
      sse,
      headers,
      () => 200,
      alwaysStream
    )

  const post = (request: HttpServerRequest.HttpServerRequest, target: Target, principal: Principal) =>
    Effect.gen(function* () {
      const contentType = request.headers["content-type"] ?? ""
      if (!/^application\/json\s*(;|$)/i.test(contentType)) {
        return reject(415, "Unsupported Media Type: Content-Type must be application/json")
      }
      const { json: json_, sse, prefersSse } = acceptsOf(request.headers["accept"])
      if (!json_ && !sse) return reject(406, "Not Acceptable: Accept must include application/json or text/event-stream")
      const body = yield* readBody(request, config.maxFrameBytes)
      if (body === null) return reject(400, "Bad Request: the request body could not be read")
      if (body === undefined) {
        // The rest of the body is not worth reading: the connection closes after this reply.
        return reject(413, `Payload Too Large: the body exceeds the limit of ${config.maxFrameBytes} bytes`, {
          connection: "close"
        })
      }
      let value: unknown
      try {
        value = Depth.parse(body)
      } catch (error) {
        return json(400, failure(null, { code: ErrorCode.ParseError, message: `Parse error: ${messageOf(error)}` }))
      }
      const items = Array.isArray(value) ? value : [value]
      const kind = sessions.kindOf(value, request.headers[SESSION_HEADER], request.headers[VERSION_HEADER])
      if (kind === "initialize") {
        if (items.length > 1) return reject(400, "Bad Request: initialize must be sent alone, not in a batch")
        if (request.headers[SESSION_HEADER] !== undefined) {
          return reject(400, "Bad Request: initialize starts a session: send it without Mcp-Session-Id")
        }
        const opened = yield* sessions.open(target, principal)
        if ("status" in opened) return reject(opened.status, opened.message, opened.headers, opened.code)
        // Always JSON: the session exists only if initialize succeeded, known once it replied.
        const response = yield* exchange(opened, value, false, {}).pipe(
          // The client went away before it learned the session's id: nobody can use it.
          Effect.onInterrupt(() => opened.close("initialize abandoned"))
        )
        if (!opened.ready()) {
          yield* opened.close("initialize failed")
          return response
        }
        return HttpServerResponse.setHeader(response, SESSION_HEADER, opened.id)
      }
      if (kind === "stateless") return yield* stateless(sessions, handOff, { request, value, body, target, principal, sse })
      const found = findSession(request, target, principal)
      if (found.refused) return found.refused
      const expectsReply =
        items.length === 0 ||
        items.some((item) => {
          const tag = classify(item)._tag
          return tag === "Request" || tag === "Invalid"
        })
      if (!expectsReply) {
        found.session.receive(value, { send: () => {} })
        return HttpServerResponse.empty({ status: 202 })
      }
      return yield* exchange(found.session, value, sse, {}, prefersSse)
    })

  const get = (request: HttpServerRequest.HttpServerRequest, target: Target, principal: Principal) =>
    Effect.gen(function* () {
      if (!accepts(request.headers["accept"], "text/event-stream") || request.headers["accept"] === undefined) {
        return reject(406, "Not Acceptable: Accept must include text/event-stream")
      }
      const found = findSession(request, target, principal)
      if (found.refused) return found.refused
      // Ended (not shut down): the stream ends as a stream, not as an interruption.
      const queue = yield* Queue.sliding<unknown, Cause.Done>(STREAM_BUFFER)
      const detach = found.session.attach({ send: (m: unknown) => Queue.offerUnsafe(queue, m), end: Queue.end(queue) })
      if (detach === undefined) return reject(409, "Conflict: this session already has a GET stream open")
      const keepalive = Stream.tick(KEEPALIVE_MS).pipe(Stream.drop(1), Stream.as(encoder.encode(": keepalive\n\n")))
      const body = Stream.fromQueue(queue).pipe(
        Stream.map(sseEvent),
        Stream.merge(keepalive, { haltStrategy: "left" }),
        // A first comment sends the headers now: a client waits for them before it reads on.
        Stream.prepend([encoder.encode(": stream open\n\n")]),
        Stream.ensuring(Effect.sync(detach))
      )
      return HttpServerResponse.stream(body, { contentType: "text/event-stream", headers: SSE_HEADERS })
    })

  const del = (request: HttpServerRequest.HttpServerRequest, target: Target, principal: Principal) =>
    Effect.gen(function* () {
      const found = findSession(request, target, principal)
      if (found.refused) return found.refused
      yield* found.session.close("ended by the client (DELETE)")
      return HttpServerResponse.empty({ status: 204 })
    })

  const serveOn = (request: HttpServerRequest.HttpServerRequest, target: Target, principal: Principal) => {
    switch (request.method) {
      case "POST":
        return post(request, target, principal)
      case "GET":
        return get(request, target, principal)
      case "DELETE":
        return del(request, target, principal)
      default:
        return Effect.succeed(reject(405, "Method Not Allowed", { allow: "GET, POST, DELETE" }))
    }
  }

  return serveOn
}
