/**
 * One client's session: its lifecycle state, the protocol version it negotiated, what it said
 * about itself (client info, capabilities), the log level of what it receives, and where its
 * notifications go. stdio has one; HTTP has one per `Mcp-Session-Id`.
 *
 * Everything process-wide (configuration, backends, the orchestrator, events) belongs to the
 * Gateway; a session only holds what one client chose.
 */
import { Deferred, Effect, Exit } from "effect"
import { type AskError, InternalError, Relayed, sentCode } from "../../protocol/Errors.js"
import { MCP_LOG_LEVELS, type McpLogLevel, mcpLogLevel, type Tool } from "../../protocol/Mcp.js"
import { type Id, notification, request as requestMessage } from "../../jsonrpc/JsonRpc.js"
import { Requests } from "../../jsonrpc/Requests.js"
import type { RequestContext } from "../../jsonrpc/Peer.js"
import { field, stringField } from "../../json/Json.js"
import type { Profile, ResolvedConfig } from "../../config/Config.js"
export { MCP_LOG_LEVELS, type McpLogLevel, mcpLogLevel } from "../../protocol/Mcp.js"

/**
 * The lifecycle: new -> initializing -> ready, and shutdown from any of them (final). Every exit of
 * `initialize` lands in a defined state: success in ready, failure or interruption back in new,
 * and none of them leaves shutdown.
 */
export type Phase = "new" | "initializing" | "ready" | "shutdown"

/**
 * What moves a session along: its client's `initialize` starting, completing or failing (or
 * being interrupted), and `shutdown` (or `exit`). A 2026-07-28 request's session starts ready
 * (`servedState`).
 */
export type LifecycleEvent = "initialize" | "initialized" | "initializeFailed" | "shutdown"

/** What a client says of itself when it starts: the version agreed, who it is, what it can answer. */
export interface ClientDescription {
  readonly protocolVersion: string | undefined
  readonly clientInfo: unknown
  readonly capabilities: Readonly<Record<string, unknown>>
}

const NOT_DESCRIBED: ClientDescription = { protocolVersion: undefined, clientInfo: undefined, capabilities: {} }

/** The lifecycle as data: from each phase, where each event leads; absent: not allowed. */
const TRANSITIONS: Readonly<Record<LifecycleEvent, Partial<Record<Phase, Phase>>>> = {
  initialize: { new: "initializing" },
  initialized: { initializing: "ready" },
  initializeFailed: { initializing: "new" },
  shutdown: { new: "shutdown", initializing: "shutdown", ready: "shutdown", shutdown: "shutdown" }
}

/** Where `event` takes a session in `phase`, or undefined when it may not happen there. */
export const nextPhase = (phase: Phase, event: LifecycleEvent): Phase | undefined => TRANSITIONS[event][phase]

/**
 * What a session is at one moment: where it is in its lifecycle, what its client said of itself,
 * and the least severe backend log message it receives (undefined: every one). A value, replaced
 * whole by `changed`; never changed in place.
 */
export interface SessionState {
  readonly phase: Phase
  readonly client: ClientDescription
  readonly logLevel: McpLogLevel | "none" | undefined
}

/** What may change a session's state. */
export type Change =
  | { readonly _tag: "Lifecycle"; readonly event: LifecycleEvent }
  | { readonly _tag: "Describe"; readonly client: ClientDescription }
  | { readonly _tag: "LogLevel"; readonly level: McpLogLevel | "none" | undefined }

export const INITIAL_STATE: SessionState = { phase: "new", client: NOT_DESCRIBED, logLevel: undefined }

/**
 * The state after `change`, or undefined when it may not happen now: the lifecycle moves by its
 * table, and the client describes itself before the session is ready only (its `initialize`).
 */
export const changed = (state: SessionState, change: Change): SessionState | undefined => {
  switch (change._tag) {
    case "Lifecycle": {
      const phase = nextPhase(state.phase, change.event)
      return phase === undefined ? undefined : { ...state, phase }
    }
    case "Describe":
      return state.phase === "ready" || state.phase === "shutdown" ? undefined : { ...state, client: change.client }
    case "LogLevel":
      return { ...state, logLevel: change.level }
  }
}

