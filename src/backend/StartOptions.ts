/**
 * How backends are started: timeouts, the frame bound, the client capabilities declared to them,
 * and whether their tools are held against their pins. `startOptionsOf` is the one place the
 * configuration's settings become these.
 */
import type { ResolvedConfig } from "../config/Config.js"
import { DEFAULT_IDLE_MS } from "../config/Resolve.js"
import type * as Pins from "./Pins.js"

export interface StartOptions {
  readonly startupTimeoutMs: number
  readonly requestTimeoutMs: number
  /** The longest stdout line accepted from a backend (its own `maxFrameBytes` wins). */
  readonly maxBackendFrameBytes?: number | undefined
  /** The longest request written to a stdio backend. */
  readonly maxBackendRequestBytes?: number | undefined
  /**
   * The client capabilities declared to every backend (what the request handler can relay). A
   * backend with configured `roots` declares `roots` too.
   */
  readonly clientCapabilities?: Readonly<Record<string, unknown>> | undefined
  /** Tool definitions held against their pins (see Pins); none: not checked. */
  readonly pins?: Pins.Settings | undefined
  /**
   * Backends' tools remembered in this state directory (see Known), and when one whose tools are
   * known starts: "onUse" (not at `start`; on its first request, stopped after `idleMs` unused) or
   * "always". None: every backend starts at `start` and nothing is remembered.
   */
  readonly onUse?: { readonly stateDir: string; readonly start: "onUse" | "always"; readonly idleMs: number } | undefined
}

/** How the configuration's backends are started: the one place its settings become start options. */
export const startOptionsOf = (
  config: Pick<ResolvedConfig, "startupTimeoutMs" | "requestTimeoutMs" | "maxBackendFrameBytes"> &
    Partial<Pick<ResolvedConfig, "toolPins" | "stateDir" | "maxBackendRequestBytes" | "start" | "idleMs">>,
  clientCapabilities?: Readonly<Record<string, unknown>>
): StartOptions => ({
  startupTimeoutMs: config.startupTimeoutMs,
  requestTimeoutMs: config.requestTimeoutMs,
  maxBackendFrameBytes: config.maxBackendFrameBytes,
  ...(config.maxBackendRequestBytes === undefined ? {} : { maxBackendRequestBytes: config.maxBackendRequestBytes }),
  ...(clientCapabilities === undefined ? {} : { clientCapabilities }),
  ...(config.toolPins === undefined || config.stateDir === undefined
    ? {}
    : { pins: { mode: config.toolPins, stateDir: config.stateDir } }),
  ...(config.stateDir === undefined || config.start === undefined
    ? {}
    : { onUse: { stateDir: config.stateDir, start: config.start, idleMs: config.idleMs ?? DEFAULT_IDLE_MS } })
})
