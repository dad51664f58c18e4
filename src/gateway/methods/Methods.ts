/**
 * Method tables as data: each row says how a method's params are decoded (a Schema, decoded once
 * where the request enters, unknown fields kept) and what the method does with them. A table is
 * looked up by name (a `Map`: a method called `constructor` or `__proto__` finds nothing), so a
 * new method is one row, and a test can read which methods a table answers.
 */
import { Effect, Result } from "effect"
import type { GatewayError } from "../../protocol/Errors.js"
import type { Notification, Request } from "../../jsonrpc/JsonRpc.js"
import type { RequestContext } from "../../jsonrpc/Peer.js"
import { decode, type ParamsSchema } from "./Params.js"

/** One row: the method run with its raw params (decoded by the row's schema, if it has one). */
export interface Method<R = never> {
  readonly run: (params: unknown, context: RequestContext, method: string) => Effect.Effect<unknown, GatewayError, R>
}

/** A row whose params are decoded with `schema` first (-32602 naming each problem otherwise). */
export const method = <A, R = never>(
  schema: ParamsSchema<A>,
  handler: (params: A, context: RequestContext, method: string) => Effect.Effect<unknown, GatewayError, R>
): Method<R> => {
  const decodeParams = decode(schema)
  return {
    run: (params, context, name) => {
      // Synchronously: this is also the passthrough hot path.
      const decoded = decodeParams(params)
      return Result.isFailure(decoded) ? Effect.fail(decoded.failure) : handler(decoded.success, context, name)
    }
  }
}

/**
 * A row that hands its params on as they came: a request relayed to the backend that owns what it
 * names, where the router reads what it needs and the backend judges the rest.
 */
export const relayed = <R = never>(
  handler: (params: unknown, context: RequestContext, method: string) => Effect.Effect<unknown, GatewayError, R>
): Method<R> => ({ run: handler })

/** A row that takes no params. */
export const constant = <R = never>(effect: Effect.Effect<unknown, GatewayError, R>): Method<R> => ({ run: () => effect })

export type Table<R = never> = ReadonlyMap<string, Method<R>>

export const table = <R = never>(rows: Readonly<Record<string, Method<R>>>): Table<R> => new Map(Object.entries(rows))

/** Runs a request on its row, or on `otherwise` when the table has none. */
export const run = <R = never>(
  methods: Table<R>,
  request: Request,
  context: RequestContext,
  otherwise: (request: Request, context: RequestContext) => Effect.Effect<unknown, GatewayError, R>
): Effect.Effect<unknown, GatewayError, R> => {
  const row = methods.get(request.method)
  return row === undefined ? otherwise(request, context) : row.run(request.params, context, request.method)
}

export type Notifications<R = never> = ReadonlyMap<string, (notification: Notification) => Effect.Effect<void, never, R>>

export const notifications = <R = never>(
  rows: Readonly<Record<string, (notification: Notification) => Effect.Effect<void, never, R>>>
): Notifications<R> => new Map(Object.entries(rows))

/** Runs a notification on its row, or `otherwise`. */
export const notify = <R = never>(
  rows: Notifications<R>,
  notification: Notification,
  otherwise: (notification: Notification) => Effect.Effect<void, never, R>
): Effect.Effect<void, never, R> => {
  const row = rows.get(notification.method)
  return (row ?? otherwise)(notification)
}

/**
 * A concern's rows as a service: `rows` over what `deps` gives (read once, from the services it
 * names), the session and what else the rows take filled in for each session.
 */
export const rowsOf = <D, A extends ReadonlyArray<unknown>, B, R>(
  deps: Effect.Effect<D, never, R>,
  rows: (deps: D, ...args: A) => B
): Effect.Effect<{ readonly rows: (...args: A) => B }, never, R> =>
  Effect.map(deps, (given) => ({ rows: (...args: A) => rows(given, ...args) }))
