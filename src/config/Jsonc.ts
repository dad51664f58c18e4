/**
 * Config files as people write them: JSON with comments and trailing commas (JSONC, as VS Code's
 * `.vscode/mcp.json` and most editors' settings are), parsed by Microsoft's `jsonc-parser`. A
 * file that is not even that is reported at `file:line:column`, as editors show it.
 *
 * Objects are built with own data properties, as `JSON.parse` builds them: the parser's own values
 * are built by assignment, where a key `__proto__` sets the object's prototype and vanishes (a file
 * whose backends sat under it started the default backend instead). Kept as data, such a key is
 * then refused by name where the config is checked.
 */
import { Result } from "effect"
import { type Node, type ParseError, parseTree, printParseErrorCode } from "jsonc-parser"

/** `object[key] = value` as an own data property, whatever the key (`__proto__` included). */
export const setOwn = (object: Record<string, unknown>, key: string, value: unknown): void => {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true })
}

/** A parsed node's value, its objects built with own data properties. */
const valueOf = (node: Node): unknown => {
  switch (node.type) {
    case "object": {
      const object: Record<string, unknown> = {}
      for (const property of node.children ?? []) {
        const [key, value] = property.children ?? []
        if (key !== undefined) setOwn(object, String(key.value), value === undefined ? undefined : valueOf(value))
      }
      return object
    }
    case "array":
      return (node.children ?? []).map(valueOf)
    default:
      return node.value
  }
}

/** What the parser's error codes mean to a person. */
const WORDING: Record<string, string> = {
  InvalidSymbol: "unexpected character",
  InvalidNumberFormat: "invalid number",
  PropertyNameExpected: "a property name (in double quotes) was expected",
  ValueExpected: "a value was expected",
  ColonExpected: "':' was expected",
  CommaExpected: "',' was expected",
  CloseBraceExpected: "'}' was expected",
  CloseBracketExpected: "']' was expected",
  EndOfFileExpected: "nothing more was expected",
  InvalidCommentToken: "invalid comment",
  UnexpectedEndOfComment: "a comment is not closed",
  UnexpectedEndOfString: "a string is not closed",
  UnexpectedEndOfNumber: "a number is cut short",
  InvalidUnicode: "invalid \\u escape",
  InvalidEscapeCharacter: "invalid escape character",
  InvalidCharacter: "invalid character in a string"
}

/** `line:column` (both from 1) of an offset in `text`. */
const position = (text: string, offset: number): string => {
  let line = 1
  let lineStart = 0
  for (let i = text.indexOf("\n"); i >= 0 && i < offset; i = text.indexOf("\n", i + 1)) {
    line++
    lineStart = i + 1
  }
  return `${line}:${offset - lineStart + 1}`
}

/** How many syntax problems an error names before it counts the rest. */
const MAX_NAMED = 10

/**
 * The value of a JSONC text, or its problems as `file:line:column: what`, every one of them (up to
 * ten, then how many more): one edit can fix them all.
 */
export const parseJsonc = (text: string, file: string): Result.Result<unknown, string> => {
  const errors: Array<ParseError> = []
  // A byte-order mark is not an error (Windows editors write one).
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  const tree = parseTree(body, errors, { allowTrailingComma: true, disallowComments: false, allowEmptyContent: false })
  if (errors.length === 0) return Result.succeed(tree === undefined ? undefined : valueOf(tree))
  const named = errors.slice(0, MAX_NAMED).map((error) => {
    const code = printParseErrorCode(error.error)
    return `${file}:${position(body, error.offset)}: ${WORDING[code] ?? code}`
  })
  const more = errors.length > MAX_NAMED ? `; and ${errors.length - MAX_NAMED} more` : ""
  return Result.fail(`${named.join("; ")}${more}`)
}
