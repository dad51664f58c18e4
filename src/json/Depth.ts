/**
 * How deeply the JSON a peer sends may nest, bounded explicitly where the gateway reads it and
 * where it writes it. Recursive code (`JSON.stringify` up to Node 24, the gateway's own walkers)
 * overflows the stack on a value nested some thousands of levels deep, and Node 26's encoder no
 * longer does: a guard that waited for the RangeError behaved differently on each Node, and found
 * nothing on the newest. Every scan here is a loop, never recursion.
 *
 * Reading (`parse`): a client's or a backend's text is read with every value that opens deeper
 * than `MAX_DEPTH` cut to the `TOO_DEEP` marker, in one scan of the text before `JSON.parse`, so
 * the message itself (its id, its method) is still read and still gets its one reply: a request
 * holding the marker is refused (-32602), a result holding it cannot be encoded (-32603).
 * Writing (`exceeds`): a value is walked before it is encoded; past `MAX_WRITTEN_DEPTH` levels (the
 * gateway's own wrapping around a value read at the bound fits well within it), or holding the
 * marker, it is not written.
 */

/** The deepest a value the gateway reads from a peer may nest: levels of objects and arrays, the outermost counted. */
export const MAX_DEPTH = 1_000

/** The deepest a message the gateway writes may nest, its envelope and wrapping included. */
export const MAX_WRITTEN_DEPTH = 2 * MAX_DEPTH

/** What the gateway says of a value past the bound. */
// Grouped by hand: `toLocaleString` at load would load Intl's data at every start (17 ms of a
// 230 ms ping-then-EOF, measured with --cpu-prof).
export const TOO_DEEP_TEXT = `nested more than ${String(MAX_DEPTH).replace(/\B(?=(\d{3})+$)/g, ",")} levels deep`

/**
 * The marker that stands where a value was cut. No JSON text parses to it, so a peer cannot send
 * one; encoded by mistake it says what it is rather than failing.
 */
class TooDeep {
  toJSON(): string {
    return `(${TOO_DEEP_TEXT})`
  }
}
export const TOO_DEEP: object = Object.freeze(new TooDeep())

export const isTooDeep = (value: unknown): boolean => value === TOO_DEEP

// The text's structural characters.
const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d

/** The index just past the string whose opening quote is at `at` (the text's length when it never ends). */
const pastString = (text: string, at: number): number => {
  let from = at + 1
  for (;;) {
    const quote = text.indexOf('"', from)
    if (quote < 0) return text.length
    let slashes = 0
    while (text.charCodeAt(quote - 1 - slashes) === BACKSLASH) slashes++
    if (slashes % 2 === 0) return quote + 1
    from = quote + 1
  }
}

/** The index just past the object or array that opens at `at` (the text's length when it never closes). */
const pastValue = (text: string, at: number): number => {
  let depth = 0
  let i = at
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      i = pastString(text, i)
      continue
    }
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++
    else if ((c === CLOSE_OBJECT || c === CLOSE_ARRAY) && --depth === 0) return i + 1
    i++
  }
  return text.length
}

/** A JSON string no peer's value can equal after the reviver ran (it stands for the marker in cut text). */
const MARK = "\u0000agentify:nested-too-deep"
const MARK_TEXT = JSON.stringify(MARK)

/**
 * The text with every object or array that opens deeper than `max` replaced by a placeholder, or
 * the text itself when none does (the common case, found without copying). Strings are skipped
 * whole, so brackets inside them do not count.
 */
export const cut = (text: string, max: number = MAX_DEPTH): string => {
  // Fewer characters than `max` cannot open more than `max` levels.
  if (text.length <= max) return text
  const parts: Array<string> = []
  let depth = 0
  let from = 0
  let i = 0
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      i = pastString(text, i)
      continue
    }
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (depth === max) {
        parts.push(text.slice(from, i), MARK_TEXT)
        from = i = pastValue(text, i)
        continue
      }
      depth++
    } else if ((c === CLOSE_OBJECT || c === CLOSE_ARRAY) && depth > 0) depth--
    i++
  }
  if (parts.length === 0) return text
  parts.push(text.slice(from))
  return parts.join("")
}

const revive = (_key: string, value: unknown): unknown => (value === MARK ? TOO_DEEP : value)

/**
 * `JSON.parse` of a peer's text, with what nests deeper than `MAX_DEPTH` cut to `TOO_DEEP`. Throws
 * what `JSON.parse` throws for text that is not JSON.
 */
export const parse = (text: string): unknown => {
  const bounded = cut(text)
  return bounded === text ? JSON.parse(text) : JSON.parse(bounded, revive)
}

/**
 * Whether `value` nests deeper than `max` levels or holds the marker of a value cut when it was
 * read. Depth first, so a value deeper than the bound (or a cycle) is found in `max` steps.
 */
export const exceeds = (value: unknown, max: number = MAX_WRITTEN_DEPTH): boolean => {
  if (typeof value !== "object" || value === null) return false
  // Two stacks side by side, not a pair per value: this walk runs on every message written.
  const values: Array<object> = [value]
  const depths: Array<number> = [1]
  for (let at = values.pop(); at !== undefined; at = values.pop()) {
    const depth = depths.pop() ?? 0
    if (at === TOO_DEEP || depth > max) return true
    if (Array.isArray(at)) {
      for (const child of at) {
        if (typeof child === "object" && child !== null) {
          values.push(child)
          depths.push(depth + 1)
        }
      }
      continue
    }
    for (const key in at) {
      const child: unknown = Reflect.get(at, key)
      if (typeof child === "object" && child !== null) {
        values.push(child)
        depths.push(depth + 1)
      }
    }
  }
  return false
}
