/**
 * Tool definitions pinned on first use, against "rug pulls": a server that changes a tool's
 * description or schema after it was approved (to tell a model to read `~/.ssh/id_rsa`, say).
 *
 * The first time a backend's tool is seen, its definition (name, title, description, inputSchema,
 * outputSchema, annotations, `_meta` with its `_meta.ui`) is stored with its fingerprint in the
 * gateway's state directory, per backend as it runs (see LaunchKey: its id, its command as found
 * on PATH, arguments, the names its `env` sets and working directory, or its URL). Two backends of
 * one configuration never share pins; the same id in two project folders is two servers, each
 * with pins of its own, and nothing needs saying. A definition that later differs from its pin is held back (`toolPins: "quarantine"`,
 * the default: not listed, not callable, not offered to any model) or only flagged (`"warn"`),
 * until `mcp-agentify trust <backend> [tool]` accepts it. A new tool is pinned as it appears.
 *
 * Files are 0600 in a 0700 directory, each written whole to a temporary file and renamed over the
 * old one, after reading what another gateway on the host may have pinned meanwhile.
 *
 * Bounded, against a server that renames its tools at every listing: a file keeps the pins of the
 * tools the server lists and at most `MAX_UNLISTED_PINS` of tools it no longer lists (the newest),
 * and a server's file is rewritten at most `REWRITES_AT_ONCE` times at once, then once a
 * `REWRITE_EVERY_MS`: new pins wait in memory meanwhile, and count as pins while they wait.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { isObject } from "../json/Json.js"
import type { Tool } from "../protocol/Mcp.js"
import type { BackendConfig } from "../config/Config.js"
import * as Secrets from "../observability/Secrets.js"
import * as LaunchKey from "./LaunchKey.js"
import * as RegularFile from "../config/RegularFile.js"
import { nobody, type Told } from "../store/WrittenFiles.js"

export type Mode = "quarantine" | "warn" | "off"

export interface Settings {
  readonly mode: Mode
  /** The gateway's state directory (pins go in its `pins/`). */
  readonly stateDir: string
  /** Who hears of a pins file written (a team's mirror: see store/WrittenFiles); none: nobody. */
  readonly told?: Told | undefined
}

/**
 * The largest pins file read (a larger one is ignored, said once): far above what `MAX_UNLISTED_PINS`
 * and a server's own list make, below what would hold the gateway.
 */
export const MAX_PINS_FILE_BYTES = 64 * 1024 * 1024
/** Pins of tools a server no longer lists, kept at most (the newest; a listed tool's pin is always kept). */
export const MAX_UNLISTED_PINS = 1_000
/** Rewrites of one server's file that may follow each other at once, before they are paced. */
export const REWRITES_AT_ONCE = 10
/** Paced, a server's file is rewritten at most once in this long. */
export const REWRITE_EVERY_MS = 1_000

/** The parts of a definition a pin holds. */
const PINNED = ["name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta"] as const
/** What pins held before `title` and `_meta`: a pin of those parts that still matches is brought up to date, not quarantined. */
const PINNED_BEFORE = ["name", "description", "inputSchema", "outputSchema", "annotations"] as const
type Pinned = Readonly<Record<string, unknown>>

const partsOf = (tool: Tool, keys: ReadonlyArray<string>): Pinned => {
  const out: Record<string, unknown> = {}
  for (const key of keys) if (tool[key] !== undefined) out[key] = tool[key]
  return out
}
const definitionOf = (tool: Tool): Pinned => partsOf(tool, PINNED)

/** The server a backend's pins belong to: what launches it, and the id it has now. */
export interface Server {
  readonly id: string
  /** What launches it, hashed (see LaunchKey): its pins file's name. */
  readonly key: string
  /** The key an earlier version gave its launch (without its id and its `env`'s names): pins there carry over. */
  readonly earlierKey: string
  /** The id with the command and arguments, or the URL, that named its pins file before launch keys (hashed, never written). */
  readonly identity: string
  /** The command and arguments or the URL as a person may read them: secrets masked, no credentials in a URL. */
  readonly shown: string
}

