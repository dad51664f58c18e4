/**
 * The events hub: what crosses the gateway (client⇄gateway and gateway⇄backend messages), backend
 * state changes, sessions opening and closing, configuration reloads, and log records, on one
 * Effect `PubSub`.
 *
 * Observers (the debug UI, OpenTelemetry, tests) subscribe; producers call `publish` from plain
 * callbacks. With nobody subscribed `publish` is one comparison and builds nothing: producers
 * check `active()` before they even make an event, so the hot path pays nothing for observability
 * it does not use. A slow subscriber never slows the gateway: the hub is sliding (the oldest
 * events are dropped for it).
 */
import { Context, Effect, Layer, PubSub, type Scope } from "effect"
import type { BackendStatus } from "./BackendStatus.js"

export type Direction = "in" | "out"

export type Event =
  /** A JSON-RPC message (or batch) from a client ("in") or to it ("out"). */
  | {
      readonly _tag: "ClientMessage"
      readonly at: number
      readonly sessionId: string
      readonly direction: Direction
      readonly message: unknown
    }
  /** A message to a backend ("out") or from it ("in"). */
  | {
      readonly _tag: "BackendMessage"
      readonly at: number
      readonly backendId: string
      readonly direction: Direction
      readonly message: unknown
    }
  | { readonly _tag: "BackendState"; readonly at: number; readonly status: BackendStatus }
  /**
   * A request the gateway made of a backend, once it ended: "error" for a JSON-RPC error, a crash,
   * a timeout or a backend not running, "isError" for a tool result that says it failed.
   */
  | {
      readonly _tag: "BackendCall"
      readonly at: number
      readonly backendId: string
      readonly method: string
      readonly ms: number
      readonly outcome: "ok" | "error" | "isError" | "cancelled"
      /** What went wrong (the error's message, an isError result's text), not yet scrubbed. */
      readonly detail?: string | undefined
    }
  | {
      readonly _tag: "Session"
      readonly at: number
      readonly sessionId: string
      readonly transport: string
      /** Who its access token speaks for (`--http-auth oauth`). */
      readonly subject?: string | undefined
      readonly state: "opened" | "closed"
    }
  /**
   * A change of the configuration on disk: applied (what it changed, by backend id), refused (why),
   * or unchanged (valid, and what already runs: after a refusal, the file was put back).
   */
  | {
      readonly _tag: "ConfigReload"
      readonly at: number
      readonly outcome: "applied" | "refused" | "unchanged"
      readonly added?: ReadonlyArray<string>
      readonly removed?: ReadonlyArray<string>
      readonly restarted?: ReadonlyArray<string>
      readonly reexposed?: ReadonlyArray<string>
      readonly ms?: number
      readonly message?: string
    }
  /** One orchestration, from the query to the result (published only while someone listens). */
  | ({ readonly _tag: "Orchestration"; readonly at: number } & OrchestrationRecord)
  | {
      readonly _tag: "Log"
      readonly at: number
      readonly level: string
      readonly message: string
      readonly fields: Readonly<Record<string, unknown>>
    }

export interface OrchestrationStep {
  readonly step: number
  readonly tool: string
  readonly arguments: unknown
  /** "approved": it ran once the user agreed (to a hold, or to `confirmTools`). */
  readonly outcome: "ok" | "approved" | "error" | "search" | "declined" | "invalid" | "held"
  readonly ms: number
  /** What the search found, why the call was refused. */
  readonly detail?: string | undefined
}

export interface OrchestrationRecord {
  readonly query: string
  readonly context: unknown
  readonly routing: string
  /**
   * What the model was offered, in the order sent (the task ranking's, fused with the semantic one
   * when configured), each with its lexical score when it has one: one input of that ranking, so
   * the scores need not descend.
   */
  readonly offered: ReadonlyArray<{ readonly name: string; readonly score?: number }>
  readonly model?: string | undefined
  /** The function the model called and its arguments (JSON text), if it called one. */
  readonly choice?: { readonly name: string; readonly arguments: string } | undefined
  /** What the model said besides (its explanation, or why it called nothing). */
  readonly explanation?: string | null | undefined
  readonly plan?: { readonly backendId: string; readonly method: string; readonly params: unknown } | undefined
  /** Each call of each step as it went: run (ok or error), a search, declined, or refused as invalid. */
  readonly steps?: ReadonlyArray<OrchestrationStep> | undefined
  readonly result?: unknown
  readonly error?: { readonly code: number; readonly message: string } | undefined
  readonly llmMs?: number | undefined
  readonly usage?: { readonly promptTokens: number; readonly completionTokens: number; readonly totalTokens: number } | undefined
  /** Code mode: the script that ran, what it logged, and the limit that stopped it. */
  readonly code?: string | undefined
  readonly logs?: ReadonlyArray<string> | undefined
  readonly limit?: string | undefined
  readonly totalMs: number
  /** The run's id in the audit log, when that is on. */
  readonly auditId?: string | undefined
}

/** Events kept for a subscriber that has not taken them yet; older ones are dropped. */
export const SUBSCRIBER_CAPACITY = 16_384

export interface EventsService {
  /** True while at least one subscriber listens: check it before building an event. */
  readonly active: () => boolean
  /** Publishes synchronously (from any callback); a no-op with nobody subscribed. */
  readonly publish: (event: Event) => void
  /** Events from now until the scope closes. */
  readonly subscribe: Effect.Effect<PubSub.Subscription<Event>, never, Scope.Scope>
}

export const make: Effect.Effect<EventsService> = Effect.gen(function* () {
  // Made with the first subscriber: its ring of 16,384 slots is work for every start, and most
  // starts have no observer.
  let hub: PubSub.PubSub<Event> | undefined
  const made = yield* Effect.cached(
    Effect.tap(PubSub.sliding<Event>(SUBSCRIBER_CAPACITY), (created) => Effect.sync(() => void (hub = created)))
  )
  let subscribers = 0
  return {
    active: () => subscribers > 0,
    publish: (event) => {
      if (subscribers > 0 && hub !== undefined) PubSub.publishUnsafe(hub, event)
    },
    subscribe: Effect.acquireRelease(
      Effect.flatMap(made, (created) => Effect.tap(PubSub.subscribe(created), () => Effect.sync(() => subscribers++))),
      () => Effect.sync(() => subscribers--)
    )
  }
})

/** Nobody listens: for code that may run without a hub (a backend used on its own). */
export const none: EventsService = {
  active: () => false,
  publish: () => {},
  subscribe: Effect.die("no events hub")
}

/**
 * The hub, where one is provided (the gateway's layer, the debug UI's); code run without one (a
 * backend or the orchestrator used on their own, an embedding app) publishes to nobody.
 */
const EventsReference = Context.Reference<EventsService>("mcp-agentify/Events", { defaultValue: () => none })

/** The hub's reference, and `Events.layer`, a hub of its own. */
export const Events: typeof EventsReference & { readonly layer: Layer.Layer<never> } = Object.assign(EventsReference, {
  layer: Layer.effect(EventsReference, make)
})
