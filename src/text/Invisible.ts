/**
 * Characters that hide text from the person reading it: the Unicode tag block (U+E0000..U+E007F,
 * which can spell a whole instruction no one sees), bidirectional controls (text shown in another
 * order than a model reads it), zero-width characters, and other control characters (but tab,
 * newline and carriage return). A tool's description is screened for them before the gateway's
 * own model or code mode's declarations read it; what is relayed to clients stays byte-exact.
 */

export type Kind = "tag" | "bidi" | "zero-width" | "control"

export const kindOf = (codePoint: number): Kind | undefined => {
  if (codePoint >= 0xe0000 && codePoint <= 0xe007f) return "tag"
  if (
    (codePoint >= 0x202a && codePoint <= 0x202e) ||
    (codePoint >= 0x2066 && codePoint <= 0x2069) ||
    codePoint === 0x200e ||
    codePoint === 0x200f ||
    codePoint === 0x061c
  ) {
    return "bidi"
  }
  if (codePoint === 0x200b || codePoint === 0x200c || codePoint === 0x200d || codePoint === 0x2060 || codePoint === 0xfeff) {
    return "zero-width"
  }
  if (
    (codePoint < 0x20 && codePoint !== 0x09 && codePoint !== 0x0a && codePoint !== 0x0d) ||
    (codePoint >= 0x7f && codePoint <= 0x9f)
  ) {
    return "control"
  }
  return undefined
}

// One pass over the text for the common case: nothing hidden, the same string back. Control
// characters are what this looks for, so the lint rule against them does not apply.
const ANY =
  // eslint-disable-next-line no-control-regex
  /[\u{E0000}-\u{E007F}\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C\u200B-\u200D\u2060\uFEFF\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/u
const ALL = new RegExp(ANY.source, "gu")

/** What is hidden in `text`: each kind found and how many. */
export const found = (text: string): ReadonlyArray<{ readonly kind: Kind; readonly count: number }> => {
  if (!ANY.test(text)) return []
  const counts = new Map<Kind, number>()
  for (const [char] of text.matchAll(ALL)) {
    const kind = kindOf(char.codePointAt(0)!)
    if (kind !== undefined) counts.set(kind, (counts.get(kind) ?? 0) + 1)
  }
  return [...counts].map(([kind, count]) => ({ kind, count }))
}

/** `text` without what is hidden in it (the same string when there is nothing). */
export const strip = (text: string): string => (ANY.test(text) ? text.replace(ALL, "") : text)

/** A JSON Schema with every `description` and `title` stripped (what else it says is kept as is). */
export const stripSchema = (schema: unknown): unknown => {
  if (Array.isArray(schema)) return schema.map(stripSchema)
  if (typeof schema !== "object" || schema === null) return schema
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    out[key] = (key === "description" || key === "title") && typeof value === "string" ? strip(value) : stripSchema(value)
  }
  return out
}

/** Whether a JSON Schema's descriptions or titles hide anything (cheap when not). */
export const schemaHides = (schema: unknown): boolean => {
  if (Array.isArray(schema)) return schema.some(schemaHides)
  if (typeof schema !== "object" || schema === null) return false
  for (const [key, value] of Object.entries(schema)) {
    if ((key === "description" || key === "title") && typeof value === "string" ? found(value).length > 0 : schemaHides(value)) {
      return true
    }
  }
  return false
}
