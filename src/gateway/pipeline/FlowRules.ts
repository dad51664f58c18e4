/**
 * The flow guard: rules of the `decide` stage over the calls the gateway's own model plans (an
 * orchestration's step, a script's call), seeing where each argument came from (see
 * orchestration/Provenance) and what the tool and the data's backend are (see
 * catalog/Capabilities). A client's own `tools/call` is the client's decision and is not judged.
 *
 *   private-data-out    a value read from a private backend flowing into an open-world tool; the
 *                       tool's own hints cannot call it closed for data from another backend
 *                       (only the configuration's `flow` can: it is what the user declares)
 *   untrusted-target    a destructive call whose arguments came from an untrusted result
 *   untrusted-write     any other call that writes, carrying a value from an untrusted result
 *   outside-plan        a tool the plan did not name, chosen after the model read a result (a
 *                       plan names tools in both routings: a backend named is not its every tool)
 *
 * What the request asked to keep is not held by the data rules (`private-data-out`,
 * `untrusted-write`), in both modes alike: a value read from a source the request names, when it
 * asks to keep what that source says, going to a tool the plan named that keeps it (it writes and
 * destroys nothing; a script written before anything was read is its own plan). A value of any other
 * provenance, or going to any other tool, is judged as always. A client's own script
 * (`agentify_run_code`) is its author's request: what it writes of what it reads is not an
 * untrusted write, and its private data still leaves only with consent.
 *
 * A value that could not be traced (read past the ledger's bound) counts as private and untrusted.
 * Each says why, naming what was read. `flowGuard: "confirm"` (the default) makes a held call wait
 * for the user's consent (the `ask` stage), `"strict"` refuses it, `"off"` has no rule.
 */
import { Effect } from "effect"
import * as Capabilities from "../../catalog/Capabilities.js"
import type { FlowGuard } from "../../config/Flow.js"
import { describeOrigin, describeSource } from "../../orchestration/Provenance.js"
import { readFromNamed } from "../../orchestration/Intent.js"
import type { Origin } from "../../call/Vocabulary.js"
import { isRequest, type ToolCall } from "./Call.js"
import type { Rule } from "./Rule.js"

export interface Settings {
  readonly mode: () => FlowGuard
  /** A backend's `flow` setting as configured now. */
  readonly flowOf: (backendId: string) => Capabilities.FlowSetting | undefined
}

/** A planned tool call with its data's origins (the model's reads and prompts send nothing out). */
const judged = (call: ToolCall): boolean =>
  (call.via === "orchestration" || call.via === "script") && call.flow !== undefined && !isRequest(call)

const capabilitiesOf = (call: ToolCall, settings: Settings): Capabilities.Capabilities | undefined =>
  call.target === undefined
    ? undefined
    : Capabilities.of(call.target.own, call.target.entry?.tool.annotations, settings.flowOf(call.target.backendId))

const list = (items: ReadonlyArray<string>): string => [...new Set(items)].join("; ")

/**
 * Whether a tool is open-world for a value from `origin`: as the configuration declares, else, for
 * data from its own backend, as the tool says; data from another backend leaves it, whatever the
 * tool says of itself (a server's hints may make the guard stricter, never laxer).
 */
const openWorldFor = (call: ToolCall, settings: Settings, origin: Origin): boolean => {
  const target = call.target!
  const declared = Capabilities.declaredFor(target.own, settings.flowOf(target.backendId))
  if (declared?.openWorld !== undefined) return declared.openWorld
  return origin.from.backendId === target.backendId ? capabilitiesOf(call, settings)!.openWorld : true
}

/** The values of a call that came from a backend whose data is `data` (an untraced value is every kind). */
const carrying = (call: ToolCall, settings: Settings, data: "private" | "untrusted"): ReadonlyArray<Origin> =>
  call.flow!.origins.filter((o) => o.untraced === true || Capabilities.dataOf(settings.flowOf(o.from.backendId))[data])

/**
 * A rule over a call's values: when the tool can do `can` (for each value), the values that came
 * from a backend whose data is `data` hold it, named with where each came from; but those the
 * request asked to keep (`asked`).
 */
const dataRule = (
  settings: Settings,
  name: string,
  can: (call: ToolCall, origin: Origin) => boolean,
  data: "private" | "untrusted",
  why: string,
  asked: (call: ToolCall, origin: Origin) => boolean = keptAsAsked(settings)
): Rule => ({
  name,
  ask: () => settings.mode() === "confirm",
  concerns: (call) => on(call, settings),
  refuses: (call) =>
    Effect.sync(() => {
      if (!on(call, settings) || call.target === undefined) return undefined
      const carried = carrying(call, settings, data).filter((o) => can(call, o) && !asked(call, o))
      if (carried.length === 0) return undefined
      return `${why} (${list(carried.map(describeOrigin))})`
    })
})

const on = (call: ToolCall, settings: Settings) => judged(call) && settings.mode() !== "off"

/** The tool itself, by the name it is listed under (with `routing: "backend"` the model's function is the backend). */
const toolOf = (call: ToolCall): string => call.target?.entry?.name ?? call.name

/**
 * Whether a value is what the request asked to keep: it was read from a source the request names
 * and asks to keep, and it goes to a tool that keeps it (writes, destroys nothing) which the plan,
 * made from the request alone, named; no plan yet is a script written before anything was read,
 * its own plan. A value that could not be traced is no source's.
 */
const keptAsAsked =
  (settings: Settings) =>
  (call: ToolCall, origin: Origin): boolean => {
    const { keeps, plan } = call.flow!
    if (keeps === undefined || keeps === "everything" || origin.untraced === true) return false
    const tool = capabilitiesOf(call, settings)
    if (tool === undefined || tool.readOnly || tool.destructive) return false
    return (plan === undefined || plan.includes(toolOf(call))) && readFromNamed(origin.from, keeps.sources)
  }

/** The same, or any value of a client's own script (what it writes of what it reads is its author's). */
const writtenAsAsked =
  (settings: Settings) =>
  (call: ToolCall, origin: Origin): boolean =>
    call.flow!.keeps === "everything" || keptAsAsked(settings)(call, origin)

/** The rules, in order; the first that holds a call says why. */
export const rules = (settings: Settings): ReadonlyArray<Rule> => [
  dataRule(
    settings,
    "private-data-out",
    (call, origin) => openWorldFor(call, settings, origin),
    "private",
    "it would send data read from a private source out to an open-world tool"
  ),
  dataRule(
    settings,
    "untrusted-target",
    (call) => capabilitiesOf(call, settings)?.destructive === true,
    "untrusted",
    "a destructive call whose arguments came from untrusted content",
    () => false
  ),
  dataRule(
    settings,
    "untrusted-write",
    (call) => {
      const c = capabilitiesOf(call, settings)
      return c !== undefined && !c.readOnly && !c.destructive
    },
    "untrusted",
    "it would write what untrusted content says, and the request did not ask to keep what it reads",
    writtenAsAsked(settings)
  ),
  {
    name: "outside-plan",
    ask: () => settings.mode() === "confirm",
    concerns: (call) => on(call, settings),
    refuses: (call) =>
      Effect.sync(() => {
        if (!on(call, settings)) return undefined
        const { plan, read } = call.flow!
        // A plan that named a backend did not name its every tool.
        const tool = toolOf(call)
        if (plan === undefined || read.length === 0 || plan.includes(tool)) return undefined
        return `the plan did not name ${tool}; it was chosen after reading ${list(read.map(describeSource))}`
      })
  }
]
