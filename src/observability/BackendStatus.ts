/**
 * What a backend is doing, as the gateway reports it (the debug UI, `check`, `/readyz`, the events
 * hub). Apart from the service that keeps it, so that observers can name it without importing the
 * service.
 */
/**
 * "needs auth": a remote server that requires OAuth, with no usable token until someone signs in.
 * "idle": not running, its tools known from an earlier run; it starts on its first use (`idle` says
 * whether it has run in this start at all).
 */
export type BackendState = "starting" | "ready" | "failed" | "restarting" | "stopped" | "needs auth" | "idle"

export interface BackendStatus {
  readonly id: string
  readonly displayName?: string
  readonly state: BackendState
  readonly lastError?: string
  readonly pid?: number
  readonly restarts: number
  readonly toolCount: number
  readonly protocolVersion?: string
  /** False for a backend the configuration disables (it stays "stopped"). */
  readonly enabled: boolean
  /**
   * Why an "idle" backend is not running (absent in any other state): "remembered", its tools known
   * from an earlier run and not started since the gateway started; "stopped", it ran and was
   * stopped after `idleMs` without use (at `idleSince`).
   */
  readonly idle?: IdleReason
  /** When an idle stop took it down (with `idle: "stopped"`), in ms since the epoch. */
  readonly idleSince?: number
}

export type IdleReason = "remembered" | "stopped"
