/**
 * The gateway's logger: every line goes to stderr, never stdout (stdout carries protocol frames).
 *
 * JSON lines when stderr is not a terminal (an MCP client capturing it, a log file), readable
 * lines when a person is watching, and plain sentences for the terminal commands (`personSink`),
 * whose reader is always a person, whatever stderr is. Every line passes through the secret scrubber. The level is
 * the logger's own (`LogThreshold`, provided with it by `layer`), not the module's: a client's
 * `initializationOptions.logLevel` changes it through the service, and two gateways embedded in
 * one process each have their own.
 */
import { Cause, Context, Effect, FiberId, FiberRef, FiberRefs, HashMap, Layer, List, Logger, LogLevel } from "effect"
import * as RegularFile from "../config/RegularFile.js"
import { Events } from "./Events.js"
import * as Secrets from "./Secrets.js"

/** The levels a configuration may name, least severe first ("silent": nothing). */
export const LOG_LEVEL_NAMES = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const
export type LogLevelName = (typeof LOG_LEVEL_NAMES)[number]

const LEVELS: Record<LogLevelName, LogLevel.LogLevel> = {
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  silent: LogLevel.None
}

/** The least severe level a logger writes; set while it runs (a client's initializationOptions). */
export interface Threshold {
  readonly get: () => LogLevel.LogLevel
  readonly set: (level: LogLevelName) => void
}

/** No logger of the gateway's: as when embedded with a logger of one's own, setting the level does nothing. */
const UNSET: Threshold = { get: () => LogLevel.Info, set: () => {} }

/** The threshold of the gateway's logger, where `layer` provides it. */
export class LogThreshold extends Context.Reference<LogThreshold>()("mcp-agentify/LogThreshold", {
  defaultValue: () => UNSET
}) {}

export const makeThreshold = (initial: LogLevelName = "info"): Threshold => {
  let current = LEVELS[initial]
  return { get: () => current, set: (level) => void (current = LEVELS[level]) }
}

/** Sets the level of the logger in use (none provided, as when embedded with a logger of one's own: nothing). */
export const applyLevel = (level: LogLevelName): Effect.Effect<void> =>
  Effect.map(LogThreshold, (threshold) => threshold.set(level))

/**
 * What the configuration has to say (a refused backend, an ignored `.env` line) is said once per
 * process, however often the configuration is read again (a client's `initialize`) or the same
 * problem is met again (a refused backend not started).
 */
const said = new Set<string>()

/** True the first time `message` is given, false after. */
export const firstTime = (message: string): boolean => {
  if (said.has(message)) return false
  said.add(message)
  return true
}

/** Logs each configuration note at its level, once per process. */
export const logNotes = (
  notes: ReadonlyArray<{ readonly level: "warn" | "info" | "debug"; readonly message: string }>
): Effect.Effect<void> =>
  Effect.forEach(
    notes.filter((note) => firstTime(note.message)),
    (note) =>
      note.level === "warn"
        ? Effect.logWarning(note.message)
        : note.level === "info"
          ? Effect.logInfo(note.message)
          : Effect.logDebug(note.message),
    { discard: true }
  )

/** Where lines go; tests swap it to capture them. */
export interface Sink {
  readonly write: (line: string) => void
  readonly isTTY: boolean
  /** A person reads every line (a terminal command): `mcp-agentify: warning: <sentence>`. */
  readonly person?: boolean
}

const stderrSink: Sink = {
  write: (line) => {
    process.stderr.write(line)
  },
  get isTTY() {
    return process.stderr.isTTY === true
  }
}

/** The terminal commands' stderr: what the gateway says, as sentences for the person who ran them. */
export const personSink: Sink = {
  write: (line) => {
    process.stderr.write(line)
  },
  isTTY: true,
  person: true
}

/** A level as a person reads it at the start of a line. */
const PERSON_LEVELS: Record<string, string> = { WARN: "warning", ERROR: "error", FATAL: "error", INFO: "note" }

const render = (value: unknown): unknown => {
  if (typeof value === "string") return value
  if (value instanceof Error) return value.message
  return value
}

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && Object.getPrototypeOf(u) === Object.prototype

/**
 * `Effect.log("text", {key: value})`: strings make the message, plain objects become fields
 * (so JSON lines stay queryable), anything else is appended as JSON.
 */
const splitMessage = (message: unknown, fields: Record<string, unknown>): string => {
  const parts = Array.isArray(message) ? message : [message]
  const text: Array<string> = []
  for (const part of parts) {
    if (typeof part === "string") text.push(part)
    else if (isPlainObject(part)) Object.assign(fields, part)
    else text.push(safeJson(render(part)))
  }
  return text.join(" ")
}

