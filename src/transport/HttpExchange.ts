/**
 * One endpoint (a target: the aggregate, a backend, a profile) over Streamable HTTP: `POST`
 * carries a body in and its answer out (refused, one message as JSON, 202, an exchange whose
 * replies go as JSON or an SSE stream, a stream as long as the client reads it, or a hand-off to
 * the gateway of the team that holds what it is about); `GET` opens the stream of what a client is
 * sent outside any request; `DELETE` ends what the request names. HTTP only: what a body is, and
 * how it is answered, are decided behind the Protocol (gateway/clients/SharedSessions).
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { type Cause, Effect, Queue, Stream } from "effect"
import type { ResolvedConfig } from "../config/Config.js"
import type { Arrival, Delivery, Refused, SharedSessions, Target } from "../gateway/clients/Protocol.js"
import { failure } from "../jsonrpc/JsonRpc.js"
import type * as Peer from "../jsonrpc/Peer.js"
import { ErrorCode } from "../protocol/Errors.js"
import { messageOf } from "../json/Json.js"
import * as Depth from "../json/Depth.js"
import type { Principal } from "./HttpAccess.js"
import * as Forward from "./Forward.js"
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
  SSE_HEADERS,
  sseEvent,
  STREAM_BUFFER
} from "./HttpWire.js"

type Response = HttpServerResponse.HttpServerResponse

/** A refusal of the sessions, as the transport sends it. */
const refuse = (refused: Refused): Response => reject(refused.status, refused.message, refused.headers, refused.code)

/** `serveOn(request, target, principal)`: the endpoint's answer to a request that passed the checks in front of it. */
export const make = (sessions: SharedSessions, handOff: HandOff, config: ResolvedConfig) => {
  const arrivalOf = (request: HttpServerRequest.HttpServerRequest, target: Target, principal: Principal): Arrival => ({
    headers: request.headers,
    target,
    identity: principal
  })

  /** The answer to a body, as the sessions decided it. */
  const answer = (request: HttpServerRequest.HttpServerRequest, text: string, delivery: Delivery): Effect.Effect<Response> => {
    switch (delivery._tag) {
      case "Refused":
        return Effect.succeed(refuse(delivery.refused))
      case "Answer":
        return Effect.succeed(json(delivery.status, delivery.message))
      case "Accepted":
        return Effect.succeed(HttpServerResponse.empty({ status: 202 }))
      case "HeldBy":
        return Effect.flatMap(handOff.toHolder(request, delivery.replica, text), (handed) =>
          handed !== undefined ? Effect.succeed(handed) : Effect.flatMap(delivery.ifGone, (next) => answer(request, text, next))
        )
      case "Feed": {
        const events = Stream.unwrap(
          Effect.gen(function* () {
            const q = yield* Queue.sliding<unknown>(STREAM_BUFFER)
            yield* delivery.open({ send: (m: unknown) => Queue.offerUnsafe(q, m) })
            return Stream.fromQueue(q)
          })
        ).pipe(Stream.map(sseEvent))
        return Effect.succeed(HttpServerResponse.stream(events, { contentType: "text/event-stream", headers: SSE_HEADERS }))
      }
      case "Exchange": {
        let cancel: (() => void) | undefined
        // A client that goes away mid-exchange cancels what it started, when that can be: the
        // connection closing before the response ended says so, whatever the response's form.
        const dispatch = (out: Peer.Outbox) => {
          cancel = delivery.dispatch(out)
          if (cancel === undefined) return
          const response = NodeHttpServerRequest.toServerResponse(request)
          response.once("close", () => {
            if (!response.writableFinished) cancel?.()
          })
        }
        const exchanged = exchangeWith(dispatch, delivery.streams, {}, delivery.statusOf, delivery.alwaysStream)
        const abandoned = delivery.abandoned
        const settle = delivery.settle
        return (abandoned === undefined ? exchanged : Effect.onInterrupt(exchanged, () => abandoned)).pipe(
          Effect.flatMap((response) =>
            settle === undefined
              ? Effect.succeed(response)
              : Effect.map(settle, (headers) => HttpServerResponse.setHeaders(response, headers))
          )
        )
      }
    }
  }

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
      const delivery = yield* sessions.deliver({
        ...arrivalOf(request, target, principal),
        value,
        text: body,
        streams: sse,
        prefersStream: prefersSse,
        forwarded: Forward.wasForwarded(request)
      })
      return yield* answer(request, body, delivery)
    })

  const get = (request: HttpServerRequest.HttpServerRequest, target: Target, principal: Principal) =>
    Effect.gen(function* () {
      if (!accepts(request.headers["accept"], "text/event-stream") || request.headers["accept"] === undefined) {
        return reject(406, "Not Acceptable: Accept must include text/event-stream")
      }
      // Ended (not shut down): the stream ends as a stream, not as an interruption.
      const queue = yield* Queue.sliding<unknown, Cause.Done>(STREAM_BUFFER)
      const detach = sessions.watch(arrivalOf(request, target, principal), {
        send: (m: unknown) => Queue.offerUnsafe(queue, m),
        end: Queue.end(queue)
      })
      if (typeof detach !== "function") return refuse(detach)
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
      const refused = yield* sessions.end(arrivalOf(request, target, principal), "ended by the client (DELETE)")
      return refused === undefined ? HttpServerResponse.empty({ status: 204 }) : refuse(refused)
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
