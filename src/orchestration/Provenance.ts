/**
 * Where each value of a planned call came from: the user's request and context (trusted), the
 * model's own words, or the result of an earlier call (which one, from which backend). The model
 * cannot be asked: what it read is indexed as it reads it, and a call's arguments are looked up.
 *
 * A result's text is indexed by the hashes of its 8-character runs taken every 8 characters, once
 * as it is and once with everything but letters and digits removed; an argument's runs are looked
 * up at every position, so a run of 15 characters or more copied from a result is found wherever
 * it stands in an argument (a secret inside a URL), spaced out or with its separators removed.
 * A shorter value counts when it stands out as a value (it holds a digit, or a sign of a path, an
 * address or an id: `hunter2abc`, `notes.md`, `GH-4412`) and is a whole argument, a word of one, or
 * a segment of a URL's path or query; a word of ordinary prose ("summary", "Friday") is no value.
 * Before looking up, an argument is also read as it would be decoded: URL encoding, base64 and hex
 * tokens, and reversed. What the request or its context says is never counted against it.
 *
 * What it cannot see: a value the model rewrote (translated, paraphrased, summarised, encrypted, or
 * encoded some other way: ROT13, every other character), or a short value of plain letters.
 *
 * Indexing is bounded: the first `INDEXED_CHARS` characters an orchestration reads are indexed, in
 * slices that yield to other work; everything read past the bound cannot be traced and counts as
 * untrusted, private data in every later call's arguments that the request does not hold (see
 * `Origin.untraced`). A lookup costs the length of the arguments, whatever was read before.
 */
import { Effect } from "effect"
import type { Origin, Source } from "../call/Vocabulary.js"

/** How many characters of results one orchestration indexes (about 40 MB of index at most). */
export const INDEXED_CHARS = 2 * 1024 * 1024
/** How much is indexed between two yields to other work. */
const SLICE_CHARS = 64 * 1024

const RUN = 8
const SHORT = 3
/** How far a slice reads on past its edges for a word cut by them. */
const WORD_REACH = 256
/** Where words end: spaces, quotes, brackets and the signs between a key and its value. */
const WORDS = /[\s"'`,;(){}[\]<>|!]+/
/** Where a word's segments end: a URL's path, query and fragment, an address's parts. */
const SEGMENTS = /[/?&=#:@+]+/
const NOT_ALNUM = /[^\p{L}\p{N}]+/gu
/** A word that stands out as a value, not prose: a digit, or a sign of a path, an address, an id. */
const VALUE = /[\p{N}._/@\\~#%$+]|\p{Ll}\p{Lu}/u
/** Base64 of 12 bytes or more (shorter is too like a word); of text, it mixes cases. */
const BASE64 = /[A-Za-z0-9+/_-]{16,}={0,2}/g
const MIXED_CASE = /[a-z].*[A-Z]|[A-Z].*[a-z]/
const HEX = /(?:[0-9a-fA-F]{2}){6,}/g

/**
 * A pause that lets the event loop take its I/O (a ping, another client's request) before the next
 * slice: `Effect.yieldNow` alone runs on as microtasks, which I/O never gets between.
 */
const breath: Effect.Effect<void> = Effect.callback<void>((resume) => {
  const timer = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(timer))
})

/** The hash of `text[at..at+RUN)`: FNV-1a over UTF-16 units, kept to 30 bits. */
const runHash = (text: string, at: number): number => {
  let h = 0x811c9dc5
  for (let i = at; i < at + RUN; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  // 30 bits: a small integer to V8 (a Map keyed by larger numbers boxes every key).
  return h & 0x3fffffff
}

/** Whether a UTF-16 unit is a letter or digit (ASCII at once; beyond it, as Unicode says). */
const alnum = (text: string, at: number): boolean => {
  const c = text.charCodeAt(at)
  if (c < 128) return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
  return ALNUM.test(text[at]!)
}
const ALNUM = /[\p{L}\p{N}]/u

/** `text` with everything but letters and digits removed. */
const stripped = (text: string): string => {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) >= 128) return text.replace(NOT_ALNUM, "")
  let out = ""
  let from = 0
  for (let i = 0; i <= text.length; i++) {
    if (i === text.length || !alnum(text, i)) {
      if (i > from) out += text.slice(from, i)
      from = i + 1
    }
  }
  return out
}

/** `word` without the signs at its edges (`Friday.` is `Friday`). */
const trimmed = (word: string): string => {
  let start = 0
  let end = word.length
  while (start < end && !alnum(word, start)) start++
  while (end > start && !alnum(word, end - 1)) end--
  return start === 0 && end === word.length ? word : word.slice(start, end)
}
const reversed = (text: string): string => [...text].reverse().join("")

/** The values a text holds: its words that stand out, and their segments that do. */
const valuesOf = (text: string): Array<string> => {
  const out: Array<string> = []
  for (const raw of text.split(WORDS)) {
    const word = trimmed(raw)
    if (word.length < SHORT || !VALUE.test(word)) continue
    out.push(word)
    if (!SEGMENTS.test(word)) continue
    for (const part of word.split(SEGMENTS)) {
      const segment = trimmed(part)
      if (segment.length >= SHORT && segment !== word && VALUE.test(segment)) out.push(segment)
    }
  }
  return out
}

/** Mostly printable text (what a decoding of a real value gives), else undefined. */
const printable = (text: string): string | undefined => {
  if (text.length < SHORT) return undefined
  let ok = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if ((c >= 0x20 && c < 0x7f) || c === 0x0a || c === 0x09 || c > 0xa0) ok++
  }
  return ok >= text.length * 0.95 && !text.includes("\ufffd") ? text : undefined
}