const safeJson = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** A logger writing JSON or readable lines to `sink`, filtered by `threshold`. */
export const make = (sink: Sink = stderrSink, threshold: Threshold = makeThreshold()): Logger.Logger<unknown, void> =>
  Logger.make(({ annotations, cause, context, date, logLevel, message, spans }) => {
    const least = threshold.get()
    if (logLevel.ordinal < least.ordinal || least === LogLevel.None) return
    const fields: Record<string, unknown> = {}
    for (const [key, value] of HashMap.toEntries(annotations)) fields[key] = render(value)
    const now = date.getTime()
    for (const span of List.toArray(spans)) fields[`${span.label}_ms`] = now - span.startTime
    const text = splitMessage(message, fields)
    const failure = Cause.isEmpty(cause) ? undefined : Cause.pretty(cause, { renderErrorCause: true })
    // The events hub of the gateway that logged this, if one is in its context and listened to.
    const events = Context.getOrElse(FiberRefs.getOrDefault(context, FiberRef.currentContext), Events, () => undefined)
    if (events?.active()) {
      events.publish({
        _tag: "Log",
        at: now,
        level: logLevel.label.toLowerCase(),
        message: Secrets.scrub(text),
        fields: Secrets.scrubDeep({ ...fields, ...(failure ? { cause: failure } : {}) }) as Record<string, unknown>
      })
    }
    let line: string
    if (sink.person === true) {
      const extra = Object.entries(fields)
        .map(([k, v]) => `${k} ${typeof v === "string" ? v : safeJson(v)}`)
        .join(", ")
      const level = PERSON_LEVELS[logLevel.label] ?? logLevel.label.toLowerCase()
      line = `mcp-agentify: ${level}: ${text}${extra ? ` (${extra})` : ""}${failure ? `\n${failure}` : ""}\n`
    } else if (sink.isTTY) {
      const extra = Object.entries(fields)
        .map(([k, v]) => `${k}=${typeof v === "string" ? v : safeJson(v)}`)
        .join(" ")
      line = `${date.toISOString().slice(11, 23)} ${logLevel.label.padEnd(5)} ${text}${extra ? ` ${extra}` : ""}${
        failure ? `\n${failure}` : ""
      }\n`
    } else {
      line = `${safeJson({ time: date.toISOString(), level: logLevel.label.toLowerCase(), msg: text, ...fields, ...(failure ? { cause: failure } : {}) })}\n`
    }
    sink.write(Secrets.scrub(line))
  })

/**
 * Replaces Effect's stdout logger with the stderr one, and provides its level (`applyLevel`); it
 * hears the state files refused (see config/RegularFile) while it is in use.
 *
 * The runtime's minimum is `All` because the level changes while the gateway runs (a client's
 * `initializationOptions`); the threshold is applied by each logger instead. Effect's tracer logger
 * (a log line as an event of the current span) is held to the same threshold: unfiltered, it
 * stringified every trace-level message, such as a 10,000-call completion, stalling the event loop.
 */
export const layer = (sink?: Sink): Layer.Layer<LogThreshold> =>
  Layer.suspend(() => {
    const threshold = makeThreshold()
    const atThreshold = (level: LogLevel.LogLevel) => {
      const least = threshold.get()
      return least !== LogLevel.None && level.ordinal >= least.ordinal
    }
    const logger = make(sink, threshold)
    // State files refused where no fiber runs (a pins file read inside a listing's review, a
    // sign-in's tokens, the launcher's code cache): said by this logger while it is the one in use.
    const hearRefusals = Layer.effectDiscard(
      Effect.acquireRelease(
        Effect.sync(() =>
          RegularFile.hear((message) =>
            logger.log({
              fiberId: FiberId.none,
              logLevel: LogLevel.Warning,
              message,
              cause: Cause.empty,
              context: FiberRefs.empty(),
              spans: List.empty(),
              annotations: HashMap.empty(),
              date: new Date()
            })
          )
        ),
        (stop) => Effect.sync(stop)
      )
    )
    return Layer.mergeAll(
      hearRefusals,
      Logger.replace(Logger.defaultLogger, logger),
      Logger.replace(Logger.tracerLogger, Logger.filterLogLevel(Logger.tracerLogger, atThreshold)),
      Logger.minimumLogLevel(LogLevel.All),
      Layer.succeed(LogThreshold, threshold)
    )
  })
