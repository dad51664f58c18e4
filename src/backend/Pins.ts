/**
 * Tool definitions pinned on first use, against "rug pulls": a server that changes a tool's
 * description or schema after it was approved (to tell a model to read `~/.ssh/id_rsa`, say).
 *
 * The first time a backend's tool is seen, its definition (name, description, inputSchema,
 * outputSchema, annotations) is stored with its fingerprint, per backend, in the gateway's state
 * directory. A definition that later differs from its pin is held back (`toolPins: "quarantine"`,
 * the default: not listed, not callable, not offered to any model) or only flagged (`"warn"`),
 * until `mcp-agentify trust <backend> [tool]` accepts it. A new tool is pinned as it appears.
 *
 * Files are 0600 in a 0700 directory, each written whole to a temporary file and renamed over the
 * old one, after reading what another gateway on the host may have pinned meanwhile.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { isObject } from "../data/Json.js"
import type { Tool } from "../protocol/Mcp.js"

export type Mode = "quarantine" | "warn" | "off"

export interface Settings {
  readonly mode: Mode
  /** The gateway's state directory (pins go in its `pins/`). */
  readonly stateDir: string
}

/** The parts of a definition a pin holds. */
const PINNED = ["name", "description", "inputSchema", "outputSchema", "annotations"] as const
type Pinned = Readonly<Record<string, unknown>>

const definitionOf = (tool: Tool): Pinned => {
  const out: Record<string, unknown> = {}
  for (const key of PINNED) if (tool[key] !== undefined) out[key] = tool[key]
  return out
}

/** JSON with object keys sorted: the same definition always gives the same text. */
const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`
  if (isObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`)
      .join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

/** The fingerprint of a definition (the pinned parts of a tool). */
export const fingerprintOf = (definition: Pinned): string =>
  `sha256:${createHash("sha256").update(canonical(definition)).digest("hex")}`

export const fingerprint = (tool: Tool): string => fingerprintOf(definitionOf(tool))

interface Pin {
  readonly fingerprint: string
  readonly definition: Pinned
  readonly pinnedAt: string
}

/** One backend's pins, by tool name (a Map: a tool may be called `__proto__`). */
export type Pins = ReadonlyMap<string, Pin>

/** A tool whose definition is not the one pinned. */
export interface Changed {
  readonly name: string
  /** Which parts differ ("description", "inputSchema", ...). */
  readonly changed: ReadonlyArray<string>
  /** The pinned definition and the one presented now. */
  readonly pinned: Pinned
  readonly now: Pinned
}

const fileOf = (settings: Settings, backendId: string) =>
  path.join(settings.stateDir, "pins", `${encodeURIComponent(backendId)}.json`)

export const read = (settings: Settings, backendId: string): Pins => {
  try {
    const parsed: unknown = JSON.parse(fs.readFileSync(fileOf(settings, backendId), "utf8"))
    const tools = isObject(parsed) ? parsed.tools : undefined
    const pins = new Map<string, Pin>()
    // Only what a pin is: anything else in the file (edited by hand, say) pins nothing.
    for (const [name, pin] of Object.entries(isObject(tools) ? tools : {})) {
      const definition = isObject(pin) ? pin.definition : undefined
      if (isObject(pin) && typeof pin.fingerprint === "string" && isObject(definition)) {
        pins.set(name, { fingerprint: pin.fingerprint, definition, pinnedAt: String(pin.pinnedAt) })
      }
    }
    return pins
  } catch {
    return new Map()
  }
}

