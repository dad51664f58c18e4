/**
 * Secret values the gateway must never print: the OpenAI key, every backend `env` value, and
 * any argument that follows `--key`/`--token`/`--api-key` or looks like a key.
 *
 * Values are held as `Redacted` where they live; this registry is the last line of defence:
 * the logger, error replies and the debug surfaces all pass text through `scrub`, so a secret
 * that a backend echoes back in an error message is still masked. It is module state because
 * the logger is process-wide and must work before any Layer is built.
 *
 * A reply to a client masks only what the client did not send (`sentIn`): its own words come back
 * as it wrote them. Masking them would answer a question no one may ask, whether a guessed value is
 * one the gateway holds (`Unknown tool: <redacted>` for a tool named after a backend's `env`
 * value), and would hide nothing the client does not know. Logs mask everything.
 */
import { Redacted } from "effect"
import * as Depth from "../json/Depth.js"

/** Shorter values are not scrubbed: masking "1" or "true" everywhere would garble logs. */
const MIN_SECRET_LENGTH = 6
const MASK = "<redacted>"

/** Each form that is masked, and the secret it is a form of (see `register`). */
const secrets = new Map<string, string>()
let pattern: RegExp | undefined

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

let longest = 0

/**
 * The base64 text that stands for `bytes` wherever they sit in a longer base64 string: for each of
 * the three alignments, the characters that depend on these bytes alone.
 */
const base64Cores = (bytes: Buffer): Array<string> => {
  const cores: Array<string> = []
  for (let k = 0; k < 3; k++) {
    const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString("base64")
    const core = encoded.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6))
    cores.push(core, core.replace(/\+/g, "-").replace(/\//g, "_"))
  }
  return cores
}

/**
 * Registers a value to be masked from now on. Accepts a plain string or a `Redacted`.
 *
 * Its encoded forms are masked too: JSON-escaped once and twice (log lines are scrubbed once they
 * are JSON, and a backend's JSON quoted inside a log line is escaped twice), URL-encoded (a query
 * string, a proxy URL) and base64 at any alignment (a Basic auth header, a data URL).
 */
export const register = (value: string | Redacted.Redacted<string> | undefined | null): void => {
  if (value === undefined || value === null) return
  const plain = Redacted.isRedacted(value) ? Redacted.value(value) : value
  if (plain.length < MIN_SECRET_LENGTH || secrets.has(plain)) return
  const once = JSON.stringify(plain).slice(1, -1)
  const twice = JSON.stringify(once).slice(1, -1)
  const forms = [plain, once, twice, encodeURIComponent(plain), ...base64Cores(Buffer.from(plain, "utf8"))]
  for (const form of forms) {
    if (form.length < MIN_SECRET_LENGTH || secrets.has(form)) continue
    secrets.set(form, plain)
    longest = Math.max(longest, form.length)
  }
  // Longest first so a secret that contains another is masked whole.
  pattern = new RegExp(
    [...secrets.keys()]
      .sort((a, b) => b.length - a.length)
      .map(escape)
      .join("|"),
    "g"
  )
}

/** The secrets a client's request held, in any of their forms (see `sentIn`): its reply may echo them. */
export type Sent = ReadonlySet<string>

const NOTHING_SENT: Sent = new Set()

/**
 * The registered secrets that `sent` (a request's params: every string and key, at any depth)
 * holds in any of their forms. The client knows them: they are not masked in its reply.
 */
export const sentIn = (sent: unknown): Sent => {
  if (pattern === undefined) return NOTHING_SENT
  const found = new Set<string>()
  // A loop, not recursion: params may nest as deep as the bound on JSON allows.
  const stack: Array<unknown> = [sent]
  while (stack.length > 0) {
    const at = stack.pop()
    if (typeof at === "string") {
      for (const match of at.matchAll(pattern)) found.add(secrets.get(match[0]) ?? match[0])
    } else if (Array.isArray(at)) {
      for (const item of at) stack.push(item)
    } else if (typeof at === "object" && at !== null) {
      for (const [key, value] of Object.entries(at)) stack.push(key, value)
    }
  }
  return found.size === 0 ? NOTHING_SENT : found
}

