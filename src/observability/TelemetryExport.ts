/**
 * The OTLP/HTTP exporters of traces and metrics, Effect's own (`effect/observability`, no
 * OpenTelemetry SDK). A module of its own so that it is loaded only when telemetry is on (see
 * Telemetry.layer).
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Layer } from "effect"
import * as OtlpMetrics from "effect/observability/OtlpMetrics"
import * as OtlpSerialization from "effect/observability/OtlpSerialization"
import * as OtlpTracer from "effect/observability/OtlpTracer"

/** Where and how to export (from the standard OTEL_* variables, see `Telemetry.settingsFrom`). */
export interface ExportSettings {
  readonly traces: string
  readonly metrics: string | undefined
  /** Credentials: registered as secrets where they are read. */
  readonly headers: Readonly<Record<string, string>>
  readonly serviceName: string
  readonly exportIntervalMs: number
}

export const exporters = (settings: ExportSettings, version: string): Layer.Layer<never> => {
  const resource = { serviceName: settings.serviceName, serviceVersion: version }
  return Layer.mergeAll(
    OtlpTracer.layer({
      url: settings.traces,
      resource,
      headers: settings.headers,
      exportInterval: settings.exportIntervalMs
    }),
    settings.metrics === undefined
      ? Layer.empty
      : OtlpMetrics.layer({
          url: settings.metrics,
          resource,
          headers: settings.headers,
          exportInterval: settings.exportIntervalMs
        })
  ).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(NodeHttpClient.layerUndici))
}