/** Stores `update` over what the file holds now (another gateway may have pinned others meanwhile). */
export const write = (settings: Settings, backendId: string, update: Pins): void => {
  const file = fileOf(settings, backendId)
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  fs.chmodSync(settings.stateDir, 0o700)
  fs.chmodSync(path.dirname(file), 0o700)
  const tools = Object.fromEntries([...read(settings, backendId), ...update])
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`
  fs.writeFileSync(temporary, `${JSON.stringify({ backend: backendId, tools }, null, 2)}\n`, { mode: 0o600 })
  fs.renameSync(temporary, file)
}

const pinOf = (tool: Tool): Pin => ({
  fingerprint: fingerprint(tool),
  definition: definitionOf(tool),
  pinnedAt: new Date().toISOString()
})

/** What a backend's tools are, held against their pins. */
export interface Review {
  /** The tools that may be listed and called. */
  readonly admitted: ReadonlyArray<Tool>
  /** Tools whose definitions changed: held back ("quarantine") or only flagged ("warn"). */
  readonly changed: ReadonlyArray<Changed>
  /** New tools, pinned by this review. */
  readonly pinned: ReadonlyArray<string>
}

/** Reviews a backend's tools as listed, pinning the new ones (a failure to store is `onError`'s). */
export const review = (
  settings: Settings,
  backendId: string,
  tools: ReadonlyArray<Tool>,
  onError: (error: unknown) => void
): Review => {
  if (settings.mode === "off") return { admitted: tools, changed: [], pinned: [] }
  const pins = read(settings, backendId)
  const fresh = new Map<string, Pin>()
  const changed: Array<Changed> = []
  const admitted: Array<Tool> = []
  for (const tool of tools) {
    const pin = pins.get(tool.name)
    if (pin === undefined) {
      fresh.set(tool.name, pinOf(tool))
      admitted.push(tool)
      continue
    }
    if (pin.fingerprint === fingerprint(tool)) {
      admitted.push(tool)
      continue
    }
    const now = definitionOf(tool)
    changed.push({
      name: tool.name,
      changed: PINNED.filter((key) => canonical(pin.definition[key]) !== canonical(now[key])),
      pinned: pin.definition,
      now
    })
    if (settings.mode === "warn") admitted.push(tool)
  }
  if (fresh.size > 0) {
    try {
      write(settings, backendId, fresh)
    } catch (error) {
      onError(error)
    }
  }
  return { admitted, changed, pinned: [...fresh.keys()] }
}

/** Accepts the definitions presented now (of `only`, or all), over their pins. */
export const trust = (
  settings: Settings,
  backendId: string,
  tools: ReadonlyArray<Tool>,
  only?: string
): ReadonlyArray<string> => {
  const chosen = tools.filter((tool) => only === undefined || tool.name === only)
  write(settings, backendId, new Map(chosen.map((tool) => [tool.name, pinOf(tool)])))
  return chosen.map((tool) => tool.name)
}

/** A changed definition as a person reads it: each part that differs, before and after. */
export const describeChange = (change: Changed): string =>
  change.changed
    .map((key) => {
      const show = (value: unknown) => (typeof value === "string" ? value : (JSON.stringify(value) ?? "(none)"))
      return `  ${key}:\n    - ${show(change.pinned[key])}\n    + ${show(change.now[key])}`
    })
    .join("\n")

/**
 * A backend's tools as it lists them now, held against their pins (none: not checked), with what
 * to warn of: each change not already in `before` (said once), and a failure to store new pins.
 */
export const recheck = (
  settings: Settings | undefined,
  backendId: string,
  tools: ReadonlyArray<Tool>,
  before: ReadonlyArray<Changed>
): Review & { readonly warnings: ReadonlyArray<string> } => {
  if (settings === undefined) return { admitted: tools, changed: [], pinned: [], warnings: [] }
  const warnings: Array<string> = []
  const reviewed = review(settings, backendId, tools, (error) =>
    warnings.push(`could not store the pins of ${backendId}'s new tools: ${String(error)}`)
  )
  const said = new Set(before.map((c) => `${c.name}\u0000${fingerprintOf(c.now)}`))
  const changes: Array<string> = []
  for (const c of reviewed.changed) {
    if (said.has(`${c.name}\u0000${fingerprintOf(c.now)}`)) continue
    changes.push(
      `tool ${c.name} of ${backendId} changed since it was pinned (${c.changed.join(", ")}): ${
        settings.mode === "quarantine" ? "quarantined" : "flagged"
      }; review it and run \`mcp-agentify trust ${backendId} ${c.name}\` to accept it\n${describeChange(c)}`
    )
  }
  return { ...reviewed, warnings: [...changes, ...warnings] }
}
