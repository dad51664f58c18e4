/**
 * One dispatcher for the stateless era's (2026-07-28) requests, whatever carries them: each request
 * checked (its version and `_meta`), served beside the others with exactly one reply, cancelled by
 * id (`notifications/cancelled`) or by the gateway's stop (it still replies), and listen streams
 * bounded. A transport frames messages and carries replies; it knows nothing of the era.
 */
import { Effect, type Fiber, type Scope, Result } from "effect"
import * as Era from "../session/Era.js"
import * as Inbound from "../../jsonrpc/Inbound.js"
import { failure, type Id, isId, type Request, type Response } from "../../jsonrpc/JsonRpc.js"
import type { Outbox } from "../../jsonrpc/Peer.js"
import { ErrorCode } from "../../protocol/Errors.js"
import * as Headers from "../../protocol/Headers.js"
import { StatelessErrorCode } from "../../protocol/Mcp.js"
import type { BackendsService } from "../../backend/Backends.js"
import type { GatewayService } from "../Gateway.js"
import * as Stateless from "./Stateless.js"
import { waitsForStart } from "../methods/Lifecycle.js"
import { InputBridge } from "../clientRequests/InputBridge.js"
import type { Edge, Identity, Target } from "../session/Session.js"

export interface Options {
  /** What the transport says of its clients (see Session's `Edge`). */
  readonly edge: Edge
  /** Awaited before a request is served (stdio starts its backends with the first one). */
  readonly ready?: Effect.Effect<void> | undefined
  /** Why one more listen stream is refused now (a bound of the transport's), or undefined. */
  readonly listenRefusal: () => Refusal | undefined
}

export interface Refusal {
  /** The HTTP status, where there is one. */
  readonly status: number
  readonly message: string
  /** Headers of an HTTP refusal (retry-after). */
  readonly headers?: Readonly<Record<string, string>>
}

export interface Dispatcher {
  /** The era's own checks (version, `_meta`): the request's context, or the refusal to send. */
  readonly admit: (request: Request, header: string | undefined | null) => Result.Result<Era.Context, Era.Refusal>
  /**
   * Over HTTP, whether the SEP-2243 headers (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) agree with
   * the body, against the names a client at `target` sees: the refusal (400, -32020) if not.
   */
  readonly checkHeaders: (
    request: Request,
    headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
    target: Target
  ) => Era.Refusal | undefined
  /** Serves one admitted request beside the others; its one reply goes to `out`. */
  readonly serve: (
    request: Request,
    context: Era.Context,
    target: Target,
    out: Outbox,
    identity?: Identity
  ) => Fiber.Fiber<unknown, unknown> | undefined
  /** The client gave up on a request (`notifications/cancelled`): stopped at its backend, still replied to. */
  readonly cancel: (requestId: unknown) => void
  /**
   * A `subscriptions/listen` stream in the caller's scope: acknowledged, then the notifications asked
   * for, until the scope closes. A refusal (the transport's bound) instead when there is one.
   */
  readonly listen: (request: Request, target: Target, out: Outbox) => Effect.Effect<Refusal | undefined, never, Scope.Scope>
  /** Listen streams open now. */
  readonly listening: () => number
  /** Why one more listen stream would be refused now (the transport's bound), or undefined. */
  readonly listenRefusal: () => Refusal | undefined
  /** Requests in flight get `graceMs` to finish, then are cancelled (each still replies). */
  readonly drain: (graceMs: number) => Effect.Effect<void>
}

export const make = (gateway: GatewayService, backends: BackendsService, options: Options) =>
  Effect.gen(function* () {
    const stateless = yield* Stateless.make(gateway, backends, yield* InputBridge)
    // Interruptible: a transport's runtime may be captured while a layer builds, an uninterruptible region.
    const inbound = yield* Effect.interruptible(
      Inbound.make<Id, Response, never>({
        // Many clients, each picking its own ids: a second one in flight runs too, uncancellable by id.
        duplicates: "allow",
        reply: (id, exit, ending) => {
          if (exit._tag === "Success") return exit.value
          const message = ending === "cancelled" ? "Request cancelled" : "Request cancelled: the gateway is stopping"
          return failure(id, { code: ErrorCode.RequestCancelled, message })
        }
      })
    )
    const ready = options.ready ?? Effect.void
    // Each request is its own first: one that needs the backends waits for those still starting.
    const readyFor = (method: string) => (waitsForStart(method) ? Effect.andThen(ready, backends.settle) : ready)
    let listening = 0

    const serve = (request: Request, context: Era.Context, target: Target, out: Outbox, identity?: Identity) =>
      inbound.run(
        request.id,
        request.id,
        Effect.interruptible(
          Effect.andThen(readyFor(request.method), stateless.serve(request, context, target, options.edge, out, identity))
        ),
        (response) => out.send(response)
      )

    const cancel = (requestId: unknown) => {
      // Its call is cancelled at the backend too; the request still gets its one reply.
      if (isId(requestId)) inbound.cancel(requestId)
    }

    const listen = (request: Request, target: Target, out: Outbox) =>
      Effect.gen(function* () {
        const refused = options.listenRefusal()
        if (refused !== undefined) return refused
        yield* Effect.acquireRelease(
          Effect.sync(() => listening++),
          () => Effect.sync(() => listening--)
        )
        yield* ready
        yield* stateless.listen(request, target, options.edge, out)
        return undefined
      })

    const checkHeaders: Dispatcher["checkHeaders"] = (request, headers, target) => {
      const why = Headers.mismatch(request, headers, (name) => gateway.toolOf(target, name)?.inputSchema)
      return why === undefined
        ? undefined
        : { status: 400, response: failure(request.id, { code: StatelessErrorCode.HeaderMismatch, message: why }) }
    }

    const dispatcher: Dispatcher = {
      admit: Era.decode,
      checkHeaders,
      serve,
      cancel,
      listen,
      listening: () => listening,
      listenRefusal: options.listenRefusal,
      drain: inbound.drain
    }
    return dispatcher
  })
