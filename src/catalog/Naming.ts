/**
 * Tool names as clients and the model see them: `<backendId>__<toolName>` kept within
 * `^[a-zA-Z0-9_-]{1,64}$` and unique (an over-long name cut and given a short hash), and the catalog
 * of exposed tools (`[<backendId>] ` description prefix, inputSchema untouched).
 */
import type { BackendTools } from "../backend/Backends.js"
import type { Tool } from "../protocol/Mcp.js"

/** MCP clients and the OpenAI API both reject tool names outside `^[a-zA-Z0-9_-]{1,64}$`. */
const NAME_MAX = 64
export const SEPARATOR = "__"
/** `_` + 6 hex characters. */
const HASH_SUFFIX_LENGTH = 7

const fnv1a = (text: string): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}

const shortHash = (text: string): string => fnv1a(text).toString(16).padStart(8, "0").slice(0, 6)

// `u` so that one astral character (an emoji) becomes one `_`, not two.
const sanitize = (name: string): string => name.replace(/[^a-zA-Z0-9_-]/gu, "_")

// The hash is of the original (unsanitised) name, so two names that sanitise or cut alike still differ.
const withHash = (sanitized: string, hashInput: string): string =>
  `${sanitized.slice(0, NAME_MAX - HASH_SUFFIX_LENGTH)}_${shortHash(hashInput)}`

/**
 * The name a backend tool is exposed under: `<backendId>__<toolName>`, other characters replaced by
 * `_`, an over-long name cut and suffixed with a hash of the full name. Stable across runs.
 * Two tools can still map to the same name; `buildCatalog` resolves that.
 */
export const exposedName = (backendId: string, toolName: string): string => {
  const original = `${backendId}${SEPARATOR}${toolName}`
  const clean = sanitize(original)
  return clean.length <= NAME_MAX ? clean : withHash(clean, original)
}

export interface CatalogEntry {
  /** The exposed name (`tools/list`, LLM function name). */
  readonly name: string
  readonly backendId: string
  /** The backend's own name for the tool, what `tools/call` sends to the backend. */
  readonly toolName: string
  /** The exposed MCP tool: `name` exposed, description prefixed, everything else as the backend sent it. */
  readonly tool: Tool
}

export interface Catalog {
  readonly entries: ReadonlyArray<CatalogEntry>
  readonly byName: ReadonlyMap<string, CatalogEntry>
}

/** One backend's tools, as the backends service lists them (declared there). */
export type { BackendTools } from "../backend/Backends.js"

/**
 * Namespaces every backend's tools, backends in the given order and tools in theirs. When two tools
 * end up with the same exposed name, the first keeps it and the later one gets a hash suffix, so a
 * name never moves from one tool to another as long as the lists keep their order.
 */
const catalogs = new WeakMap<ReadonlyArray<BackendTools>, Catalog>()

/**
 * `buildCatalog`, once per tool list: `Backends` hands out the same array until a backend's tools
 * change, so the method table and the orchestrator share one catalog (and its ranking index).
 */
export const catalogOf = (backends: ReadonlyArray<BackendTools>): Catalog => {
  let catalog = catalogs.get(backends)
  if (catalog === undefined) catalogs.set(backends, (catalog = buildCatalog(backends)))
  return catalog
}

export const buildCatalog = (backends: ReadonlyArray<BackendTools>): Catalog => {
  const planned = backends.flatMap((backend) =>
    backend.tools.map((tool) => ({ backendId: backend.backendId, tool, name: exposedName(backend.backendId, tool.name) }))
  )
  // A suffixed name must not take the plain name a later tool is entitled to either.
  const plainNames = new Set(planned.map((p) => p.name))
  const taken = new Set<string>()
  const entries = planned.map(({ backendId, name: plainName, tool }): CatalogEntry => {
    let name = plainName
    if (taken.has(name)) {
      const original = `${backendId}${SEPARATOR}${tool.name}`
      const clean = sanitize(original)
      // Salted so that even an exact duplicate (a backend listing one name twice) gets a fresh name.
      for (let salt = 1; taken.has(name) || plainNames.has(name); salt++) {
        name = withHash(clean, `${original}#${salt}`)
      }
    }
    taken.add(name)
    return {
      name,
      backendId,
      toolName: tool.name,
      // Always prefixed, even when the backend gave no description, so clients can rely on the shape.
      tool: { ...tool, name, description: `[${backendId}] ${tool.description ?? ""}` }
    }
  })
  return { entries, byName: new Map(entries.map((entry) => [entry.name, entry])) }
}
