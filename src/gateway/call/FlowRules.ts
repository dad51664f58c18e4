/**
 * The flow guard: rules of the `decide` stage over the calls the gateway's own model plans (an
 * orchestration's step, a script's call), seeing where each argument came from (see
 * orchestration/Provenance) and what the tool and the data's backend are (see
 * catalog/Capabilities). A client's own `tools/call` is the client's decision and is not judged.
 *
 *   private-data-out    a value read from a private backend flowing into an open-world tool
 *   untrusted-target    a destructive call whose arguments came from an untrusted result
 *   outside-plan        a tool the plan did not name, chosen after the model read a result
 *
 * Each says why, naming what was read. `flowGuard: "confirm"` (the default) makes a held call wait
 * for the user's consent (the `ask` stage), `"strict"` refuses it, `"off"` has no rule.
 */
import { Effect } from "effect"
import * as Capabilities from "../../catalog/Capabilities.js"
import type { FlowGuard } from "../../config/Flow.js"
import { describeSource } from "../../orchestration/Provenance.js"
import type { ToolCall } from "./Call.js"
import type { Rule } from "./stages/Decide.js"

export interface Settings {
  readonly mode: () => FlowGuard
  /** A backend's `flow` setting as configured now. */
  readonly flowOf: (backendId: string) => Capabilities.FlowSetting | undefined
}

const judged = (call: ToolCall): boolean => (call.via === "orchestration" || call.via === "script") && call.flow !== undefined

const capabilitiesOf = (call: ToolCall, settings: Settings): Capabilities.Capabilities | undefined =>
  call.target === undefined
    ? undefined
    : Capabilities.of(call.target.own, call.target.entry?.tool.annotations, settings.flowOf(call.target.backendId))

const list = (items: ReadonlyArray<string>): string => [...new Set(items)].join("; ")

/**
 * A rule over a call's values: when the tool can do `can`, the values that came from a backend whose
 * data is `data` hold it, named with where each came from.
 */
const dataRule = (
  settings: Settings,
  name: string,
  can: "openWorld" | "destructive",
  data: "private" | "untrusted",
  why: string
): Rule => ({
  name,
  ask: () => settings.mode() === "confirm",
  refuses: (call) =>
    Effect.sync(() => {
      if (!on(call, settings) || capabilitiesOf(call, settings)?.[can] !== true) return undefined
      const carried = call.flow!.origins.filter((o) => Capabilities.dataOf(settings.flowOf(o.from.backendId))[data])
      if (carried.length === 0) return undefined
      return `${why} (${list(carried.map((o) => `${o.path} from ${describeSource(o.from)}`))})`
    })
})

const on = (call: ToolCall, settings: Settings) => judged(call) && settings.mode() !== "off"

/** The rules, in order; the first that holds a call says why. */
export const rules = (settings: Settings): ReadonlyArray<Rule> => [
  dataRule(
    settings,
    "private-data-out",
    "openWorld",
    "private",
    "it would send data read from a private source out to an open-world tool"
  ),
  dataRule(
    settings,
    "untrusted-target",
    "destructive",
    "untrusted",
    "a destructive call whose arguments came from untrusted content"
  ),
  {
    name: "outside-plan",
    ask: () => settings.mode() === "confirm",
    refuses: (call) =>
      Effect.sync(() => {
        if (!on(call, settings)) return undefined
        const { plan, read } = call.flow!
        if (plan === undefined || read.length === 0 || plan.includes(call.name)) return undefined
        return `the plan did not name ${call.name}; it was chosen after reading ${list(read.map(describeSource))}`
      })
  }
]