/** The state of a 2026-07-28 request's session: ready at once, its client as the request's `_meta` says. */
export const servedState = (client: ClientDescription, logLevel: McpLogLevel | "none"): SessionState => ({
  phase: "ready",
  client,
  logLevel
})

/** What the session talks to: the gateway's aggregate surface, or one backend as itself. */
export type Target =
  { readonly _tag: "Aggregate"; readonly profile?: string | undefined } | { readonly _tag: "Backend"; readonly backendId: string }

/** Whether two targets are the same endpoint (an HTTP session is found only on its own). */
export const sameTarget = (a: Target, b: Target): boolean =>
  a._tag === "Aggregate" ? b._tag === "Aggregate" && a.profile === b.profile : b._tag === "Backend" && a.backendId === b.backendId

const severity = (level: unknown): number => {
  const known = mcpLogLevel(level)
  return known === undefined ? -1 : MCP_LOG_LEVELS.indexOf(known)
}

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

/** Who a client is, as its access token says: its subject, scopes and groups claim. */
export interface Identity {
  readonly subject: string
  readonly scopes: ReadonlyArray<string>
  readonly groups: ReadonlyArray<string>
}

/**
 * What the transport a session came by says of its client and can carry, set where the session is
 * made (the edge, see gateway/clients): below the session nothing asks which transport it is, only
 * these facts. A new transport says its own.
 */
export interface Edge {
  /** The transport's name, for logs, traces and the debug UI only: nothing branches on it. */
  readonly name: string
  /**
   * The client is the person who started the gateway (a pipe it spawned): a call with no token is
   * theirs ("local", on the gateway's own sign-ins), where any other client without one is
   * "anonymous" and has no user's lane.
   */
  readonly localUser: boolean
  /**
   * A reply larger than `maxReplyBytes` cannot be carried (it is answered -32603 instead, see
   * transport/ReplyBound): the audit records what the client got.
   */
  readonly boundsReplies: boolean
}

export interface Options {
  readonly id: string
  readonly edge: Edge
  readonly target?: Target | undefined
  /** Who the client's access token speaks for (`--http-auth oauth`). */
  readonly identity?: Identity | undefined
  /**
   * Sends a message that belongs to no request of the client's (list_changed, log messages between
   * calls, a backend's request with no call in flight). False when it has nowhere to go (an HTTP
   * session with no GET stream open).
   */
  readonly send: (message: unknown) => boolean
  /**
   * Answers the gateway's requests to this client another way than by sending them: a stateless
   * (2026-07-28) request has nowhere to send them, its client is asked with an InputRequiredResult.
   */
  readonly ask?: ((method: string, params: unknown) => Effect.Effect<unknown, AskError>) | undefined
  /** Where the session starts (a 2026-07-28 request's is ready at once); default: new. */
  readonly state?: SessionState | undefined
}

/**
 * Requests the gateway may have waiting on one client at once: a backend that keeps asking a client
 * that never answers gets an error rather than growing the gateway's memory.
 */
export const MAX_PENDING_CLIENT_REQUESTS = 256

export class Session {
  readonly id: string
  readonly edge: Edge
  readonly target: Target
  /** Who the client's access token speaks for, when the endpoint requires one. */
  readonly subject: string | undefined
  /** The token's scopes and groups beside its subject (what policies see of the user). */
  readonly identity: Identity | undefined
  readonly send: (message: unknown) => boolean
  /** See `Options.ask`: set for a stateless request, whose client cannot be sent requests. */
  readonly ask: ((method: string, params: unknown) => Effect.Effect<unknown, AskError>) | undefined
  /** Completed by `exit` (or `shutdown` over HTTP): the transport ends the session. */
  readonly ended: Deferred.Deferred<void> = Deferred.makeUnsafe<void>()
  private now: SessionState
  /** What the session is now: a value, replaced whole only by `change`. */
  get state(): SessionState {
    return this.now
  }

