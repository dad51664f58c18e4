/**
 * The flow guard's settings: `flowGuard` (what a call the flow rules hold becomes) and a backend's
 * `flow` (what its data is, and its tools' hints where the server gives none or the wrong ones).
 * What they mean at a call: catalog/Capabilities and gateway/pipeline/FlowRules.
 */
import { Schema } from "effect"

/** "confirm" (the default): a held call runs only once the user agreed; "strict": refused; "off": no rule. */
export const FlowGuard = Schema.Literals(["confirm", "strict", "off"])
export type FlowGuard = typeof FlowGuard.Type

const Hints = Schema.Struct({
  readOnly: Schema.optional(Schema.Boolean),
  destructive: Schema.optional(Schema.Boolean),
  openWorld: Schema.optional(Schema.Boolean)
})

/** A backend's `flow`: `{private?, untrusted?, tools?: {"<glob over its own tool names>": {readOnly?, destructive?, openWorld?}}}`. */
export const Flow = Schema.Struct({
  /** Its data must not leave without consent (files, mail, databases). Default true. */
  private: Schema.optional(Schema.Boolean),
  /** What it returns may carry instructions (the web, trackers, inboxes). Default true. */
  untrusted: Schema.optional(Schema.Boolean),
  tools: Schema.optional(Schema.Record(Schema.String, Hints))
})
