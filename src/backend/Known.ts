/**
 * Backends known from an earlier run: what a backend listed when it last started (its tools, and
 * the resources, resource templates and prompts it offers), kept in the state directory beside its
 * pins (`known/launch-<key>.json`, keyed by what launches it, see LaunchKey), so that a backend
 * whose lists are known need not start before its first use. A team's store keeps these files
 * alike on every gateway (kind "known", see store/Mirror): a replica that never ran a backend
 * knows its lists from one that did.
 *
 * What is read is data, never trusted: a file that is not a regular file (a FIFO, a link, a
 * device), too large, malformed or of another launch is ignored (said once at warn, see
 * config/RegularFile), and a backend started lists again, which replaces this (its tools held
 * against their pins as any listing is).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import type { BackendConfig } from "../config/Config.js"
import type * as Mcp from "../protocol/Mcp.js"
import { isObject } from "../json/Json.js"
import * as LaunchKey from "./LaunchKey.js"
import * as RegularFile from "../config/RegularFile.js"
import { nobody, type Told } from "../store/WrittenFiles.js"

/** The largest file read: a list beyond it is ignored (the backend then starts to be known). */
export const MAX_KNOWN_BYTES = 4 * 1024 * 1024
/** The most tools a remembered list may hold. */
export const MAX_KNOWN_TOOLS = 2_000
/** The most resources, templates or prompts a remembered list may hold. */
export const MAX_KNOWN_ITEMS = 2_000

/** An item of a resource, template or prompt list, as the backend listed it. */
export type Item = Readonly<Record<string, unknown>>

/** The lists a client asks for at the start besides tools, by the capability that offers them. */
export interface Lists {
  readonly resources?: ReadonlyArray<Item> | undefined
  readonly resourceTemplates?: ReadonlyArray<Item> | undefined
  readonly prompts?: ReadonlyArray<Item> | undefined
}

/** What is remembered of a backend: its tools as listed, which capabilities it offered, its other lists. */
export interface Known {
  readonly tools: ReadonlyArray<Mcp.Tool>
  readonly capabilities: ReadonlyArray<string>
  readonly lists?: Lists | undefined
}

/** A tool as listed: a name, an object inputSchema, a description if any (checked by hand: this runs for every backend at start). */
const isTool = (u: unknown): u is Mcp.Tool =>
  isObject(u) &&
  typeof u.name === "string" &&
  isObject(u.inputSchema) &&
  (u.description === undefined || typeof u.description === "string")

/** Each list's items and the field that names them (a resource's URI, a template's, a prompt's name). */
const LIST_KEYS = { resources: "uri", resourceTemplates: "uriTemplate", prompts: "name" } as const

const isList = (u: unknown, key: string): u is ReadonlyArray<Item> =>
  Array.isArray(u) && u.length <= MAX_KNOWN_ITEMS && u.every((item) => isObject(item) && typeof item[key] === "string")

/** The lists of a file, or undefined when any of them is not what `write` writes. */
const decodeLists = (u: unknown): Lists | undefined => {
  if (u === undefined) return {}
  if (!isObject(u)) return undefined
  const out: Record<string, ReadonlyArray<Item>> = {}
  for (const [list, key] of Object.entries(LIST_KEYS)) {
    const items = u[list]
    if (items === undefined) continue
    if (!isList(items, key)) return undefined
    out[list] = items
  }
  return out
}

/** The file's content, if it is what `write` writes for `key`; else why not. */
const decodeFile = (parsed: unknown, key: string): Known | string => {
  if (!isObject(parsed) || parsed.version !== 2) return "not a list of tools"
  if (parsed.key !== key) return "they are another launch's"
  const { tools, capabilities } = parsed
  if (!Array.isArray(tools) || tools.length > MAX_KNOWN_TOOLS || !tools.every(isTool)) return "not a list of tools"
  if (!Array.isArray(capabilities) || capabilities.length > 64 || !capabilities.every((c) => typeof c === "string")) {
    return "not a list of tools"
  }
  const lists = decodeLists(parsed.lists)
  if (lists === undefined) return "not a list of resources or prompts"
  return { tools, capabilities, lists }
}

