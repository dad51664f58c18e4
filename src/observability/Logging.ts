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
import { Cause, Context, Effect, Layer, Logger, LogLevel, References } from "effect"
import * as RegularFile from "../config/RegularFile.js"
import { Events } from "./Events.js"
import * as Secrets from "./Secrets.js"

/** The levels a configuration may name, least severe first ("silent": nothing). */
export const LOG_LEVEL_NAMES = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const
export type LogLevelName = (typeof LOG_LEVEL_NAMES)[number]

const LEVELS: Record<LogLevelName, LogLevel.LogLevel> = {
  trace: "Trace",
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  error: "Error",
  fatal: "Fatal",
  silent: "None"
}

/** True when a line at `level` passes the least severe level `least` ("None": nothing passes). */
const passes = (level: LogLevel.LogLevel, least: LogLevel.LogLevel): boolean =>
  least !== "None" && LogLevel.isGreaterThanOrEqualTo(level, least)

/** A level as the lines name it: Effect 3's labels ("WARN", not Effect 4's "Warn"), so the lines stay as they were. */
const LABELS: Record<LogLevel.LogLevel, string> = {
  All: "ALL",
  Trace: "TRACE",
  Debug: "DEBUG",
  Info: "INFO",
  Warn: "WARN",
  Error: "ERROR",
  Fatal: "FATAL",
  None: "OFF"
}

/** The least severe level a logger writes; set while it runs (a client's initializationOptions). */
export interface Threshold {
  readonly get: () => LogLevel.LogLevel
  readonly set: (level: LogLevelName) => void
}

/** No logger of the gateway's: as when embedded with a logger of one's own, setting the level does nothing. */
const UNSET: Threshold = { get: () => "Info", set: () => {} }

/** The threshold of the gateway's logger, where `layer` provides it. */
export const LogThreshold = Context.Reference<Threshold>("mcp-agentify/LogThreshold", { defaultValue: () => UNSET })

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
  Logger.make(({ cause, date, fiber, logLevel, message }) => {
    if (!passes(logLevel, threshold.get())) return
    const fields: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(fiber.getRef(References.CurrentLogAnnotations))) fields[key] = render(value)
    const now = date.getTime()
    for (const [label, startTime] of fiber.getRef(References.CurrentLogSpans)) fields[`${label}_ms`] = now - startTime
    const text = splitMessage(message, fields)
    const failure = cause.reasons.length === 0 ? undefined : Cause.pretty(cause)
    // The events hub of the gateway that logged this, if one is in its context and listened to.
    const events = fiber.getRef(Events)
    const label = LABELS[logLevel]
    if (events.active()) {
      events.publish({
        _tag: "Log",
        at: now,
        level: label.toLowerCase(),
        message: Secrets.scrub(text),
        fields: Secrets.scrubDeep({ ...fields, ...(failure ? { cause: failure } : {}) }) as Record<string, unknown>
      })
    }
    let line: string
    if (sink.person === true) {
      const extra = Object.entries(fields)
        .map(([k, v]) => `${k} ${typeof v === "string" ? v : safeJson(v)}`)
        .join(", ")
      const level = PERSON_LEVELS[label] ?? label.toLowerCase()
      line = `mcp-agentify: ${level}: ${text}${extra ? ` (${extra})` : ""}${failure ? `\n${failure}` : ""}\n`
    } else if (sink.isTTY) {
      const extra = Object.entries(fields)
        .map(([k, v]) => `${k}=${typeof v === "string" ? v : safeJson(v)}`)
        .join(" ")
      line = `${date.toISOString().slice(11, 23)} ${label.padEnd(5)} ${text}${extra ? ` ${extra}` : ""}${
        failure ? `\n${failure}` : ""
      }\n`
    } else {
      line = `${safeJson({ time: date.toISOString(), level: label.toLowerCase(), msg: text, ...fields, ...(failure ? { cause: failure } : {}) })}\n`
    }
    sink.write(Secrets.scrub(line))
  })

/**
 * Replaces Effect's loggers (its default one writes to stdout) with the stderr one, and provides
 * its level (`applyLevel`); it hears the state files refused (see config/RegularFile) while it is
 * in use. Effect's own loggers, should any code add them back, are told to write to stderr too.
 *
 * The runtime's minimum is `All` because the level changes while the gateway runs (a client's
 * `initializationOptions`); the threshold is applied by each logger instead. Effect's tracer logger
 * (a log line as an event of the current span) is held to the same threshold: unfiltered, it
 * stringified every trace-level message, such as a 10,000-call completion, stalling the event loop.
 */
export const layer = (sink?: Sink): Layer.Layer<never> =>
  Layer.suspend(() => {
    const threshold = makeThreshold()
    const logger = make(sink, threshold)
    const tracerLogger = Logger.make<unknown, void>((options) => {
      if (passes(options.logLevel, threshold.get())) Logger.tracerLogger.log(options)
    })
    // State files refused where no fiber runs (a pins file read inside a listing's review, a
    // sign-in's tokens, the launcher's code cache): said by this logger while it is the one in use.
    const warnAlone = (message: string): Effect.Effect<void> =>
      Effect.logWarning(message).pipe(
        Effect.provideService(Logger.CurrentLoggers, new Set([logger])),
        Effect.provideService(References.MinimumLogLevel, "All")
      )
    const hearRefusals = Layer.effectDiscard(
      Effect.acquireRelease(
        Effect.sync(() => RegularFile.hear((message) => Effect.runSync(warnAlone(message)))),
        (stop) => Effect.sync(stop)
      )
    )
    return Layer.mergeAll(
      Logger.layer([logger, tracerLogger]),
      Layer.succeed(References.MinimumLogLevel, "All"),
      Layer.succeed(Logger.LogToStderr, true),
      Layer.succeed(LogThreshold, threshold),
      hearRefusals
    )
  })
