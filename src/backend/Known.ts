/**
 * Backends' tools known from an earlier run: the list a backend gave when it last started, kept in
 * the state directory beside its pins (`known/launch-<key>.json`, keyed by what launches it, see
 * LaunchKey), so that a backend whose tools are known need not start before its first use.
 *
 * What is read is data, never trusted: a file too large, malformed or of another launch is ignored
 * (said once at warn), and a backend started lists its tools again, which replace these (and are
 * held against their pins as any listing is).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import type { BackendConfig } from "../config/Config.js"
import type * as Mcp from "../protocol/Mcp.js"
import { isObject } from "../values/Json.js"
import * as LaunchKey from "./LaunchKey.js"

/** The largest file read: a list beyond it is ignored (the backend then starts to be known). */
export const MAX_KNOWN_BYTES = 4 * 1024 * 1024
/** The most tools a remembered list may hold. */
export const MAX_KNOWN_TOOLS = 2_000

/** What is remembered of a backend: its tools as listed and which capabilities it offered. */
export interface Known {
  readonly tools: ReadonlyArray<Mcp.Tool>
  readonly capabilities: ReadonlyArray<string>
}

/** A tool as listed: a name, an object inputSchema, a description if any (checked by hand: this runs for every backend at start). */
const isTool = (u: unknown): u is Mcp.Tool =>
  isObject(u) &&
  typeof u.name === "string" &&
  isObject(u.inputSchema) &&
  (u.description === undefined || typeof u.description === "string")

/** The file's content, if it is what `write` writes for `key`; else why not. */
const decodeFile = (parsed: unknown, key: string): Known | string => {
  if (!isObject(parsed) || parsed.version !== 1) return "not a list of tools"
  if (parsed.key !== key) return "they are another launch's"
  const { tools, capabilities } = parsed
  if (!Array.isArray(tools) || tools.length > MAX_KNOWN_TOOLS || !tools.every(isTool)) return "not a list of tools"
  if (!Array.isArray(capabilities) || capabilities.length > 64 || !capabilities.every((c) => typeof c === "string")) {
    return "not a list of tools"
  }
  return { tools, capabilities }
}

const fileOf = (stateDir: string, key: string) => path.join(stateDir, "known", `launch-${key}.json`)

/** The backend's remembered tools, or undefined (none, or a file that cannot be trusted: said why). */
export const read = (stateDir: string, config: BackendConfig): Effect.Effect<Known | undefined> =>
  Effect.suspend(() => {
    const key = LaunchKey.keyOf(config)
    const file = fileOf(stateDir, key)
    let text: string
    try {
      const size = fs.statSync(file).size
      if (size > MAX_KNOWN_BYTES) {
        return Effect.as(
          Effect.logWarning(`its remembered tools are ignored: ${size} bytes (at most ${MAX_KNOWN_BYTES})`),
          undefined
        )
      }
      text = fs.readFileSync(file, "utf8")
    } catch {
      return Effect.succeed(undefined)
    }
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

/**
 * Remembers the backend's tools as it listed them (written only when they changed; a failure to
 * write is said at debug: the backend then starts at the next `initialize`, as one never seen).
 */
export const write = (
  stateDir: string,
  config: BackendConfig,
  tools: ReadonlyArray<Mcp.Tool>,
  capabilities: Readonly<Record<string, unknown>>
): Effect.Effect<void> =>
  Effect.suspend(() => {
    const key = LaunchKey.keyOf(config)
    const file = fileOf(stateDir, key)
    const text = JSON.stringify({ version: 1, key, capabilities: Object.keys(capabilities).slice(0, 64), tools })
    if (text.length > MAX_KNOWN_BYTES || tools.length > MAX_KNOWN_TOOLS) return Effect.void
    try {
      if (fs.existsSync(file) && fs.readFileSync(file, "utf8") === text) return Effect.void
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
      const temporary = `${file}.${process.pid}.tmp`
      fs.writeFileSync(temporary, text, { mode: 0o600 })
      fs.renameSync(temporary, file)
      return Effect.void
    } catch (error) {
      return Effect.logDebug(`could not remember its tools: ${String(error)}`)
    }
  })

/**
 * Whether a backend with these capabilities may wait for its first use: one offering resources or
 * prompts starts at once (their lists are not remembered, and a client lists them at the start).
 */
export const mayWait = (known: Known): boolean =>
  !known.capabilities.includes("resources") && !known.capabilities.includes("prompts") && !known.capabilities.includes("tasks")
