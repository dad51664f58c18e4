/**
 * What a backend is to the rest of the gateway: the `Backend` it gets, the options it is made with,
 * how it ended, and the era each request is sent in (`paramsFor`).
 */
import type { TokenFiles } from "../auth/Client.js"
import { Effect } from "effect"
import { type AskError, BackendError } from "../protocol/Errors.js"
import { type EventsService } from "../observability/Events.js"
import * as Mcp from "../protocol/Mcp.js"
import * as Meta from "../json/Meta.js"

// Public shapes

export interface ClientInfo {
  readonly name: string
  readonly version: string
}

export const DEFAULT_CLIENT_INFO: ClientInfo = Mcp.IMPLEMENTATION
export const DEFAULT_KILL_GRACE_MS = 2_000

export interface Options {
  /** The default per-request timeout (the backend's own `requestTimeoutMs` wins). */
  readonly requestTimeoutMs?: number | undefined
  /** How long a process has to exit after SIGTERM before its group gets SIGKILL. */
  readonly killGraceMs?: number | undefined
  readonly clientInfo?: ClientInfo | undefined
  /**
   * A stdout line longer than this is dropped and the call it answers fails (a backend must not be
   * able to exhaust memory). The backend's own `maxFrameBytes` wins.
   */
  readonly maxFrameBytes?: number | undefined
  /**
   * A request longer than this is not written to a stdio backend (the SDK's servers drop such a
   * line and never answer): its call fails at once, naming the size and the setting.
   */
  readonly maxRequestBytes?: number | undefined
  /** Backend notifications other than `tools/list_changed` (progress, message, ...). */
  readonly onNotification?: ((method: string, params: unknown) => Effect.Effect<void>) | undefined
  /** Where every message to and from the backend is published (the debug UI, tracing). */
  readonly events?: EventsService | undefined
  /** After the backend said its tools changed and they were listed again. */
  readonly onToolsChanged?: ((tools: ReadonlyArray<Mcp.Tool>) => Effect.Effect<void>) | undefined
  /**
   * "session": speak the session era (`initialize`) without asking; otherwise (default "auto")
   * `server/discover` first, the stateless era (2026-07-28) if it answers with it, `initialize` if not.
   */
  readonly era?: Era | undefined
  /** The client capabilities declared in `initialize` (what `onRequest` can answer). */
  readonly clientCapabilities?: Readonly<Record<string, unknown>> | undefined
  /**
   * Answers the backend's own requests other than `ping` (`roots/list`, `sampling/createMessage`,
   * `elicitation/create`); its failure is the error reply. Interrupted when the backend cancels
   * the request. Without it they get -32601.
   */
  readonly onRequest?: ((method: string, params: unknown) => Effect.Effect<unknown, AskError>) | undefined
  /**
   * A remote backend's connection for one user (`perUser`, see Lanes): it signs in with their
   * tokens only, and a missing or refused one is that user's to sign in for.
   */
  readonly subject?: string | undefined
  /** What a remote backend's tokens tell the team and ask of it (see auth/Client `TokenFiles`); none: alone. */
  readonly files?: TokenFiles | undefined
}

export interface ExitInfo {
  readonly code: number | null
  readonly signal: string | null
  /** "exited with code 1", "killed by SIGKILL", "stopped" (the gateway stopped it). */
  readonly description: string
}

export interface RequestOptions {
  readonly timeoutMs?: number | undefined
}

export type Era = "auto" | "stateless" | "session"

/**
 * A request's params in the backend's era: a stateless backend gets the era's `_meta` (the caller's
 * client capabilities kept when it gave them); a session-era backend never sees those keys.
 */
export const paramsFor = (
  stateless: boolean,
  params: unknown,
  capabilities: Readonly<Record<string, unknown>>,
  clientInfo: ClientInfo
): unknown => {
  if (!stateless) return Meta.without(params, (key) => key.startsWith(Mcp.META_PREFIX))
  // The caller's client capabilities kept when it gave them; version and client are the gateway's.
  return Meta.merge(Meta.merge(params, { [Mcp.Meta.clientCapabilities]: capabilities }, { under: true }), {
    [Mcp.Meta.protocolVersion]: Mcp.STATELESS_PROTOCOL_VERSION,
    [Mcp.Meta.clientInfo]: clientInfo
  })
}

export interface Backend {
  readonly id: string
  /** Undefined for a remote server. */
  readonly pid: number | undefined
  /** "pid 1234", or a remote server's URL (without credentials or query). */
  readonly address: string
  /** "2026-07-28" for a stateless backend. */
  readonly protocolVersion: string
  /** The era it speaks (never "auto"). */
  readonly era: Exclude<Era, "auto">
  readonly serverInfo: unknown
  readonly serverCapabilities: Readonly<Record<string, unknown>>
  readonly instructions: string | undefined
  /** The tools as last listed (kept up to date on `notifications/tools/list_changed`). */
  readonly tools: () => ReadonlyArray<Mcp.Tool>
  /** Any request; the result passes through unchanged. */
  readonly request: (method: string, params?: unknown, options?: RequestOptions) => Effect.Effect<unknown, BackendError>
  readonly notify: (method: string, params?: unknown) => Effect.Effect<void>
  readonly listTools: Effect.Effect<ReadonlyArray<Mcp.Tool>, BackendError>
  readonly callTool: (
    name: string,
    args: unknown,
    options?: RequestOptions & { readonly meta?: Readonly<Record<string, unknown>> | undefined }
  ) => Effect.Effect<unknown, BackendError>
  readonly ping: Effect.Effect<void, BackendError>
  /** When it last sent a message, and when a call to it last timed out (ms since the epoch; 0 never). */
  readonly activity: () => { readonly heardAt: number; readonly timedOutAt: number }
  /**
   * A heartbeat: `ping` (a stateless backend: `server/discover`), "silent" when no answer comes
   * within `timeoutMs`. Any answer, an error included (-32601 from a server without `ping`), is life.
   */
  readonly probe: (timeoutMs: number) => Effect.Effect<"alive" | "silent">
  /** Succeeds when the process has exited, with why. */
  readonly exited: Effect.Effect<ExitInfo>
  readonly isRunning: () => boolean
}

/**
 * A failure that retrying cannot fix: the process could not be started at all (command or working
 * directory missing, permission denied), or it refused `initialize` (no protocol version we
 * support, credentials refused). A remote server that cannot be reached is retried.
 */
export const isPermanentFailure = (error: BackendError): boolean =>
  error.method === "spawn" ||
  // A remote server that is overloaded or restarting (HTTP 5xx, 429) may answer the next time.
  (error.method === "initialize" && error.reason === "call_failed" && !/HTTP (5\d\d|429)/.test(error.summary))

/**
 * A ready backend as the rest of the gateway sees it (`Backends.backend`): what it is and said it
 * can do, and notifications to it. It sends no request: requests reach a backend through the
 * backend layer's internal requester, which only the gateway's forwarder holds (see Requester).
 */
export type RunningBackend = Pick<
  Backend,
  "id" | "pid" | "address" | "protocolVersion" | "era" | "serverInfo" | "serverCapabilities" | "instructions" | "tools" | "notify"
>