const nameOf = (key: string) => `launch-${key}`
const fileOf = (stateDir: string, key: string) => path.join(stateDir, "known", `${nameOf(key)}.json`)

/** The backend's remembered lists, or undefined (none, or a file that cannot be trusted: said why). */
export const read = (stateDir: string, config: BackendConfig): Effect.Effect<Known | undefined> =>
  Effect.suspend(() => {
    const key = LaunchKey.keyOf(config)
    const file = fileOf(stateDir, key)
    // Not a regular file, a link, or too large: said once (naming the file), then as if none.
    const text = RegularFile.readStateText(file, MAX_KNOWN_BYTES)
    if (text === undefined) return Effect.succeed(undefined)
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      return Effect.as(Effect.logWarning("its remembered tools are ignored: not JSON"), undefined)
    }
    const decoded = decodeFile(parsed, key)
    if (typeof decoded === "string")
      return Effect.as(Effect.logWarning(`its remembered tools are ignored: ${decoded}`), undefined)
    return Effect.succeed(decoded)
  })

/** A list kept only when it fits (a longer one is not remembered: the backend then starts at once). */
const bounded = (lists: Lists): Lists | undefined => {
  for (const items of Object.values(lists)) if (Array.isArray(items) && items.length > MAX_KNOWN_ITEMS) return undefined
  return lists
}

/**
 * Remembers what the backend listed (written only when it changed, and `told` to a team's mirror;
 * a failure to write is said at debug: the backend then starts at the next `initialize`, as one
 * never seen).
 */
export const write = (
  stateDir: string,
  config: BackendConfig,
  known: {
    readonly tools: ReadonlyArray<Mcp.Tool>
    readonly capabilities: Readonly<Record<string, unknown>>
    readonly lists?: Lists
  },
  told: Told = nobody
): Effect.Effect<void> =>
  Effect.suspend(() => {
    const key = LaunchKey.keyOf(config)
    const file = fileOf(stateDir, key)
    const lists = bounded(known.lists ?? {})
    if (known.tools.length > MAX_KNOWN_TOOLS || lists === undefined) return Effect.void
    const capabilities = Object.keys(known.capabilities).slice(0, 64)
    const text = JSON.stringify({ version: 2, key, capabilities, tools: known.tools, lists })
    if (text.length > MAX_KNOWN_BYTES) return Effect.void
    try {
      const before = RegularFile.read(file, MAX_KNOWN_BYTES)
      if (before._tag === "Read" && before.bytes.toString("utf8") === text) return Effect.void
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
      const temporary = `${file}.${process.pid}.tmp`
      fs.writeFileSync(temporary, text, { mode: 0o600 })
      fs.renameSync(temporary, file)
      told("known", nameOf(key))
      return Effect.void
    } catch (error) {
      return Effect.logDebug(`could not remember its tools: ${String(error)}`)
    }
  })

/** The list methods a backend with these capabilities answers, with the field of their items. */
export const LISTED: ReadonlyArray<{ readonly capability: string; readonly method: string; readonly list: keyof Lists }> = [
  { capability: "resources", method: "resources/list", list: "resources" },
  { capability: "resources", method: "resources/templates/list", list: "resourceTemplates" },
  { capability: "prompts", method: "prompts/list", list: "prompts" }
]

/**
 * Whether a backend known so may wait for its first use: every list a client asks for at the
 * start is remembered (tools always; resources, templates and prompts where it offers them), and
 * it runs no tasks (a task outlives the request that made it; such a backend starts at once).
 */
export const mayWait = (known: Known): boolean =>
  !known.capabilities.includes("tasks") &&
  LISTED.every(({ capability, list }) => !known.capabilities.includes(capability) || known.lists?.[list] !== undefined)

/**
 * Whether a backend with these capabilities stays once started: a client may hold a resource
 * subscription or a prompt it was shown, or a task may be running, none of which a stop may lose.
 */
export const staysOnceStarted = (capabilities: ReadonlyArray<string>): boolean =>
  ["resources", "prompts", "tasks"].some((c) => capabilities.includes(c))
