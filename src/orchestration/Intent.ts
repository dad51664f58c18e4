/**
 * What a request itself asks to be done with what the gateway reads for it: whether it asks to
 * keep or pass on what was read ("save a summary of notes.md", "post the weather from the page to
 * #team", "remember what the file says"). A write carrying text from an untrusted result is the
 * request's own only then; "read notes.md and remember that we ship on Friday" asks to keep what
 * the request says, not what the file says (see gateway/pipeline/FlowRules' `untrusted-write`).
 *
 * Read in general terms, as data: a verb of keeping or passing on, followed within a few words by
 * what refers to something read (its contents, a summary, "it", "from <source>", "what X says"), or
 * by a part of a source the request names ("the open items of clean.txt", "the dates in
 * /srv/plan.md", "the headlines from https://news.example"): a name with a sign of a file, a path or
 * an address inside it, not a word of prose ("remember that we ship on Friday." keeps the request's
 * own words).
 *
 * What it asks to keep is what the sources it names say (`keeping`): a result read from one of them
 * (a call whose arguments name it: the path `/home/me/clean.txt` for `clean.txt`, the URL itself) is
 * the request's to keep; a result of any other provenance is not, whatever the request says.
 */
import type { Keeping, Source } from "../call/Vocabulary.js"

/** Verbs that keep or pass on. */
const KEEP = [
  "save",
  "store",
  "write",
  "remember",
  "record",
  "note",
  "copy",
  "put",
  "add",
  "append",
  "keep",
  "post",
  "send",
  "forward",
  "share",
  "publish",
  "mail",
  "email",
  "e-mail",
  "log",
  "file",
  "paste",
  "quote"
]

/** What refers to something read, as the object of such a verb. */
const READ = [
  "it",
  "them",
  "this",
  "these",
  "those",
  "its",
  "their",
  "what",
  "whatever",
  "everything",
  "all",
  "each",
  "every",
  "summary",
  "summaries",
  "content",
  "contents",
  "text",
  "result",
  "results",
  "output",
  "findings",
  "answer",
  "excerpt",
  "gist",
  "digest",
  "copy",
  "from"
]

const pattern = new RegExp(
  `\\b(?:${KEEP.map((v) => v.replace("-", "\\-")).join("|")})(?:s|d|ed|ing)?\\b(?:\\s+[\\w'.:/-]+){0,4}?\\s+(?:${READ.join("|")})\\b`,
  "i"
)
const directObject = new RegExp(
  `\\b(?:${KEEP.map((v) => v.replace("-", "\\-")).join("|")})\\s+(?:${READ.slice(0, 13).join("|")})\\b`,
  "i"
)

/** A source the request names: a file's, a path's or an address's sign inside a name (`clean.txt`, `~/a/b`, `https://x`). */
const SOURCE = "[\\w~-]*[./:#@\\\\][\\w~/.#@:-]*\\w"
const partOfSourceText = `\\b(?:${KEEP.map((v) => v.replace("-", "\\-")).join("|")})(?:s|d|ed|ing)?\\s+(?!that\\b)(?:[\\w'-]+\\s+){0,5}?(?:of|in|from)\\s+(?:the\\s+)?(${SOURCE})`
const partOfSource = new RegExp(partOfSourceText, "i")
const partsOfSources = new RegExp(partOfSourceText, "gi")
/** "save what notes.md says": the source named as what speaks, between the keeping verb and its word. */
const sayingSources = new RegExp(
  `\\b(?:${KEEP.map((v) => v.replace("-", "\\-")).join("|")})(?:s|d|ed|ing)?\\s+(?:[\\w'-]+\\s+){0,3}?(${SOURCE})\\s+(?:says|said|contains|holds|lists)\\b`,
  "gi"
)

/** Whether the request asks to keep or pass on what is read for it. */
export const keepsWhatItReads = (request: string): boolean =>
  directObject.test(request) || pattern.test(request) || partOfSource.test(request)

const named = new RegExp(`(?<![\\w~./:#@\\\\-])${SOURCE}`, "g")

/** The sources a request names: every name with a sign of a file, a path or an address (`clean.txt`, `~/a/b`, `https://x/y`). */
export const sourcesNamed = (request: string): ReadonlyArray<string> => [...new Set(request.match(named) ?? [])]

/**
 * What the request asks to keep of what is read for it: what the sources it asks to keep say (the
 * source a keeping verb governs: "remember the open items of clean.txt", "post the summary of
 * notes.md", "save what notes.md says"), never every source it names ("read ~/.ssh/id_rsa and notes.md,
 * then post the summary of notes.md" keeps notes.md alone); where the keeping names none ("save what
 * it says"), every source the request names; undefined: nothing.
 */
export const keeping = (request: string): Keeping | undefined => {
  if (!keepsWhatItReads(request)) return undefined
  const governed = [...request.matchAll(partsOfSources), ...request.matchAll(sayingSources)].map((match) => match[1] ?? "")
  const sources = [...new Set(governed.filter((source) => source !== ""))]
  // "Read notes.md and save what it says": the keeping names no source of its own, so what it keeps
  // is what the request read, every source it names.
  return { sources: sources.length > 0 ? sources : sourcesNamed(request) }
}

/** A name as a path compares: forward slashes, no trailing slash; `./` and `~/` ahead of it dropped for the tail. */
const normal = (name: string): string => name.trim().replaceAll("\\", "/").replace(/\/+$/, "")
const tailOf = (name: string): string => normal(name).replace(/^(?:\.\/|~\/?)/, "")

/** Whether a string the call read with names `source` (the same, or a path ending in it). */
const names = (value: string, source: string): boolean => {
  const v = normal(value)
  const tail = tailOf(source)
  return tail !== "" && (v === normal(source) || v === tail || v.endsWith(`/${tail}`))
}

/** The strings of a call's arguments, a few levels deep. */
const stringsOf = (value: unknown, depth = 0): ReadonlyArray<string> =>
  typeof value === "string"
    ? [value]
    : depth > 4 || typeof value !== "object" || value === null
      ? []
      : Object.values(value).flatMap((item: unknown) => stringsOf(item, depth + 1))

/** Whether a result was read from one of the sources a request named (its call's arguments name it). */
export const readFromNamed = (source: Source, sources: ReadonlyArray<string>): boolean =>
  sources.length > 0 && stringsOf(source.arguments).some((value) => sources.some((s) => names(value, s)))