export const serverOf = (config: Pick<BackendConfig, "id"> & LaunchKey.Launched): Server =>
  config.url !== undefined
    ? {
        id: config.id,
        key: LaunchKey.keyOf(config),
        earlierKey: LaunchKey.earlierKeyOf(config),
        identity: JSON.stringify(["url", config.url]),
        shown: Secrets.displayUrl(config.url)
      }
    : {
        id: config.id,
        key: LaunchKey.keyOf(config),
        earlierKey: LaunchKey.earlierKeyOf(config),
        identity: JSON.stringify(["command", config.command ?? "", ...(config.args ?? [])]),
        shown: [config.command ?? "", ...Secrets.maskArgs(config.args ?? [])].join(" ")
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
  /** 2: the parts of PINNED; absent: a pin of before, of PINNED_BEFORE only. */
  readonly version?: 2
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

const dirOf = (settings: Settings) => path.join(settings.stateDir, "pins")
/** `launch-<key>.json`: the backend's pins, by its launch key (see LaunchKey). */
const fileOf = (settings: Settings, server: Server) => path.join(dirOf(settings), `launch-${server.key}.json`)
/** Where pins were kept per launch before the launch's key held its id and its `env`'s names. */
const earlierFileOf = (settings: Settings, server: Server) => path.join(dirOf(settings), `launch-${server.earlierKey}.json`)
/** Where pins were kept per id and command line (or URL), before they were kept per launch. */
const idFileOf = (settings: Settings, server: Server) =>
  path.join(
    dirOf(settings),
    `${encodeURIComponent(server.id)}@${createHash("sha256").update(server.identity).digest("hex").slice(0, 16)}.json`
  )
/** Where pins were kept per id alone, before that. */
const legacyFileOf = (settings: Settings, server: Server) => path.join(dirOf(settings), `${encodeURIComponent(server.id)}.json`)

/**
 * Before this server's pins are first written, the pins an earlier version kept for it become its
 * own: those of its launch as keyed before ids and `env` names were in the key, copied (each
 * backend that launched so keeps them: a rug pull is still caught across the upgrade; two backends
 * that shared that file start from what it held, and `trust` now sets each apart); else those of
 * its id and command line, copied (every launch that had them keeps them: two project folders that
 * ran `npx server-memory` as `memory` shared one file); else those of its id alone, taken over.
 */
const arrive = (settings: Settings, server: Server): void => {
  const file = fileOf(settings, server)
  if (fs.existsSync(file)) return
  const launched = earlierFileOf(settings, server)
  if (server.earlierKey !== server.key && fs.existsSync(launched)) {
    write(settings, server, readFile(launched))
    return
  }
  const before = idFileOf(settings, server)
  if (fs.existsSync(before)) {
    write(settings, server, readFile(before))
    return
  }
  const legacy = legacyFileOf(settings, server)
  if (fs.existsSync(legacy)) fs.renameSync(legacy, file)
}

export const read = (settings: Settings, server: Server): Pins => readFile(fileOf(settings, server))

/** The pins a file holds (none when it is missing or unreadable). */
const readFile = (file: string): Pins => {
  // Not a regular file (a FIFO, a link to /dev/zero), or too large: said once, then none.
  const text = RegularFile.readStateText(file, MAX_PINS_FILE_BYTES)
  if (text === undefined) return new Map()
  try {
    const parsed: unknown = JSON.parse(text)
    const tools = isObject(parsed) ? parsed.tools : undefined
    const pins = new Map<string, Pin>()
    // Only what a pin is: anything else in the file (edited by hand, say) pins nothing.
    for (const [name, pin] of Object.entries(isObject(tools) ? tools : {})) {
      const definition = isObject(pin) ? pin.definition : undefined
      if (isObject(pin) && typeof pin.fingerprint === "string" && isObject(definition)) {
        pins.set(name, {
          fingerprint: pin.fingerprint,
          definition,
          pinnedAt: String(pin.pinnedAt),
          ...(pin.version === 2 ? { version: 2 as const } : {})
        })
      }
    }
    return pins
  } catch {
    return new Map()
  }
}

/** A pins file's text, its tools in name order: the same pins always give the same text (two gateways' compare equal). */
const textOf = (backend: string, shown: string, tools: Iterable<readonly [string, unknown]>): string => {
  const byName = new Map(tools)
  const sorted = Object.fromEntries([...byName.keys()].sort().map((name) => [name, byName.get(name)]))
  return `${JSON.stringify({ backend, server: shown, tools: sorted }, null, 2)}\n`
}

/** `pins` without the oldest of the tools not `listed`, past MAX_UNLISTED_PINS of them. */
const pruned = (pins: ReadonlyArray<readonly [string, Pin]>, listed: ReadonlySet<string> | undefined) => {
  if (listed === undefined) return pins
  const unlisted = pins.filter(([name]) => !listed.has(name))
  if (unlisted.length <= MAX_UNLISTED_PINS) return pins
  const dropped = new Set(
    unlisted
      .sort(([, a], [, b]) => (a.pinnedAt < b.pinnedAt ? 1 : a.pinnedAt > b.pinnedAt ? -1 : 0))
      .slice(MAX_UNLISTED_PINS)
      .map(([name]) => name)
  )
  return pins.filter(([name]) => !dropped.has(name))
}

/**
 * Stores `update` over what the file holds now (another gateway may have pinned others meanwhile),
 * with the pins waiting in memory; `listed`: the tools the server lists now (the others' pins are
 * bounded).
 */
export const write = (settings: Settings, server: Server, update: Pins, listed?: ReadonlySet<string>): void => {
  const file = fileOf(settings, server)
  const waiting = paced.get(file)
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  fs.chmodSync(settings.stateDir, 0o700)
  fs.chmodSync(path.dirname(file), 0o700)
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`
  const merged = new Map([...read(settings, server), ...(waiting?.pins ?? []), ...update])
  fs.writeFileSync(temporary, textOf(server.id, server.shown, pruned([...merged], listed ?? waiting?.listed)), { mode: 0o600 })
  fs.renameSync(temporary, file)
  if (waiting !== undefined) {
    waiting.pins.clear()
    if (waiting.timer !== undefined) clearTimeout(waiting.timer)
    waiting.timer = undefined
  }
  ;(settings.told ?? nobody)("pins", path.basename(file, ".json"))
}

/** Per pins file: rewrites left at once (refilled one per REWRITE_EVERY_MS), and the pins waiting. */
interface Pacing {
  tokens: number
  at: number
  readonly pins: Map<string, Pin>
  listed?: ReadonlySet<string> | undefined
  timer?: ReturnType<typeof setTimeout> | undefined
}
const paced = new Map<string, Pacing>()

/** New pins stored now, or (a server churning its tools) kept waiting for the next rewrite. */
const store = (
  settings: Settings,
  server: Server,
  fresh: Pins,
  listed: ReadonlySet<string>,
  onError: (error: unknown) => void
): void => {
  const file = fileOf(settings, server)
  const now = Date.now()
  let pacing = paced.get(file)
  if (pacing === undefined) paced.set(file, (pacing = { tokens: REWRITES_AT_ONCE, at: now, pins: new Map() }))
  pacing.tokens = Math.min(REWRITES_AT_ONCE, pacing.tokens + Math.floor((now - pacing.at) / REWRITE_EVERY_MS))
  if (now - pacing.at >= REWRITE_EVERY_MS) pacing.at = now
  pacing.listed = listed
  if (pacing.tokens > 0) {
    pacing.tokens--
    try {
      write(settings, server, fresh, listed)
    } catch (error) {
      onError(error)
    }
    return
  }
  for (const [name, pin] of fresh) pacing.pins.set(name, pin)
  if (pacing.timer !== undefined) return
  // The next rewrite takes what waits, should no listing come to make it.
  const waiting = pacing
  waiting.timer = setTimeout(() => {
    waiting.timer = undefined
    if (waiting.pins.size === 0) return
    try {
      write(settings, server, new Map(), waiting.listed)
    } catch (error) {
      onError(error)
    }
  }, REWRITE_EVERY_MS)
  waiting.timer.unref?.()
}

/** The pins of a server: its file's, and those waiting to be written. */
const pinsOf = (settings: Settings, server: Server): Map<string, Pin> => {
  const waiting = paced.get(fileOf(settings, server))?.pins
  const pins = new Map(read(settings, server))
  if (waiting !== undefined) for (const [name, pin] of waiting) if (!pins.has(name)) pins.set(name, pin)
  return pins
}

/**
 * Two versions of one server's pins file made one (see store/Mirror): every tool pinned in either,
 * the `shared` one's pin where both pin a tool (a `trust` made elsewhere wins; so does the team's
 * first pin). Unreadable: the shared one as it is.
 */
export const merge = (local: string, shared: string): string => {
  try {
    const [mine, theirs]: Array<unknown> = [JSON.parse(local), JSON.parse(shared)]
    if (!isObject(mine) || !isObject(theirs) || !isObject(mine.tools) || !isObject(theirs.tools)) return shared
    return textOf(String(theirs.backend), String(theirs.server), [...Object.entries(mine.tools), ...Object.entries(theirs.tools)])
  } catch {
    return shared
  }
}

const pinOf = (tool: Tool): Pin => ({
  fingerprint: fingerprint(tool),
  definition: definitionOf(tool),
  pinnedAt: new Date().toISOString(),
  version: 2
})

/** What a backend's tools are, held against their pins. */
export interface Review {
  /** The tools that may be listed and called. */
  readonly admitted: ReadonlyArray<Tool>
  /** Tools whose definitions changed: held back ("quarantine") or only flagged ("warn"). */
  readonly changed: ReadonlyArray<Changed>
  /** New tools, pinned by this review. */
  readonly pinned: ReadonlyArray<string>
  /** Names the backend lists more than once: the first definition is the one reviewed, the others are ignored. */
  readonly duplicates?: ReadonlyArray<string> | undefined
}

/** Reviews a backend's tools as listed, pinning the new ones (a failure to store is `onError`'s). */
export const review = (
  settings: Settings,
  server: Server,
  tools: ReadonlyArray<Tool>,
  onError: (error: unknown) => void
): Review => {
  if (settings.mode === "off") return { admitted: tools, changed: [], pinned: [] }
  try {
    arrive(settings, server)
  } catch (error) {
    onError(error)
  }
  const pins = pinsOf(settings, server)
  const fresh = new Map<string, Pin>()
  const changed: Array<Changed> = []
  const admitted: Array<Tool> = []
  const seen = new Set<string>()
  const duplicates = new Set<string>()
  for (const tool of tools) {
    // A second tool of the same name is never listed (names are keys): said, not reviewed.
    if (seen.has(tool.name)) {
      duplicates.add(tool.name)
      continue
    }
    seen.add(tool.name)
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
    // A pin made before title and _meta were pinned, whose parts still match: brought up to date.
    if (pin.version === undefined && pin.fingerprint === fingerprintOf(partsOf(tool, PINNED_BEFORE))) {
      fresh.set(tool.name, pinOf(tool))
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
  if (fresh.size > 0) store(settings, server, fresh, seen, onError)
  return {
    admitted,
    changed,
    pinned: [...fresh.keys()].filter((name) => !pins.has(name)),
    ...(duplicates.size === 0 ? {} : { duplicates: [...duplicates] })
  }
}

/** Accepts the definitions presented now (of `only`, or all), over their pins. */
export const trust = (settings: Settings, server: Server, tools: ReadonlyArray<Tool>, only?: string): ReadonlyArray<string> => {
  const chosen = tools.filter((tool) => only === undefined || tool.name === only)
  write(settings, server, new Map(chosen.map((tool) => [tool.name, pinOf(tool)])))
  return chosen.map((tool) => tool.name)
}

/**
 * What a call of a tool its pins hold back is told, on every road (a call at `initialize`'s start
 * or on a start for the call, at the aggregate or a backend's own endpoint): what changed, and how
 * to accept it. `shown`: the name the caller used (the exposed one at the aggregate).
 */
export const heldBack = (backendId: string, change: Changed, shown: string = change.name): string =>
  `Tool ${shown} is quarantined: its ${change.changed.join(", ")} changed since it was pinned; review the change and run \`mcp-agentify trust ${backendId} ${change.name}\` to accept it`

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
  server: Server,
  tools: ReadonlyArray<Tool>,
  before: ReadonlyArray<Changed>
): Review & {
  readonly warnings: ReadonlyArray<string>
  /** What the review says besides changes (a tool listed twice): kept for `check`. */
  readonly notes: ReadonlyArray<string>
} => {
  if (settings === undefined) return { admitted: tools, changed: [], pinned: [], warnings: [], notes: [] }
  const backendId = server.id
  const warnings: Array<string> = []
  const reviewed = review(settings, server, tools, (error) =>
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
  const notes = (reviewed.duplicates ?? []).map((name) => duplicated(backendId, name))
  return { ...reviewed, warnings: [...changes, ...warnings, ...notes], notes }
}

/** What happens to a second tool of one name: it is not listed, whatever its definition. */
const duplicated = (backendId: string, name: string): string =>
  `backend ${backendId} lists tool ${name} more than once: the first definition is the one listed and called, the others are ignored`
