/**
 * What a tool can do, for the rules that guard the gateway's own calls: its annotations read with
 * MCP's defaults for absent hints (the schema says a tool that says nothing may write, may
 * destroy, and reaches the open world: `readOnlyHint: false`, `destructiveHint: true`,
 * `openWorldHint: true`), then what the configuration declares of its backend and of tools by glob
 * (`flow`), which wins. And what its backend's data is: private (files, mail, databases: what
 * must not leave without consent) and untrusted (the web, trackers: what may carry instructions).
 * A backend says neither unless configured: it is taken for both.
 */
import { matchesGlob } from "./Exposure.js"
import { field } from "../json/Json.js"

/** The hints a configuration may declare for a backend's tools (absent: as the tool says, then MCP's default). */
export interface DeclaredHints {
  readonly readOnly?: boolean | undefined
  readonly destructive?: boolean | undefined
  readonly openWorld?: boolean | undefined
}

/** A backend's `flow` setting. */
export interface FlowSetting {
  /** Its data must not leave without consent (default true). */
  readonly private?: boolean | undefined
  /** What it returns may carry instructions (default true). */
  readonly untrusted?: boolean | undefined
  /** Hints for its tools by glob over their own names; the first glob that matches wins. */
  readonly tools?: Readonly<Record<string, DeclaredHints>> | undefined
}

export interface Capabilities {
  readonly readOnly: boolean
  /** Meaningful only when not read-only, as in MCP. */
  readonly destructive: boolean
  readonly openWorld: boolean
  /** The tool carried none of the three hints: what it is taken for is MCP's default (or the config's). */
  readonly unannotated: boolean
}

/** What a backend's data is. */
export interface DataClass {
  readonly private: boolean
  readonly untrusted: boolean
}

const hint = (annotations: unknown, name: string): boolean | undefined => {
  const value = field(annotations, name)
  return typeof value === "boolean" ? value : undefined
}

/** What the configuration declares of a tool (its backend's `flow.tools`, the first glob that matches). */
export const declaredFor = (ownName: string, flow: FlowSetting | undefined): DeclaredHints | undefined =>
  Object.entries(flow?.tools ?? {}).find(([glob]) => matchesGlob(glob, ownName))?.[1]

/** A tool's capabilities: the configuration's hints, else its own, else MCP's defaults. */
export const of = (ownName: string, annotations: unknown, flow: FlowSetting | undefined): Capabilities => {
  const declared = declaredFor(ownName, flow)
  const readOnlyHint = hint(annotations, "readOnlyHint")
  const destructiveHint = hint(annotations, "destructiveHint")
  const openWorldHint = hint(annotations, "openWorldHint")
  const readOnly = declared?.readOnly ?? readOnlyHint ?? false
  return {
    readOnly,
    destructive: !readOnly && (declared?.destructive ?? destructiveHint ?? true),
    openWorld: declared?.openWorld ?? openWorldHint ?? true,
    unannotated: readOnlyHint === undefined && destructiveHint === undefined && openWorldHint === undefined
  }
}

/**
 * A tool's annotations with the configuration's hints written over its own: what the gateway lists
 * it with, and what `confirmTools`, a turn's concurrency and the flow rules read.
 */
export const annotated = (
  ownName: string,
  annotations: Readonly<Record<string, unknown>> | undefined,
  flow: FlowSetting | undefined
): Readonly<Record<string, unknown>> | undefined => {
  const declared = Object.entries(flow?.tools ?? {}).find(([glob]) => matchesGlob(glob, ownName))?.[1]
  if (declared === undefined) return annotations
  return {
    ...annotations,
    ...(declared.readOnly === undefined ? {} : { readOnlyHint: declared.readOnly }),
    ...(declared.destructive === undefined ? {} : { destructiveHint: declared.destructive }),
    ...(declared.openWorld === undefined ? {} : { openWorldHint: declared.openWorld })
  }
}

/** A backend's data class: private and untrusted unless its `flow` says otherwise. */
export const dataOf = (flow: FlowSetting | undefined): DataClass => ({
  private: flow?.private ?? true,
  untrusted: flow?.untrusted ?? true
})

/** How `check` and the docs word a tool's capabilities. */
export const describe = (c: Capabilities): string =>
  c.readOnly
    ? `read-only${c.openWorld ? ", open-world" : ""}`
    : `${c.destructive ? "destructive" : "writes"}${c.openWorld ? ", open-world" : ""}`
