/**
 * What the debug UI shows, kept from the events hub: bounded ring buffers of log records, MCP
 * messages (client⇄gateway and gateway⇄backend, a request paired with its reply for duration and
 * status) and orchestrations, and per-backend call statistics (calls, errors, p50/p99 latency).
 *
 * Everything is scrubbed of secrets when it is recorded, and each message's JSON is cut to a
 * bounded size, so the buffers' memory is bounded whatever crosses the gateway.
 */
import type { Event, OrchestrationRecord, OrchestrationStep } from "../observability/Events.js"
import * as Secrets from "../observability/Secrets.js"
import { field, objectOr, stringField } from "../json/Json.js"

export const LOG_CAPACITY = 5_000
export const TRACE_CAPACITY = 10_000
export const ORCHESTRATION_CAPACITY = 500
/** A message's JSON kept for the UI, at most (the rest is cut, saying how long it was). */
export const MAX_MESSAGE_CHARS = 8_192
/** Latency samples kept per backend for p50/p99. */
const LATENCY_SAMPLES = 1_000
/** Requests waiting for their reply, per channel, before the oldest are forgotten. */
const MAX_PENDING = 10_000

export const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"] as const

/** A fixed-size ring: the newest `capacity` items, oldest first. */
export class Ring<A> {
  private readonly items: Array<A | undefined>
  private next = 0
  private size = 0
  constructor(readonly capacity: number) {
    this.items = new Array(capacity)
  }
  push(item: A) {
    this.items[this.next] = item
    this.next = (this.next + 1) % this.capacity
    if (this.size < this.capacity) this.size++
  }
  /** Oldest first. */
  toArray(): Array<A> {
    const out: Array<A> = []
    const start = (this.next - this.size + this.capacity) % this.capacity
    for (let i = 0; i < this.size; i++) out.push(this.items[(start + i) % this.capacity]!)
    return out
  }
  get length() {
    return this.size
  }
}

export interface LogEntry {
  readonly seq: number
  readonly at: number
  readonly level: string
  readonly message: string
  readonly fields: Readonly<Record<string, unknown>>
}

export interface TraceEntry {
  readonly seq: number
  readonly at: number
  /** "client": a client⇄gateway message; "backend": gateway⇄backend. */
  readonly channel: "client" | "backend"
  /** The session id (client) or backend id. */
  readonly peer: string
  /** "in": to the gateway; "out": from it. */
  readonly direction: "in" | "out"
  readonly kind: "request" | "response" | "notification" | "batch" | "other"
  readonly method?: string | undefined
  readonly id?: string | number | undefined
  /** A reply's time since its request. */
  readonly durationMs?: number | undefined
  /** A reply's outcome: "ok", or the error code. */
  readonly status?: string | undefined
  /** The message as JSON, scrubbed and cut to MAX_MESSAGE_CHARS. */
  readonly json: string
}

/** An orchestration as kept: big parts (the plan's params, the result) as cut, scrubbed JSON text. */
export interface OrchestrationEntry extends Omit<OrchestrationRecord, "result" | "plan" | "context" | "steps"> {
  readonly steps?: ReadonlyArray<Omit<OrchestrationStep, "arguments"> & { readonly arguments: string }> | undefined
  readonly seq: number
  readonly at: number
  readonly context: string
  readonly plan?: { readonly backendId: string; readonly method: string; readonly params: string } | undefined
  readonly result?: string | undefined
}

