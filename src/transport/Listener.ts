/**
 * The connections of a Node HTTP listener, so that stopping it is bounded; and a first look at its
 * requests (`first`).
 *
 * The platform's server closes its listener when its scope closes and waits until every
 * connection has ended. Node's `closeAllConnections` misses upgraded sockets (a debug page's
 * WebSocket), and a connection whose response is still being written holds the close for as
 * long as it lasts. `close` lets idle keep-alive connections go at once, gives busy ones a grace
 * to finish their response, then destroys whatever is left, upgraded sockets included.
 */
import { Effect, Schedule, type Scope } from "effect"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import type { Socket } from "node:net"

export interface Connections {
  /** Connections open now. */
  readonly open: () => number
  /** Ends every connection within `graceMs`: idle ones now, busy ones when done, the rest destroyed. */
  readonly close: (graceMs: number) => Effect.Effect<void>
}

/** Tracks `node`'s connections from now on (call it before the server listens). */
export const track = (node: Server): Connections => {
  const sockets = new Set<Socket>()
  node.on("connection", (socket: Socket) => {
    sockets.add(socket)
    socket.once("close", () => sockets.delete(socket))
  })
  const close = (graceMs: number) =>
    Effect.suspend(() => {
      node.closeIdleConnections()
      return Effect.sync(() => {
        // A connection that finished its response since the last look is idle now.
        node.closeIdleConnections()
        return sockets.size
      }).pipe(
        Effect.repeat({ schedule: Schedule.spaced(20), until: (left) => left === 0 }),
        Effect.timeoutOption(graceMs),
        Effect.interruptible
      )
    }).pipe(
      Effect.ensuring(
        Effect.sync(() => {
          for (const socket of sockets) socket.destroy()
          sockets.clear()
        })
      ),
      Effect.asVoid
    )
  return { open: () => sockets.size, close }
}

/**
 * `handle` sees each request of `node` before the handlers it has now (the platform's), which get
 * the requests it leaves (returns false for): a request passed on as it is needs nothing parsed
 * (see Forward.handOn). While the scope is open.
 */
export const first = (node: Server, handle: (request: IncomingMessage, response: ServerResponse) => boolean) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const others = node.listeners("request") as Array<(request: IncomingMessage, response: ServerResponse) => void>
      const each = (request: IncomingMessage, response: ServerResponse) => {
        if (!handle(request, response)) for (const other of others) other.call(node, request, response)
      }
      node.removeAllListeners("request")
      node.on("request", each)
      return { each, others }
    }),
    ({ each, others }) =>
      Effect.sync(() => {
        node.off("request", each)
        for (const other of others) node.on("request", other)
      })
  ) satisfies Effect.Effect<unknown, never, Scope.Scope>
