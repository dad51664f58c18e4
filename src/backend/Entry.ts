/**
 * A backend's entry in the Backends' table: its configuration, its state and what it last said,
 * its running client and lifecycle fiber; and what an entry shows (`statusOf`) or answers a call
 * when it is not ready (`notReady`).
 */
import type { Deferred, Fiber } from "effect"
import type { BackendConfig } from "../config/Config.js"
import type { BackendState, BackendStatus } from "../observability/BackendStatus.js"
import { BackendError } from "../protocol/Errors.js"
import type { Tool } from "../protocol/Mcp.js"
import type * as Backend from "./Backend.js"
import type * as Known from "./Known.js"
import type * as Pins from "./Pins.js"

export interface Entry {
  /** Replaced in place by `apply` when only its exposure settings changed. */
  config: BackendConfig
  /** Why it was stopped for good ("backend removed"): what its calls in flight fail with. */
  stoppedFor: string | undefined
  state: BackendState
  lastError: string | undefined
  pid: number | undefined
  protocolVersion: string | undefined
  restarts: number
  tools: ReadonlyArray<Tool>
  /** Its tools whose definitions differ from their pins (see Pins). */
  changed: ReadonlyArray<Pins.Changed>
  /** What the review of its pins said besides (kept for `check`; logged when said). */
  pinNotes: ReadonlyArray<string>
  backend: Backend.Backend | undefined
  /** The era it spoke last: a restart speaks it again without asking (see Backend `era`). */
  era: Backend.Era
  fiber: Fiber.Fiber<void> | undefined
  /**
   * Completed when start() (or a request that started it on use) may stop waiting for this
   * backend: ready, failed, or its first attempt failed. A fresh one for each start on use.
   */
  settled: Deferred.Deferred<void>
  /** Started on use (see Known): it stops after `idleMs` without use; requests wait for its start. */
  onUse: boolean
  /** What is remembered of it (see Known): the capabilities and lists it offers while not started. */
  known: Pick<Known.Known, "capabilities" | "lists"> | undefined
  /** When it last began starting (its start-up timeout runs from then: see Backends' `settle`). */
  startingSince: number
  /** When a request last went to it, and how many are in flight (what the idle stop looks at). */
  usedAt: number
  inFlight: number
  /** When it was last stopped for want of use; undefined if it never was since this entry was made. */
  idleStoppedAt: number | undefined
}

export const statusOf = (entry: Entry): BackendStatus => ({
  id: entry.config.id,
  ...(entry.config.displayName === undefined ? {} : { displayName: entry.config.displayName }),
  state: entry.state,
  ...(entry.lastError === undefined ? {} : { lastError: entry.lastError }),
  ...(entry.pid === undefined ? {} : { pid: entry.pid }),
  restarts: entry.restarts,
  toolCount: entry.state === "ready" || entry.state === "idle" ? entry.tools.length : 0,
  ...(entry.protocolVersion === undefined ? {} : { protocolVersion: entry.protocolVersion }),
  enabled: entry.config.enabled,
  ...(entry.state !== "idle"
    ? {}
    : entry.idleStoppedAt === undefined
      ? { idle: "remembered" as const }
      : { idle: "stopped" as const, idleSince: entry.idleStoppedAt })
})

export const notReady = (entry: Entry, method: string): BackendError => {
  const why = !entry.config.enabled
    ? "disabled in the configuration"
    : entry.state === "starting"
      ? "still starting"
      : entry.state === "restarting"
        ? `restarting${entry.lastError === undefined ? "" : ` after: ${entry.lastError}`}`
        : entry.state === "failed"
          ? `not running: ${entry.lastError ?? "failed"}`
          : entry.state === "needs auth"
            ? (entry.lastError ?? `needs auth; run \`mcp-agentify auth ${entry.config.id}\``)
            : entry.state === "idle"
              ? "not started yet"
              : "stopped"
  return new BackendError({ backendId: entry.config.id, reason: "not_ready", method, summary: why })
}
