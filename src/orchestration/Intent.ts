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
 */

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
const partOfSource = new RegExp(
  `\\b(?:${KEEP.map((v) => v.replace("-", "\\-")).join("|")})(?:s|d|ed|ing)?\\s+(?!that\\b)(?:[\\w'-]+\\s+){0,5}?(?:of|in|from)\\s+(?:the\\s+)?${SOURCE}`,
  "i"
)

/** Whether the request asks to keep or pass on what is read for it. */
export const keepsWhatItReads = (request: string): boolean =>
  directObject.test(request) || pattern.test(request) || partOfSource.test(request)