/** What a value may be, decoded: URL encoding, base64 and hex tokens in it. */
const decodings = (value: string): Array<string> => {
  const out: Array<string> = []
  if (value.includes("%")) {
    try {
      out.push(decodeURIComponent(value))
    } catch {
      // not URL-encoded after all
    }
  }
  for (const token of value.match(BASE64) ?? []) {
    if (!MIXED_CASE.test(token)) continue
    const decoded = printable(Buffer.from(token, "base64").toString("utf8"))
    if (decoded !== undefined) out.push(decoded)
  }
  for (const token of value.match(HEX) ?? []) {
    const decoded = printable(Buffer.from(token, "hex").toString("utf8"))
    if (decoded !== undefined) out.push(decoded)
  }
  return out
}

/** An index of runs at a stride of RUN: the first source to hold each run. */
class Runs {
  readonly byHash = new Map<number, number>()
  add(text: string, from: number, to: number, index: number, trusted: Set<number>): void {
    for (let at = from; at + RUN <= to; at += RUN) {
      const h = runHash(text, at)
      if (!trusted.has(h) && !this.byHash.has(h)) this.byHash.set(h, index)
    }
  }
  /** Adds every source a run of `text` (at any position) came from. */
  find(text: string, into: Set<number>): void {
    for (let at = 0; at + RUN <= text.length; at++) {
      const found = this.byHash.get(runHash(text, at))
      if (found !== undefined) into.add(found)
    }
  }
}

const trustedRunsOf = (text: string, into: Set<number>): void => {
  for (let at = 0; at + RUN <= text.length; at++) into.add(runHash(text, at))
}

export class Ledger {
  private readonly runs = new Runs()
  private readonly bareRuns = new Runs()
  private readonly values = new Map<string, number>()
  private readonly trustedRuns = new Set<number>()
  private readonly trustedBareRuns = new Set<number>()
  private readonly trustedValues = new Set<string>()
  private trustedText = ""
  private trustedBare = ""
  private readonly sources: Array<Source> = []
  private indexed = 0
  /** The first result read past the bound: what an untraced value is said to come from. */
  private untraced: Source | undefined

  /** `trusted`: the user's request and its context, as the model was given them. */
  constructor(
    trusted: string,
    private readonly limit: number = INDEXED_CHARS
  ) {
    this.trust(trusted)
  }

  /** Text written before any data was read (code mode's first script): what it says is the author's. */
  trust(text: string): void {
    this.trustedText += `\n${text}`
    const bare = stripped(text)
    this.trustedBare += `\n${bare}`
    trustedRunsOf(text, this.trustedRuns)
    trustedRunsOf(bare, this.trustedBareRuns)
    for (const value of valuesOf(text)) this.trustedValues.add(value)
  }

  /** The results read so far, in order. */
  get read(): ReadonlyArray<Source> {
    return this.sources
  }

  /** Whether more was read than is indexed (every later value the request does not hold is untraced). */
  get overflowed(): boolean {
    return this.untraced !== undefined
  }

  /**
   * A result the model (or a script) is about to read, its text as it gets it: indexed up to the
   * ledger's bound, a slice at a time, yielding between slices.
   */
  record(source: Omit<Source, "call">, text: string): Effect.Effect<Source> {
    return Effect.suspend(() => {
      const recorded: Source = { ...source, call: this.sources.length + 1 }
      this.sources.push(recorded)
      const index = this.sources.length - 1
      const room = Math.max(0, this.limit - this.indexed)
      if (text.length > room) this.untraced ??= recorded
      const kept = text.length > room ? text.slice(0, room) : text
      this.indexed += kept.length
      if (kept.length <= SLICE_CHARS) {
        this.indexSlice(kept, 0, kept.length, index)
        return Effect.succeed(recorded)
      }
      const slices = Math.ceil(kept.length / SLICE_CHARS)
      return Effect.as(
        Effect.forEach(
          Array.from({ length: slices }, (_, i) => i),
          (i) =>
            Effect.andThen(
              breath,
              // A slice ends on a run's boundary and on a word's, a little past its share.
              Effect.sync(() => this.indexSlice(kept, i * SLICE_CHARS, Math.min(kept.length, (i + 1) * SLICE_CHARS), index))
            ),
          { discard: true }
        ),
        recorded
      )
    })
  }

