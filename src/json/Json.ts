/**
 * Reading JSON the gateway did not write (a client's params, a backend's result, a token
 * endpoint's answer) by narrowing, not by assertion: what is not there, or not of the expected
 * kind, reads as undefined.
 */
import * as Depth from "./Depth.js"

/** A JSON object (not null, not an array). */
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** `value` when it is an object, else an empty one (for spreading and reading). */
export const objectOr = (value: unknown): Readonly<Record<string, unknown>> => (isObject(value) ? value : {})

/** A field of an object; undefined when `value` is not one. */
export const field = (value: unknown, key: string): unknown => (isObject(value) ? value[key] : undefined)

export const stringField = (value: unknown, key: string): string | undefined => {
  const found = field(value, key)
  return typeof found === "string" ? found : undefined
}

export const numberField = (value: unknown, key: string): number | undefined => {
  const found = field(value, key)
  return typeof found === "number" ? found : undefined
}

export const objectField = (value: unknown, key: string): Record<string, unknown> | undefined => {
  const found = field(value, key)
  return isObject(found) ? found : undefined
}

/** JSON text parsed (nested no deeper than Depth's bound), or undefined when it is not JSON (never throws). */
export const parseJson = (text: string): unknown => {
  try {
    return Depth.parse(text)
  } catch {
    return undefined
  }
}

/** What a thrown value says: an Error's message, else the value as text. */
export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/** A Node system error's code (`ENOENT`, `EACCES`...), if it has one. */
export const errnoOf = (error: unknown): string | undefined =>
  error instanceof Error && "code" in error && typeof error.code === "string" ? error.code : undefined
