/**
 * Secret values the gateway must never print: the OpenAI key, every backend `env` value, and
 * any argument that follows `--key`/`--token`/`--api-key` or looks like a key.
 *
 * Values are held as `Redacted` where they live; this registry is the last line of defence:
 * the logger, error replies and the debug surfaces all pass text through `scrub`, so a secret
 * that a backend echoes back in an error message is still masked. It is module state because
 * the logger is process-wide and must work before any Layer is built.
 */
import { Redacted } from "effect"

/** Shorter values are not scrubbed: masking "1" or "true" everywhere would garble logs. */
const MIN_SECRET_LENGTH = 6
const MASK = "<redacted>"

const secrets = new Set<string>()
let pattern: RegExp | undefined

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * Registers a value to be masked from now on. Accepts a plain string or a `Redacted`.
 *
 * Its JSON-escaped forms are masked too: log lines are scrubbed once they are JSON, where a
 * secret holding a quote, a backslash or a control character no longer reads as itself, and a
 * backend's JSON quoted inside a log line is escaped twice.
 */
export const register = (value: string | Redacted.Redacted<string> | undefined | null): void => {
  if (value === undefined || value === null) return
  const plain = Redacted.isRedacted(value) ? Redacted.value(value) : value
  if (plain.length < MIN_SECRET_LENGTH || secrets.has(plain)) return
  const once = JSON.stringify(plain).slice(1, -1)
  const twice = JSON.stringify(once).slice(1, -1)
  for (const form of [plain, once, twice]) secrets.add(form)
  // Longest first so a secret that contains another is masked whole.
  pattern = new RegExp([...secrets].sort((a, b) => b.length - a.length).map(escape).join("|"), "g")
}

/** Replaces every registered secret in `text`. */
export const scrub = (text: string): string => (pattern === undefined ? text : text.replace(pattern, MASK))

/** `scrub` applied to every string inside a JSON-like value. */
export const scrubDeep = (value: unknown): unknown => {
  if (pattern === undefined) return value
  if (typeof value === "string") return scrub(value)
  if (Array.isArray(value)) return value.map(scrubDeep)
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = scrubDeep(v)
    return out
  }
  return value
}

const SECRET_FLAG = /^--?(key|token|api[-_]?key|secret|password|auth|access[-_]?token)$/i
const SECRET_FLAG_INLINE = /^(--?(?:key|token|api[-_]?key|secret|password|auth|access[-_]?token))=(.+)$/i
/** Shapes of well-known keys (sk-..., ghp_..., xoxb-..., long opaque tokens). */
const LOOKS_LIKE_KEY = /^(sk-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{16,}|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|[A-Za-z0-9_\-]{32,})$/

/** The secret values inside a command line: what follows a secret flag, or what looks like a key. */
export const secretArgs = (args: ReadonlyArray<string>): Array<string> => {
  const found: Array<string> = []
  args.forEach((arg, i) => {
    const inline = SECRET_FLAG_INLINE.exec(arg)
    if (inline) found.push(inline[2]!)
    else if (SECRET_FLAG.test(arg) && i + 1 < args.length) found.push(args[i + 1]!)
    else if (LOOKS_LIKE_KEY.test(arg) && !arg.includes("/")) found.push(arg)
  })
  return found
}

/** A command line safe to print: secret values replaced by the mask. */
export const maskArgs = (args: ReadonlyArray<string>): Array<string> => {
  const hidden = new Set(secretArgs(args))
  return args.map((arg) => {
    const inline = SECRET_FLAG_INLINE.exec(arg)
    if (inline) return `${inline[1]}=${MASK}`
    return hidden.has(arg) ? MASK : arg
  })
}
