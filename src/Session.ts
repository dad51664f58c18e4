/**
 * One client's session: its lifecycle state, the protocol version it negotiated, what it said
 * about itself (client info, capabilities), the log level of what it receives, and where its
 * notifications go. stdio has one; HTTP has one per `Mcp-Session-Id`.
 *
 * Everything process-wide (configuration, backends, the orchestrator, events) belongs to the
 * Gateway; a session only holds what one client chose.
 */
import { Deferred, FiberId } from "effect"
import type { RequestContext } from "./Peer.js"

/**
 * The lifecycle: new -> initializing -> ready, and shutdown from any of them (final). Every exit of
 * `initialize` lands in a defined state: success in ready, failure or interruption back in new,
 * and none of them leaves shutdown.
 */
export type Phase = "new" | "initializing" | "ready" | "shutdown"

/** What the session talks to: the gateway's aggregate surface, or one backend as itself. */
export type Target = { readonly _tag: "Aggregate" } | { readonly _tag: "Backend"; readonly backendId: string }

/** MCP's log levels (RFC 5424), least severe first. */
export const MCP_LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] as const
export type McpLogLevel = (typeof MCP_LOG_LEVELS)[number]

const severity = (level: unknown): number => MCP_LOG_LEVELS.indexOf(level as McpLogLevel)

/** The gateway's own level names, as the least severe MCP level a session receives ("silent": none). */
export const mcpLevelOf = (level: string): McpLogLevel | "none" => {
  switch (level) {
    case "trace":
    case "debug":
      return "debug"
    case "info":
      return "info"
    case "warn":
      return "warning"
    case "error":
      return "error"
    case "fatal":
      return "critical"
    default:
      return "none"
  }
}

export interface Options {
  readonly id: string
  readonly transport: "stdio" | "http"
  readonly target?: Target | undefined
  /** Sends a notification that belongs to no request (list_changed, log messages between calls). */
  readonly notify: (method: string, params: unknown) => void
}

export class Session {
  readonly id: string
  readonly transport: "stdio" | "http"
  readonly target: Target
  readonly notify: (method: string, params: unknown) => void
  /** Completed by `exit` (or `shutdown` over HTTP): the transport ends the session. */
  readonly ended: Deferred.Deferred<void> = Deferred.unsafeMake<void>(FiberId.none)
  phase: Phase = "new"
  protocolVersion: string | undefined = undefined
  clientInfo: unknown = undefined
  clientCapabilities: Readonly<Record<string, unknown>> = {}
  /** The least severe backend log message relayed; undefined relays every one. */
  logLevel: McpLogLevel | "none" | undefined = undefined
  /** This session's requests in flight on each backend: a backend's log messages go with them. */
  readonly calls = new Map<string, Set<RequestContext>>()
  lastActivity = Date.now()

  constructor(options: Options) {
    this.id = options.id
    this.transport = options.transport
    this.target = options.target ?? { _tag: "Aggregate" }
    this.notify = options.notify
  }

  /** Whether a backend log message of `level` reaches this session. */
  admits(level: unknown): boolean {
    if (this.logLevel === undefined) return true
    if (this.logLevel === "none") return false
    const s = severity(level)
    // A level MCP does not define is passed on rather than silently lost.
    return s < 0 || s >= severity(this.logLevel)
  }

  /** Marks a request in flight on a backend until the returned function is called. */
  track(backendId: string, context: RequestContext): () => void {
    let set = this.calls.get(backendId)
    if (set === undefined) this.calls.set(backendId, (set = new Set()))
    set.add(context)
    return () => {
      set!.delete(context)
      if (set!.size === 0 && this.calls.get(backendId) === set) this.calls.delete(backendId)
    }
  }

  /** One of the session's requests in flight on the backend, if any. */
  callOn(backendId: string): RequestContext | undefined {
    const set = this.calls.get(backendId)
    if (set === undefined) return undefined
    for (const context of set) return context
    return undefined
  }
}
