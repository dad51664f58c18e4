/**
 * `limits`: how many tool calls a subject, a tool or a backend may make per minute, and how many at
 * once. Counted at every call however made, in the call pipeline's `count` stage (see
 * store/TeamQuotas).
 */
import { Schema } from "effect"

const Count = (max: number) =>
  Schema.Number.check(
    Schema.makeFilter((n) => Number.isInteger(n) && n >= 1 && n <= max, { message: `must be a whole number from 1 to ${max}` })
  )

/** One limit: calls in any minute, and calls in flight at once. */
export const Limit = Schema.Struct({
  callsPerMinute: Schema.optional(Count(1_000_000)),
  concurrent: Schema.optional(Count(10_000))
})
export type Limit = typeof Limit.Type

/** `{subject?, tools?: {"<glob over exposed names>": Limit}, backends?: {"<id>": Limit}}`. */
export const Limits = Schema.Struct({
  /** Each subject's own (an access token's subject over HTTP; "local" over stdio). */
  subject: Schema.optional(Limit),
  /** Each tool matched by the first glob that matches its exposed name, counted on its own. */
  tools: Schema.optional(Schema.Record(Schema.String, Limit)),
  /** Each backend named. */
  backends: Schema.optional(Schema.Record(Schema.String, Limit))
})
export type Limits = typeof Limits.Type
