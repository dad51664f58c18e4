/**
 * The HTTP+SSE transport of 2024-11-05: one event stream (GET) whose first `endpoint` event says
 * where to POST; every message from the server comes on that stream.
 */
import { Deferred, Effect, Exit } from "effect"
import { readEvents } from "./EventStream.js"
import * as Fetch from "./Fetch.js"
import { CONNECT_TIMEOUT_MS, type Sent, RemoteChannel } from "./RemoteChannel.js"

export class SseChannel extends RemoteChannel {
  /** The POST address, from the `endpoint` event. */
  private endpoint: URL | undefined = undefined

  /** Opens the event stream and waits for the `endpoint` event that says where to POST. */
  get connect(): Effect.Effect<void, Error> {
    return Effect.gen({ self: this }, function* () {
      const connected = yield* Deferred.make<void, Error>()
      const failed = (why: string) =>
        Effect.gen({ self: this }, function* () {
          if (!(yield* Deferred.fail(connected, new Error(why)))) this.lose(why)
        })
      const stream = Effect.gen({ self: this }, function* () {
        const response = yield* Fetch.request(this.url, {
          method: "GET",
          headers: { ...this.options.headers, accept: "text/event-stream" }
        })
        const type = response.headers.get("content-type") ?? ""
        if (!response.ok || response.body === null || !type.includes("text/event-stream")) {
          const text = yield* Fetch.readText(response, Fetch.ERROR_BODY_CHARS * 4)
          return yield* failed(`could not open the event stream: ${Fetch.httpProblem(response, text)}`)
        }
        yield* readEvents(
          response.body,
          this.options.maxFrameBytes,
          (event) => {
            if (event.event === "endpoint" && this.endpoint === undefined) {
              const endpoint = Fetch.sameOrigin(this.url, event.data)
              if (endpoint === undefined) {
                const why = "the server's endpoint is on another origin (refused: credentials would follow it)"
                return Deferred.doneUnsafe(connected, Exit.fail(new Error(why)))
              }
              this.endpoint = endpoint
              Deferred.doneUnsafe(connected, Exit.void)
            } else if (event.event === "message") this.incoming(event.data)
          },
          this.note
        )
        yield* failed("closed its event stream")
      }).pipe(Effect.catch((error) => failed(`could not be reached (${error.message})`)))
      this.run(stream)
      yield* Deferred.await(connected).pipe(
        Effect.timeoutOrElse({
          duration: CONNECT_TIMEOUT_MS,
          orElse: () => Effect.fail(new Error(`the server sent no endpoint within ${CONNECT_TIMEOUT_MS} ms`))
        })
      )
    })
  }

  protected send(message: Sent, body: string) {
    if (this.endpoint === undefined) return
    this.run(this.post(this.endpoint, message, body))
  }

  private post(endpoint: URL, message: Sent, body: string) {
    const isRequest = message.id !== undefined && message.method !== undefined
    return Effect.gen({ self: this }, function* () {
      const response = yield* Fetch.request(endpoint, {
        method: "POST",
        headers: { ...this.options.headers, "content-type": "application/json" },
        body
      })
      const text = yield* Fetch.readText(response, Fetch.ERROR_BODY_CHARS * 4)
      if (response.ok) return
      // The server forgot this connection: only a new one helps, which the supervisor makes.
      if (response.status === 404) return this.lose("ended the connection (HTTP 404 on its endpoint)")
      if (isRequest) this.replyError(message.id!, Fetch.httpProblem(response, text), response.status)
      else this.note(`${message.method ?? "a reply"} was refused: HTTP ${response.status}`)
    }).pipe(Effect.catch((error) => Effect.sync(() => this.lose(`could not be reached (${error.message})`))))
  }
}
