/**
 * The kinds of value a configuration is made of, shared by the gateway's options and each backend's
 * (see Schema, BackendSchema): ids, numbers within their ranges, secrets whose values an error never
 * shows, ports, the log levels, the routing and confirmation modes.
 */
import { Schema } from "effect"
import { LOG_LEVEL_NAMES, type LogLevelName as LevelName } from "../observability/Logging.js"

export const ID_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/

export const BackendId = Schema.String.check(
  Schema.makeFilter((s) => ID_PATTERN.test(s), { message: "must match ^[a-zA-Z0-9_-]{1,64}$" })
)

/** OpenAI accepts at most 128 tools in one request. */
export const MAX_TOOLS_LIMIT = 128
/** The most model turns one orchestration may take (each may call tools). */
export const MAX_STEPS_LIMIT = 32
/** The bounds of `maxListedTools`: room for the gateway's own four tools and a few found ones. */
export const MIN_LISTED_TOOLS = 8
export const MAX_LISTED_LIMIT = 10_000

/** `maxListedTools`: the most tools `tools/list` gives a client (see gateway/methods/Listing). */
export const ListedTools = Schema.Number.check(
  Schema.makeFilter((n) => Number.isInteger(n) && n >= MIN_LISTED_TOOLS && n <= MAX_LISTED_LIMIT, {
    message: `must be a whole number of tools from ${MIN_LISTED_TOOLS} to ${MAX_LISTED_LIMIT}`
  })
)

/**
 * A whole number in [1, max]. Every duration and size is bounded: Node clamps a timer over 2^31-1 ms
 * to 1 ms, so an unbounded "wait a month" would become "time out at once", in a loop.
 */
export const BoundedInt = (max: number, unit: string) =>
  Schema.Number.check(
    Schema.makeFilter((n) => Number.isInteger(n) && n >= 1 && n <= max, {
      message: `must be a whole number of ${unit} from 1 to ${max}`
    })
  )

/** The longest duration any setting accepts: 24 hours. */
export const MAX_DURATION_MS = 86_400_000
/** The largest frame any setting accepts: 1 GiB. */
export const MAX_FRAME_LIMIT = 1024 * 1024 * 1024
export const DurationMs = BoundedInt(MAX_DURATION_MS, "milliseconds")
export const MAX_SESSIONS_LIMIT = 100_000
export const FrameBytes = BoundedInt(MAX_FRAME_LIMIT, "bytes")

/**
 * A string whose value is never echoed in an error: env values, arguments and keys are secrets,
 * and Effect's default message ("Expected string, actual ...") would print a mistyped one.
 */
export const SecretString = Schema.String.annotate({ message: "must be a string (value not shown)" })
export const SecretEnv = Schema.Record(Schema.String, SecretString)

export const Port = Schema.Number.check(
  Schema.makeFilter((n) => Number.isInteger(n) && n >= 0 && n <= 65535, { message: "must be a port number (0-65535)" })
)

export const NonEmptyString = Schema.String.check(
  Schema.makeFilter((s) => s.trim().length > 0, { message: "must be a non-empty string" })
)

export const LogLevelName = Schema.Literals(LOG_LEVEL_NAMES)
export type LogLevelName = LevelName

export const Routing = Schema.Literals(["tool", "backend"])
export type Routing = typeof Routing.Type

/**
 * Which tools orchestration runs only after the user agreed: "destructive" those annotated
 * `destructiveHint: true`, "writes" every tool not annotated `readOnlyHint: true`, "never" none.
 */
export const ConfirmTools = Schema.Literals(["destructive", "writes", "never"])
export type ConfirmTools = typeof ConfirmTools.Type