/** Replaces every registered secret in `text`, except those the client sent (`sent`: see `sentIn`). */
export const scrub = (text: string, sent: Sent = NOTHING_SENT): string => {
  if (pattern === undefined) return text
  if (sent.size === 0) return text.replace(pattern, MASK)
  return text.replace(pattern, (form) => (sent.has(secrets.get(form) ?? form) ? form : MASK))
}

/**
 * `text` scrubbed and then cut to `max` characters. Scrubbing first matters: a cut through a
 * secret would leave its first half, which no longer matches, in the output.
 */
export const scrubAndCut = (text: string, max: number): string =>
  text.length <= max ? scrub(text) : scrub(text.slice(0, max + longest)).slice(0, max)

/**
 * How much of a stream's pending text may be flushed now, for output read in pieces (a backend's
 * stderr without newlines): the flushed part is scrubbed alone, so it must end before any secret
 * that could still be completed by text not yet received, and not inside one.
 */
export const flushableLength = (text: string): number => {
  if (pattern === undefined) return text.length
  let at = Math.max(0, text.length - longest)
  for (const match of text.matchAll(pattern)) {
    if (match.index < at && match.index + match[0].length > at) at = match.index
  }
  return at
}

/** `scrub` applied to every string inside a JSON-like value. */
export const scrubDeep = (value: unknown, sent: Sent = NOTHING_SENT): unknown => {
  if (pattern === undefined) return value
  if (typeof value === "string") return scrub(value, sent)
  if (Array.isArray(value)) return value.map((item) => scrubDeep(item, sent))
  // The marker of a value cut when it was read (see Depth) stays what it is.
  if (typeof value === "object" && value !== null && !Depth.isTooDeep(value)) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = scrubDeep(v, sent)
    return out
  }
  return value
}

/**
 * Names under which a value is a secret whatever it looks like: `password`, `token`, `secret`,
 * `authorization`, `api_key`/`apiKey`, anything ending in `_key`, `-token`, `Secret`...
 */
const SECRET_NAME =
  /^(?:password|passwd|passphrase|token|secret|authorization|auth|cookie|credentials?|api[-_]?key)$|[-_](?:key|token|secret|password)$/i
/** camelCase: `apiKey`, `accessToken` (case matters, or "monkey" would be a key). */
const SECRET_CAMEL = /[a-z0-9](?:Key|Token|Secret|Password)$/

/** Whether a field of this name holds a secret (its value is masked in arguments shown anywhere). */
const isSecretName = (name: string): boolean =>
  (SECRET_NAME.test(name) || SECRET_CAMEL.test(name)) && !/^(?:max|min)[-_A-Z]/i.test(name)

/**
 * A call's arguments as they may be shown (audit log, steps, a script's `calls`, a confirmation):
 * every field with a key-like name masked at any depth, and every registered secret scrubbed.
 */
export const scrubArguments = (value: unknown): unknown => scrubDeep(maskNamed(value))

const maskNamed = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(maskNamed)
  if (typeof value === "object" && value !== null && !Depth.isTooDeep(value)) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = isSecretName(k) && v !== null && v !== "" ? MASK : maskNamed(v)
    return out
  }
  return value
}

const SECRET_FLAG = /^--?(key|token|api[-_]?key|secret|password|auth|access[-_]?token)$/i
const SECRET_FLAG_INLINE = /^(--?(?:key|token|api[-_]?key|secret|password|auth|access[-_]?token))=(.+)$/i
/** Shapes of well-known keys (sk-..., ghp_..., xoxb-..., long opaque tokens). */
const LOOKS_LIKE_KEY =
  /^(sk-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{16,}|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|[A-Za-z0-9_-]{32,})$/

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

/** The URL as it may be printed: no credentials, no query (tokens often travel there). */
export const displayUrl = (raw: string): string => {
  try {
    const url = new URL(raw)
    return `${url.protocol}//${url.host}${url.pathname}`
  } catch {
    return "(invalid URL)"
  }
}
