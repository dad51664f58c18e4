/**
 * A rule of the `decide` stage (see stages/Decide): named, seeing the call, saying nothing (pass)
 * or why it holds it. The policies' rule (PolicyChecks) and the flow guard's (FlowRules) are
 * rules; an app that embeds the gateway adds its own with `AppRules`.
 */
import { Context, type Effect } from "effect"
import type { ToolCall } from "./Call.js"

/** Why a rule holds a call, and what its refusal's `data` adds (the policies that forbid it). */
export interface Held {
  readonly why: string
  readonly data?: Readonly<Record<string, unknown>> | undefined
}

export interface Rule {
  readonly name: string
  /** Why the call may not run as it is, or undefined. */
  readonly refuses: (call: ToolCall) => Effect.Effect<string | Held | undefined>
  /** The call may run once the user agreed (asked by the `ask` stage); false or absent: refused. */
  readonly ask?: (() => boolean) | undefined
  /**
   * Whether the rule has anything to say of such a call at all, answered at once (no policies
   * loaded, a client's own call for the flow guard): absent, it is asked every time. A call no rule
   * concerns passes without an effect run for it (the passthrough's hot path).
   */
  readonly concerns?: ((call: ToolCall) => boolean) | undefined
}

/** An embedding app's own rules, asked after the flow guard's (none unless provided). */
export const AppRules = Context.Reference<ReadonlyArray<Rule>>("mcp-agentify/AppRules", {
  defaultValue: () => []
})