  /** Applies `change` (see `changed`); false, and nothing changes, when it may not happen now. */
  change(change: Change): boolean {
    const next = changed(this.now, change)
    if (next === undefined) return false
    this.now = next
    return true
  }

  /** Where the session is in its lifecycle. */
  get phase(): Phase {
    return this.now.phase
  }
  /** Moves the lifecycle on by `event`; false (and nothing changes) when it may not happen now. */
  advance(event: LifecycleEvent): boolean {
    return this.change({ _tag: "Lifecycle", event })
  }
  /** What the client said of itself (by `initialize`, or a stateless request's `_meta`). */
  get client(): ClientDescription {
    return this.now.client
  }
  get protocolVersion(): string | undefined {
    return this.now.client.protocolVersion
  }
  get clientInfo(): unknown {
    return this.now.client.clientInfo
  }
  get clientCapabilities(): Readonly<Record<string, unknown>> {
    return this.now.client.capabilities
  }
  /** Records what the client said of itself: before the session is ready only (its `initialize`). */
  describe(client: ClientDescription): boolean {
    return this.change({ _tag: "Describe", client })
  }
  /** The least severe backend log message relayed; undefined relays every one. */
  get logLevel(): McpLogLevel | "none" | undefined {
    return this.now.logLevel
  }
  setLogLevel(level: McpLogLevel | "none" | undefined): void {
    this.change({ _tag: "LogLevel", level })
  }
  lastActivity = Date.now()
  /**
   * Whether a stateless request's call waits for its client's answers between round trips (set
   * from the input bridge): a backend's new questions are not taken to be its own while others
   * have calls running.
   */
  parked: () => boolean = () => false
  /**
   * Completed when the client said `notifications/initialized` (or made a request once ready):
   * from then on the gateway may send it requests.
   */
  readonly initialized: Deferred.Deferred<void> = Deferred.makeUnsafe<void>()
  /** The gateway's requests to this client (see `request`), on the engine requests to backends use. */
  private readonly requests: Requests<AskError, RequestContext>

  constructor(options: Options) {
    this.id = options.id
    this.edge = options.edge
    this.target = options.target ?? { _tag: "Aggregate" }
    this.identity = options.identity
    this.subject = options.identity?.subject
    this.send = options.send
    this.ask = options.ask
    this.now = options.state ?? INITIAL_STATE
    const refuse = (message: string) => new InternalError({ message })
    this.requests = new Requests<AskError, RequestContext>(
      {
        send: (id, method, params, via) => {
          if (this.phase === "shutdown") return refuse(`the client session ${this.id} is shutting down`)
          const message = requestMessage(id, method, params)
          if ((via === undefined || !via.send(message)) && !this.send(message)) {
            return refuse(
              "the client session has no stream open to receive requests on (over HTTP: accept text/event-stream on the POST, or open the GET stream)"
            )
          }
          return undefined
        },
        // Cancelled where it was sent (`via`'s stream), else on the session's own.
        cancelled: (id, _method, reason, via) => {
          const cancelled = notification("notifications/cancelled", { requestId: id, reason })
          if (via === undefined || !via.send(cancelled)) this.send(cancelled)
        },
        // The gateway's requests to a client wait as long as the call that made them.
        timedOut: (method) => refuse(`${method} timed out`),
        // The client's own error, passed on as it sent it (an answer without an integer code: -32603).
        failed: (method, error) => {
          const code = field(error, "code")
          const said = {
            message: stringField(error, "message") ?? `the client answered ${method} with an error`,
            ...(field(error, "data") === undefined ? {} : { data: field(error, "data") })
          }
          return typeof code === "number" && Number.isInteger(code)
            ? new Relayed({ from: "client", code: sentCode(code), ...said })
            : new InternalError(said)
        },
        full: (_method, limit) => refuse(`${limit} requests already wait for the client session's answers`)
      },
      { limit: MAX_PENDING_CLIENT_REQUESTS, interruptedReason: "the backend cancelled its request" }
    )
  }