const cut = (text: string): string =>
  Secrets.scrub(text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}…` : text)

const orchestrationEntry = (record: OrchestrationRecord & { readonly at: number }, seq: number): OrchestrationEntry => ({
  seq,
  at: record.at,
  query: cut(record.query),
  context: sanitized(record.context ?? null),
  routing: record.routing,
  offered: record.offered.map((o) => ({ ...o, name: Secrets.scrub(o.name) })),
  model: record.model,
  choice: record.choice === undefined ? undefined : { name: record.choice.name, arguments: cut(record.choice.arguments) },
  explanation: record.explanation === null || record.explanation === undefined ? record.explanation : cut(record.explanation),
  plan:
    record.plan === undefined
      ? undefined
      : { backendId: record.plan.backendId, method: record.plan.method, params: sanitized(record.plan.params) },
  code: record.code === undefined ? undefined : cut(record.code),
  logs: record.logs?.slice(0, 100).map((line) => cut(line)),
  limit: record.limit,
  steps: record.steps?.map((s) => ({
    ...s,
    tool: Secrets.scrub(s.tool),
    arguments: sanitized(s.arguments),
    detail: s.detail === undefined ? undefined : cut(s.detail)
  })),
  result: record.result === undefined ? undefined : sanitized(record.result),
  error: record.error === undefined ? undefined : { code: record.error.code, message: Secrets.scrub(record.error.message) },
  llmMs: record.llmMs,
  usage: record.usage,
  totalMs: record.totalMs,
  ...(record.auditId === undefined ? {} : { auditId: record.auditId })
})

export interface BackendStats {
  calls: number
  errors: number
  readonly latencies: Ring<number>
  /** The last call that failed or answered isError: when, and what it said (scrubbed). */
  lastError?: { readonly at: number; readonly message: string }
}

const percentile = (samples: ReadonlyArray<number>, p: number): number | undefined => {
  if (samples.length === 0) return undefined
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

/** JSON of anything, scrubbed and cut. */
export const sanitized = (value: unknown): string => {
  let json: string
  try {
    json = JSON.stringify(value) ?? "null"
  } catch {
    json = JSON.stringify(String(value))
  }
  if (json.length > MAX_MESSAGE_CHARS) {
    json = `${json.slice(0, MAX_MESSAGE_CHARS)}… (cut: ${json.length} characters in all)`
  }
  return Secrets.scrub(json)
}

interface Pending {
  readonly at: number
  readonly method: string
}

/**
 * A session open now, as the debug UI lists it: its transport, when it opened, its client as it
 * named itself at `initialize` (text the client chose: cut and scrubbed, never trusted), who its
 * access token speaks for, and the requests it sent. Nothing of its credentials.
 */
export interface SessionEntry {
  readonly transport: string
  readonly openedAt: number
  readonly subject?: string
  client?: string
  clientVersion?: string
  requests: number
  lastRequestAt?: number
}

/** The longest client name or version kept. */
const MAX_CLIENT_CHARS = 100

const shortText = (text: string): string =>
  Secrets.scrub(text.length > MAX_CLIENT_CHARS ? `${text.slice(0, MAX_CLIENT_CHARS)}…` : text)

/** Open sessions listed (an HTTP gateway may have thousands; the count stays right in /api/status). */
const SESSION_CAPACITY = 1_000

/** The reloads kept: enough to see what the last edits did. */
const RELOAD_CAPACITY = 50

export type ReloadEntry = Omit<Extract<Event, { _tag: "ConfigReload" }>, "_tag">

export class Recorder {
  readonly logs = new Ring<LogEntry>(LOG_CAPACITY)
  readonly trace = new Ring<TraceEntry>(TRACE_CAPACITY)
  readonly orchestrations = new Ring<OrchestrationEntry>(ORCHESTRATION_CAPACITY)
  /** The sessions open now, with their client and who their access token speaks for (bounded). */
  readonly sessions = new Map<string, SessionEntry>()
  /** Configuration reloads, applied or refused, newest last. */
  readonly reloads = new Ring<ReloadEntry>(RELOAD_CAPACITY)
  readonly stats = new Map<string, BackendStats>()
  private seq = 0
  private readonly pending = new Map<string, Pending>()
  private readonly listeners = new Set<(kind: "log" | "trace" | "orchestration", entry: unknown) => void>()

  /** Called with every new entry (the WebSockets); returns the unsubscribe. */
  listen(listener: (kind: "log" | "trace" | "orchestration", entry: unknown) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private emit(kind: "log" | "trace" | "orchestration", entry: unknown) {
    for (const listener of this.listeners) listener(kind, entry)
  }

  statsOf(backendId: string): BackendStats {
    let stats = this.stats.get(backendId)
    if (stats === undefined) {
      stats = { calls: 0, errors: 0, latencies: new Ring<number>(LATENCY_SAMPLES) }
      this.stats.set(backendId, stats)
    }
    return stats
  }

  latencyOf(backendId: string): { p50: number | undefined; p99: number | undefined } {
    const samples = this.stats.get(backendId)?.latencies.toArray() ?? []
    return { p50: percentile(samples, 50), p99: percentile(samples, 99) }
  }

  record(event: Event) {
    switch (event._tag) {
      case "Log": {
        const entry: LogEntry = {
          seq: ++this.seq,
          at: event.at,
          level: event.level,
          message: Secrets.scrub(event.message),
          fields: JSON.parse(sanitizedFields(event.fields)) as Record<string, unknown>
        }
        this.logs.push(entry)
        return this.emit("log", entry)
      }
      case "ClientMessage":
        if (event.direction === "in") this.sessionSaid(event.sessionId, event.message, event.at)
        return this.message("client", event.sessionId, event.direction, event.message, event.at)
      case "BackendMessage":
        return this.message("backend", event.backendId, event.direction, event.message, event.at)
      case "BackendCall": {
        // Every call the gateway made of a backend with its outcome, the handshake not among them:
        // JSON-RPC errors, crashes, timeouts, a backend not running and `isError` results all count.
        const stats = this.statsOf(event.backendId)
        stats.calls++
        if (event.outcome === "error" || event.outcome === "isError") {
          stats.errors++
          const what = event.detail ?? (event.outcome === "isError" ? "the tool reported an error" : "the call failed")
          stats.lastError = { at: event.at, message: Secrets.scrub(`${event.method}: ${what}`) }
        }
        stats.latencies.push(event.ms)
        return
      }
      case "Session": {
        if (event.state === "closed") this.sessions.delete(event.sessionId)
        else if (this.sessions.size < SESSION_CAPACITY) {
          this.sessions.set(event.sessionId, {
            transport: event.transport,
            openedAt: event.at,
            requests: 0,
            ...(event.subject === undefined ? {} : { subject: event.subject })
          })
        }
        return
      }
      case "ConfigReload": {
        const { _tag, ...reload } = event
        // A refusal quotes the file's problems: scrubbed like every other message shown.
        this.reloads.push({ ...reload, ...(reload.message === undefined ? {} : { message: Secrets.scrub(reload.message) }) })
        return
      }
      case "Orchestration": {
        const { _tag, ...record } = event
        const entry = orchestrationEntry(record, ++this.seq)
        this.orchestrations.push(entry)
        return this.emit("orchestration", entry)
      }
      default:
        return
    }
  }

  /** What a session's client sent: its name and version at `initialize`, and one more request. */
  private sessionSaid(sessionId: string, message: unknown, at: number) {
    const session = this.sessions.get(sessionId)
    if (session === undefined) return
    for (const m of Array.isArray(message) ? message : [message]) {
      const method = stringField(m, "method")
      const id = field(m, "id")
      // A request: a method and an id (a notification or a reply to the gateway is not one).
      if (method === undefined || (typeof id !== "string" && typeof id !== "number")) continue
      session.requests++
      session.lastRequestAt = at
      if (method === "initialize") {
        const info = field(field(m, "params"), "clientInfo")
        const name = stringField(info, "name")
        const version = stringField(info, "version")
        if (name !== undefined) session.client = shortText(name)
        if (version !== undefined) session.clientVersion = shortText(version)
      }
    }
  }

  private message(channel: "client" | "backend", peer: string, direction: "in" | "out", message: unknown, at: number) {
    const m = objectOr(message)
    const id = typeof m.id === "string" || typeof m.id === "number" ? m.id : undefined
    const method = stringField(m, "method")
    const errorCode = field(m.error, "code")
    const kind: TraceEntry["kind"] = Array.isArray(message)
      ? "batch"
      : method !== undefined
        ? id !== undefined
          ? "request"
          : "notification"
        : id !== undefined || "result" in m || "error" in m
          ? "response"
          : "other"
    // A request and its reply travel in opposite directions on the same channel and peer.
    const key = (requestDirection: "in" | "out") => `${channel}\u0000${peer}\u0000${requestDirection}\u0000${String(id)}`
    let durationMs: number | undefined
    let status: string | undefined
    let replyTo: string | undefined
    if (kind === "request") {
      if (this.pending.size >= MAX_PENDING) this.pending.delete(this.pending.keys().next().value!)
      this.pending.set(key(direction), { at, method: method! })
    } else if (kind === "response" && id !== undefined) {
      const requestKey = key(direction === "in" ? "out" : "in")
      const request = this.pending.get(requestKey)
      if (request !== undefined) {
        this.pending.delete(requestKey)
        durationMs = at - request.at
        replyTo = request.method
      }
      status = m.error !== undefined ? String(typeof errorCode === "number" ? errorCode : "error") : "ok"
      // A session-era server's -32601 to the `server/discover` probe is how the era is found, not a failure.
      if (status !== "ok" && channel === "backend" && replyTo === "server/discover" && errorCode === -32601) {
        status = "probe"
      }
    }
    const entry: TraceEntry = {
      seq: ++this.seq,
      at,
      channel,
      peer,
      direction,
      kind,
      method: method ?? replyTo,
      id,
      durationMs,
      status,
      json: sanitized(message)
    }
    this.trace.push(entry)
    this.emit("trace", entry)
  }
}

const sanitizedFields = (fields: Readonly<Record<string, unknown>>): string => {
  const json = sanitized(fields)
  // A cut object is no longer JSON: keep it as one text field then.
  try {
    JSON.parse(json)
    return json
  } catch {
    return JSON.stringify({ fields: json })
  }
}

/** Whether a log entry passes `level` (the least severe shown) and `search` (case-insensitive). */
export const logMatches = (entry: LogEntry, level: string | undefined, search: string | undefined): boolean => {
  if (level !== undefined) {
    const min = LEVELS.indexOf(level as (typeof LEVELS)[number])
    if (min > 0 && LEVELS.indexOf(entry.level as (typeof LEVELS)[number]) < min) return false
  }
  if (search !== undefined && search !== "") {
    const needle = search.toLowerCase()
    if (!entry.message.toLowerCase().includes(needle) && !JSON.stringify(entry.fields).toLowerCase().includes(needle))
      return false
  }
  return true
}
