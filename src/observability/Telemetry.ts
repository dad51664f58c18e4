/**
 * OpenTelemetry, when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is
 * set: traces and metrics exported over OTLP/HTTP (JSON) by Effect's own OTLP exporters
 * (`effect/observability`), which need no OpenTelemetry SDK.
 *
 * Spans follow the MCP semantic conventions: one per client request (`tools/call fx__echo`, kind
 * server, its parent taken from the request's `_meta.traceparent`), one per backend request (kind
 * client, `_meta.traceparent` passed on to the backend), and the orchestrator's and the LLM's own
 * (`Orchestrator.orchestrate`, `Orchestrator.plan`, `Llm.chat`). Metrics: backend calls, errors
 * and their duration by backend and tool.
 *
 * Off, none of this exists: `isActive()` is a module flag (set once when the layer builds) so the
 * hot paths check one boolean and build no span, attribute or metric. The process's, as its
 * settings are: they come from the process's environment (`OTEL_*`), one exporter per process.
 */
import { Effect, Layer, Metric, Option, Tracer } from "effect"
import * as Secrets from "./Secrets.js"
import type { ExportSettings } from "./TelemetryExport.js"
import * as Meta from "../json/Meta.js"
import { stringField } from "../json/Json.js"

let active = false

/** Whether spans and metrics are exported (decided once, at start-up). */
export const isActive = (): boolean => active

/** The export settings from the standard OTEL_* variables, or undefined when export is off. */
export const settingsFrom = (env: Readonly<Record<string, string | undefined>>): ExportSettings | undefined => {
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || (base ? `${base.replace(/\/+$/, "")}/v1/traces` : undefined)
  if (traces === undefined || env.OTEL_SDK_DISABLED === "true") return undefined
  const metrics = env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT?.trim() || (base ? `${base.replace(/\/+$/, "")}/v1/metrics` : undefined)
  // "key=value,key2=value2", percent-encoded; the values are credentials.
  const headers: Record<string, string> = {}
  for (const pair of (env.OTEL_EXPORTER_OTLP_HEADERS ?? "").split(",")) {
    const at = pair.indexOf("=")
    if (at <= 0) continue
    const value = decodeURIComponent(pair.slice(at + 1).trim())
    Secrets.register(value)
    headers[decodeURIComponent(pair.slice(0, at).trim())] = value
  }
  const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY ?? "")
  return {
    traces,
    metrics,
    headers,
    serviceName: env.OTEL_SERVICE_NAME?.trim() || "mcp-agentify",
    exportIntervalMs: Number.isInteger(delay) && delay > 0 ? delay : 5_000
  }
}

/**
 * The exporters, or nothing when `env` sets no endpoint. They are loaded only then: most starts
 * export nothing and need not read their code.
 */
export const layer = (env: Readonly<Record<string, string | undefined>>, version: string): Layer.Layer<never> => {
  const settings = settingsFrom(env)
  if (settings === undefined) return Layer.empty
  return Layer.unwrap(
    Effect.tryPromise(() => import("./TelemetryExport.js")).pipe(
      Effect.map(({ exporters }) =>
        Layer.merge(
          exporters(settings, version),
          Layer.effectDiscard(
            Effect.sync(() => {
              active = true
            })
          )
        )
      ),
      Effect.catch((error) =>
        Effect.as(
          Effect.logError(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the exporters cannot be loaded; telemetry is off",
            String(error.cause)
          ),
          Layer.empty
        )
      )
    )
  )
}

// ---------------------------------------------------------------------------------------------
// Trace context (W3C traceparent in `_meta`)

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** The caller's span from `params._meta.traceparent`, when it carries a valid one. */
export const parentFrom = (params: unknown): Tracer.ExternalSpan | undefined => {
  const raw = Meta.get(params, "traceparent")
  if (typeof raw !== "string") return undefined
  const [, traceId = "", spanId = "", flags = "0"] = TRACEPARENT.exec(raw.trim().toLowerCase()) ?? []
  if (traceId === "" || /^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined
  return Tracer.externalSpan({ traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 })
}

/** `params` with `_meta.traceparent` naming `span` (the backend's parent). */
export const withTraceparent = (params: unknown, span: Tracer.AnySpan): unknown => {
  const flags = span.sampled ? "01" : "00"
  return Meta.merge(params, { traceparent: `00-${span.traceId}-${span.spanId}-${flags}` })
}

/** What a request is about, for the span name: the tool, prompt or resource it names. */
const targetOf = (method: string, params: unknown): string | undefined => {
  if (method === "tools/call" || method === "prompts/get") return stringField(params, "name")
  if (method.startsWith("resources/")) return stringField(params, "uri")
  return undefined
}

/** A client's request to the gateway as a server span (its parent from `_meta.traceparent`). */
export const serverSpan = <A, E, R>(
  method: string,
  id: string | number,
  params: unknown,
  sessionId: string,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => {
  const target = targetOf(method, params)
  const parent = parentFrom(params)
  return Effect.withSpan(effect, target === undefined ? method : `${method} ${target}`, {
    kind: "server",
    ...(parent === undefined ? {} : { parent }),
    attributes: {
      "mcp.method.name": method,
      "jsonrpc.request.id": String(id),
      "mcp.session.id": sessionId,
      ...(method === "tools/call" && target !== undefined ? { "gen_ai.tool.name": target } : {}),
      ...(method === "agentify/orchestrateTask" ? { "gen_ai.operation.name": "orchestrate" } : {})
    }
  })
}

const callsCounter = Metric.counter("mcp.backend.calls", { description: "Requests the gateway sent to backends" })
const errorsCounter = Metric.counter("mcp.backend.errors", { description: "Backend requests that failed" })
const durations = Metric.histogram("mcp.backend.duration", {
  description: "Backend request duration (ms)",
  boundaries: Metric.exponentialBoundaries({ start: 1, factor: 2, count: 16 })
})

/**
 * A request to a backend as a client span, `send` given the params with `_meta.traceparent` naming
 * it; counted, timed and its failures counted by backend and tool.
 */
export const clientSpan = <A, E, R>(
  backendId: string,
  method: string,
  params: unknown,
  send: (params: unknown) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => {
  const target = targetOf(method, params)
  const tag = (key: string, value: string): [string, string] => [key, value]
  const tags: ReadonlyArray<[string, string]> = [
    ["backend", backendId],
    ["method", method],
    ...(target === undefined || method !== "tools/call" ? [] : [tag("tool", target)])
  ]
  const tagged = Metric.withAttributes(tags)
  const started = Date.now()
  const record = (failed: boolean) =>
    Effect.all(
      [
        Metric.update(tagged(callsCounter), 1),
        failed ? Metric.update(tagged(errorsCounter), 1) : Effect.void,
        Metric.update(tagged(durations), Date.now() - started)
      ],
      { discard: true }
    )
  return Effect.flatMap(Effect.option(Effect.currentSpan), (span) =>
    send(Option.isSome(span) ? withTraceparent(params, span.value) : params)
  ).pipe(
    Effect.tap(() => record(false)),
    Effect.tapError(() => record(true)),
    Effect.withSpan(target === undefined ? method : `${method} ${target}`, {
      kind: "client",
      attributes: {
        "mcp.method.name": method,
        "mcp.backend.id": backendId,
        ...(method === "tools/call" && target !== undefined ? { "gen_ai.tool.name": target } : {})
      }
    })
  )
}