  /** Indexes `text[from..to)` (`from` a multiple of RUN) as the result at `index`. */
  private indexSlice(text: string, from: number, to: number, index: number): void {
    // Runs reach past the slice's end so that a run spanning two slices is indexed once.
    this.runs.add(text, from, Math.min(text.length, to + RUN - 1), index, this.trustedRuns)
    // Words cut by the slice's edges are read whole from the text around them.
    // (A word longer than WORD_REACH is found by its runs instead.)
    let start = from
    while (start > 0 && from - start < WORD_REACH && !WORDS.test(text[start - 1]!)) start--
    let end = to
    while (end < text.length && end - to < WORD_REACH && !WORDS.test(text[end]!)) end++
    const part = text.slice(start, end)
    const bare = stripped(text.slice(from, to))
    this.bareRuns.add(bare, 0, bare.length, index, this.trustedBareRuns)
    for (const value of valuesOf(part)) {
      if (!this.trustedValues.has(value) && !this.values.has(value)) this.values.set(value, index)
      const bareValue = stripped(value)
      if (bareValue.length >= SHORT && bareValue !== value && !this.values.has(bareValue)) this.values.set(bareValue, index)
    }
  }

  /** Adds every earlier result one form of a value came from (a value may join several: a URL and a secret). */
  private formFrom(form: string, into: Set<number>): void {
    if (form.length < SHORT || this.trustedText.includes(form)) return
    const bare = stripped(form)
    if (bare.length >= SHORT && this.trustedBare.includes(bare)) return
    const backwards = reversed(form)
    const bareBackwards = reversed(bare)
    // Reversed, a value is found by its bare runs (reversing and stripping commute).
    this.runs.find(form, into)
    this.bareRuns.find(bare, into)
    this.bareRuns.find(bareBackwards, into)
    for (const whole of [form, bare, backwards, bareBackwards]) {
      const found = this.values.get(whole)
      if (found !== undefined) into.add(found)
    }
    for (const value of valuesOf(form)) {
      if (this.trustedValues.has(value)) continue
      const found = this.values.get(value) ?? this.values.get(stripped(value)) ?? this.values.get(reversed(value))
      if (found !== undefined) into.add(found)
    }
  }

  /** The earlier results a string came from (as it is or decoded), first read first. */
  private sourcesOf(value: string): ReadonlyArray<Source> {
    if (value.length < SHORT || this.sources.length === 0) return []
    const found = new Set<number>()
    for (const form of [value, ...decodings(value)]) this.formFrom(form, found)
    return [...found].sort((a, b) => a - b).map((i) => this.sources[i]!)
  }

  /** Every value of `args` that came from an earlier result (or, past the bound, cannot be traced), with its path. */
  originsOf(args: unknown): ReadonlyArray<Origin> {
    const origins: Array<Origin> = []
    const walk = (value: unknown, path: string, depth: number): void => {
      if (depth > 32) return
      if (typeof value === "string" || typeof value === "number") {
        const text = String(value)
        const at = path === "" ? "(arguments)" : path
        const from = this.sourcesOf(text)
        for (const source of from) origins.push({ path: at, from: source })
        if (from.length === 0 && this.untraced !== undefined && text.length >= SHORT && !this.trustedText.includes(text)) {
          origins.push({ path: at, from: this.untraced, untraced: true })
        }
      } else if (Array.isArray(value)) {
        value.forEach((item, i) => walk(item, `${path}[${i}]`, depth + 1))
      } else if (typeof value === "object" && value !== null) {
        for (const [key, item] of Object.entries(value)) walk(item, path === "" ? key : `${path}.${key}`, depth + 1)
      }
    }
    walk(args, "", 0)
    return origins
  }
}

/** How a step and a question name a source: `fs__read_text_file {"path":"notes.md"}`. */
export const describeSource = (source: Source): string => {
  const args = source.arguments === undefined ? "" : ` ${JSON.stringify(source.arguments).slice(0, 120)}`
  return `${source.tool}${args}`
}

/** How a question names where a value came from (a value that could not be traced says so). */
export const describeOrigin = (origin: Origin): string =>
  origin.untraced === true
    ? `${origin.path} (not traced: more was read than the gateway indexes, from ${describeSource(origin.from)} on)`
    : `${origin.path} from ${describeSource(origin.from)}`
