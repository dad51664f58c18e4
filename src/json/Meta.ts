/**
 * `_meta`, read and rewritten in one place: the one object of a request's params or a result
 * that every layer adds to (progress tokens, trace context, the stateless era's client
 * description, the gateway's steps and answer, a listen stream's id). Everything else in the
 * value is kept as it came, and so is every key of `_meta` a caller does not name.
 */
import { field, isObject, objectField } from "./Json.js"

/** The `_meta` of params or a result, when it has one. */
export const of = (value: unknown): Readonly<Record<string, unknown>> | undefined => objectField(value, "_meta")

/** One key of `_meta`. */
export const get = (value: unknown, key: string): unknown => field(of(value), key)

/**
 * `value` (an object; anything else counts as `{}`) with `entries` laid over its `_meta`. With
 * `under: true` the entries go beneath what `_meta` already holds (defaults the caller may
 * override).
 */
export const merge = (
  value: unknown,
  entries: Readonly<Record<string, unknown>>,
  options?: { readonly under?: boolean }
): Record<string, unknown> => {
  const meta = of(value)
  return {
    ...(isObject(value) ? value : {}),
    _meta: options?.under === true ? { ...entries, ...meta } : { ...meta, ...entries }
  }
}

/**
 * `value` without the `_meta` keys `drop` selects; `_meta` itself goes when nothing is left. The
 * same value when there is nothing to drop (no copy on the hot path).
 */
export const without = (value: unknown, drop: (key: string) => boolean): unknown => {
  const meta = of(value)
  if (meta === undefined || !isObject(value)) return value
  let found = false
  for (const key in meta) if (drop(key)) found = true
  if (!found) return value
  const kept = Object.fromEntries(Object.entries(meta).filter(([key]) => !drop(key)))
  const { _meta: _dropped, ...rest } = value
  return Object.keys(kept).length === 0 ? rest : { ...rest, _meta: kept }
}