  /**
   * The most tools its client takes in `tools/list`, as it said in `initializationOptions`
   * (`maxListedTools`); undefined: its profile's, else the gateway's (see methods/Listing).
   */
  maxListedTools: number | undefined = undefined

  /**
   * The tools its `tools/list` gives now (set by the aggregate's tool methods): what its
   * `notifications/tools/list_changed` is about (see routing/ListChanged). None: the catalog as its
   * profile sees it.
   */
  listedTools: (() => ReadonlyArray<Tool>) | undefined = undefined

  /**
   * The tools its client last got or was told of (its `tools/list`, a list_changed, a search's
   * finds joining); none when it was initialized while backends started, until its first
   * `tools/list` or their start: nothing to be told changed meanwhile.
   */
  toolsTold: ReadonlyArray<Tool> | undefined = undefined

  /** Which backends a profile's session serves (set by the gateway); none: every backend. */
  scope: ((backendId: string) => boolean) | undefined = undefined

  /** Whether what `backendId` sends concerns this session (the aggregate serves every backend, a profile its own). */
  serves(backendId: string): boolean {
    return this.target._tag === "Aggregate" ? (this.scope?.(backendId) ?? true) : this.target.backendId === backendId
  }

  /** Sends a notification that belongs to no request of the client's. */
  notify(method: string, params: unknown): void {
    this.send(notification(method, params))
  }

  private isInitialized = false

  /** Marks the client initialized (idempotent, and one comparison once done: it runs per request). */
  markInitialized(): void {
    if (this.isInitialized) return
    this.isInitialized = true
    Deferred.doneUnsafe(this.initialized, Exit.void)
  }

  /**
   * Sends the client a request of the gateway's (a backend's `sampling/createMessage`,
   * `elicitation/create`, `roots/list`) and waits for its answer: `via`'s stream when one of the
   * client's requests is in flight (over HTTP that POST's SSE stream, where the client listens),
   * else the session's own. The client's error comes back as it sent it. Interrupting the wait
   * sends the client `notifications/cancelled`.
   */
  request(method: string, params: unknown, via?: RequestContext): Effect.Effect<unknown, AskError> {
    if (this.ask !== undefined) return this.ask(method, params)
    return this.requests.request(method, params, undefined, false, via)
  }

  /** The client's answer to one of the gateway's requests; false if none waits for it. */
  resolve(id: Id | null, payload: Readonly<Record<string, unknown>>): boolean {
    if (typeof id !== "number") return false
    return this.requests.settle(id, payload)
  }

  /** The session ended: nothing it was asked will be answered. */
  failPending(): void {
    this.requests.failAll((method) => new InternalError({ message: `the client session ended before answering ${method}` }))
  }

  /** Whether a backend log message of `level` reaches this session. */
  admits(level: unknown): boolean {
    if (this.logLevel === undefined) return true
    if (this.logLevel === "none") return false
    const s = severity(level)
    // A level MCP does not define is passed on rather than silently lost.
    return s < 0 || s >= severity(this.logLevel)
  }
}

/** A profile a reload removed admits nothing. */
const NO_PROFILE: Profile = { backends: [] }

/**
 * The profile a session's aggregate serves (`/profiles/<name>/mcp`, `--profile`) as `config`
 * names it; undefined for the whole aggregate (or a backend's endpoint, or no session).
 */
export const profileIn = (config: ResolvedConfig, session: Session | undefined): Profile | undefined =>
  profileNamed(config, session?.target._tag === "Aggregate" ? session.target.profile : undefined)

/** The profile `name` as `config` has it (one a reload removed admits nothing); undefined: the whole aggregate. */
export const profileNamed = (config: ResolvedConfig, name: string | undefined): Profile | undefined =>
  name === undefined ? undefined : (config.profiles[name] ?? NO_PROFILE)
