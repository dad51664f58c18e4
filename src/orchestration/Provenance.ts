/**
 * Where each value of a planned call came from: the user's request and context (trusted), the
 * model's own words, or the result of an earlier call (which one, from which backend). The model
 * cannot be asked: what it read is indexed as it reads it, and a call's arguments are looked up.
 *
 * A result's text is indexed by the hashes of its 8-character runs taken every 8 characters; an
 * argument's runs are looked up at every position, so a run of 15 characters or more copied from
 * a result is found wherever it stands in an argument (a secret inside a URL), and a shorter value
 * when it is a whole argument or word of one (an id, a path). What the request or its context says
 * is never counted against it. Indexing costs once per result; a lookup costs the length of the
 * arguments, whatever was read before (see `npm run bench`).
 */

/** An earlier call whose result the model read. */
export interface Source {
  /** Its place in the run: 1 for the first call that returned. */
  readonly call: number
  readonly backendId: string
  /** The tool as the model knows it. */
  readonly tool: string
  readonly arguments?: unknown
}

/** A value of the call's arguments that came from an earlier result. */
export interface Origin {
  /** Where in the arguments: `path`, `items[2].url`. */
  readonly path: string
  readonly from: Source
}

const RUN = 8
const SHORT = 3
const WORDS = /[\s"'`,;:(){}[\]<>|=&?!]+/

/** The hash of `text[at..at+RUN)`: FNV-1a over UTF-16 units, 32 bits. */
const runHash = (text: string, at: number): number => {
  let h = 0x811c9dc5
  for (let i = at; i < at + RUN; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h >>> 0
}

const wordsOf = (text: string): Array<string> => text.split(WORDS).filter((w) => w.length >= SHORT)

export class Ledger {
  private readonly runs = new Map<number, number>()
  private readonly words = new Map<string, number>()
  private readonly trustedRuns = new Set<number>()
  private readonly trustedWords = new Set<string>()
  private trustedText = ""
  private readonly sources: Array<Source> = []

  /** `trusted`: the user's request and its context, as the model was given them. */
  constructor(trusted: string) {
    this.trust(trusted)
  }

  /** Text written before any data was read (code mode's first script): what it says is the author's. */
  trust(text: string): void {
    this.trustedText += `\n${text}`
    for (let at = 0; at + RUN <= text.length; at++) this.trustedRuns.add(runHash(text, at))
    for (const word of wordsOf(text)) this.trustedWords.add(word)
  }

  /** The results read so far, in order. */
  get read(): ReadonlyArray<Source> {
    return this.sources
  }

  /** A result the model is about to read (its text as the model gets it). */
  record(source: Omit<Source, "call">, text: string): Source {
    const recorded: Source = { ...source, call: this.sources.length + 1 }
    this.sources.push(recorded)
    const index = this.sources.length - 1
    for (let at = 0; at + RUN <= text.length; at += RUN) {
      const h = runHash(text, at)
      if (!this.trustedRuns.has(h) && !this.runs.has(h)) this.runs.set(h, index)
    }
    for (const word of wordsOf(text)) if (!this.trustedWords.has(word) && !this.words.has(word)) this.words.set(word, index)
    return recorded
  }

  /** The earlier result a string came from, if any. */
  private sourceOf(value: string): Source | undefined {
    if (value.length < SHORT || this.sources.length === 0 || this.trustedText.includes(value)) return undefined
    for (let at = 0; at + RUN <= value.length; at++) {
      const found = this.runs.get(runHash(value, at))
      if (found !== undefined) return this.sources[found]
    }
    const whole = this.words.get(value)
    if (whole !== undefined) return this.sources[whole]
    for (const word of wordsOf(value)) {
      const found = this.words.get(word)
      if (found !== undefined) return this.sources[found]
    }
    return undefined
  }

  /** Every value of `args` that came from an earlier result, with its path. */
  originsOf(args: unknown): ReadonlyArray<Origin> {
    const origins: Array<Origin> = []
    const walk = (value: unknown, path: string, depth: number): void => {
      if (depth > 32) return
      if (typeof value === "string" || typeof value === "number") {
        const from = this.sourceOf(String(value))
        if (from !== undefined) origins.push({ path: path === "" ? "(arguments)" : path, from })
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
