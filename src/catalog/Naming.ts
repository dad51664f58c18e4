/**
 * Tool names as clients and the model see them: `<namespace>__<toolName>` (the namespace is the
 * backend id unless configured; `namespace: false` leaves the backend's own names), kept within
 * `^[a-zA-Z0-9_-]{1,64}$` and unique (an over-long name cut and given a short hash), and the
 * catalog of exposed tools (`[<backendId>] ` description prefix, inputSchema untouched), with each
 * backend's filters and overrides applied (see `Exposure`).
 */
import { isObject } from "../json/Json.js"
import * as Capabilities from "./Capabilities.js"
import type { BackendTools } from "../backend/Backends.js"
import type { Tool } from "../protocol/Mcp.js"
import type { Profile } from "../config/Config.js"
import { namespaced, overridden, profileAdmits, profileServes, SEPARATOR, toolAdmitted } from "./Exposure.js"

export { SEPARATOR } from "./Exposure.js"
export type { BackendTools } from "../backend/Backends.js"

/** MCP clients and the OpenAI API both reject tool names outside `^[a-zA-Z0-9_-]{1,64}$`. */
const NAME_MAX = 64
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

/** A namespaced name made a valid tool name: other characters `_`, an over-long one cut and hashed. */
const validName = (original: string): string => {
  const clean = sanitize(original)
  return clean.length <= NAME_MAX ? clean : withHash(clean, original)
}

/**
 * The name a backend tool is exposed under with the default namespace: `<backendId>__<toolName>`,
 * other characters replaced by `_`, an over-long name cut and suffixed with a hash of the full
 * name. Stable across runs. Two tools can still map to the same name; `buildCatalog` resolves that.
 */
export const exposedName = (backendId: string, toolName: string): string => validName(`${backendId}${SEPARATOR}${toolName}`)

/** A name in a backend's namespace made valid: what its prompts and (overridden) tools are called. */
export const exposedNameIn = (
  backend: { readonly id: string; readonly namespace?: string | false | undefined },
  name: string
): string => validName(namespaced(backend, name))

/**
 * Two backends' tools that would share one exposed name (by `namespace` or `toolOverrides`): the
 * first in configuration order keeps it, the second is not exposed, and this says so.
 */
export interface Conflict {
  readonly name: string
  readonly kept: { readonly backendId: string; readonly toolName: string }
  readonly dropped: { readonly backendId: string; readonly toolName: string }
}

/** What a user reads about a conflict (the log, `check`, a refused reload). */
export const describeConflict = (c: Conflict): string =>
  `the tool name '${c.name}' of backend '${c.dropped.backendId}' (its '${c.dropped.toolName}') is also ` +
  `backend '${c.kept.backendId}''s (its '${c.kept.toolName}'): '${c.dropped.backendId}''s is not exposed; ` +
  "give one backend a namespace or the tool a toolOverrides name"

export interface CatalogEntry {
  /** The exposed name (`tools/list`, LLM function name). */
  readonly name: string
  readonly backendId: string
  /** The backend's own name for the tool, what `tools/call` sends to the backend. */
  readonly toolName: string
  /** Its name before the namespace: its `toolOverrides` name, else its own. */
  readonly baseName: string
  /** The tool as the backend listed it (the same object until the backend lists it again). */
  readonly source: Tool
  /** The exposed MCP tool: `name` exposed, description prefixed, everything else as the backend sent it. */
  readonly tool: Tool
}

export interface Catalog {
  readonly entries: ReadonlyArray<CatalogEntry>
  readonly byName: ReadonlyMap<string, CatalogEntry>
  /** Tools not exposed because another backend's tool has their name. */
  readonly conflicts: ReadonlyArray<Conflict>
}

/** One backend's tools, as the backends service lists them (declared there). */

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

/**
 * The exposed tools of every backend: its filters, overrides and namespace applied. A name two
 * tools would share because the configuration chose it (a namespace, `namespace: false`, an
 * override's name) stays with the first and the other is a `Conflict`: a user asked for that name
 * and gets told, not a different one. Names the defaults made equal (`a.b` and `a_b` sanitised,
 * backends `a` and `a_` with tools `_z` and `z`, a backend listing a tool twice) get a hash suffix,
 * as they always have.
 */
export const buildCatalog = (backends: ReadonlyArray<BackendTools>): Catalog => {
  const conflicts: Array<Conflict> = []
  const owners = new Map<string, { backendId: string; toolName: string; chosen: boolean }>()
  const planned: Array<{
    backendId: string
    tool: Tool
    baseName: string
    original: string
    name: string
    description: string
    hints: unknown
  }> = []
  for (const backend of backends) {
    const { backendId, exposure } = backend
    const named = { id: backendId, namespace: exposure?.namespace }
    for (const tool of backend.tools) {
      if (!toolAdmitted(exposure, tool.name)) continue
      const shown = overridden(exposure, tool)
      const original = namespaced(named, shown.name)
      // Chosen by the configuration (a namespace, an override's name) rather than by default.
      const chosen = exposure?.namespace !== undefined || shown.name !== tool.name
      const owner = owners.get(original)
      if (owner !== undefined && (owner.chosen || chosen) && (owner.backendId !== backendId || owner.toolName !== tool.name)) {
        conflicts.push({
          name: validName(original),
          kept: { backendId: owner.backendId, toolName: owner.toolName },
          dropped: { backendId, toolName: tool.name }
        })
        continue
      }
      if (owner === undefined) owners.set(original, { backendId, toolName: tool.name, chosen })
      planned.push({
        backendId,
        tool,
        baseName: shown.name,
        original,
        name: validName(original),
        description: shown.description ?? "",
        hints: Capabilities.annotated(tool.name, isObject(tool.annotations) ? tool.annotations : undefined, exposure?.flow)
      })
    }
  }
  // A suffixed name must not take the plain name a later tool is entitled to either.
  const plainNames = new Set(planned.map((p) => p.name))
  const taken = new Set<string>()
  const entries = planned.map(({ backendId, name: plainName, tool, baseName, original, description, hints }): CatalogEntry => {
    let name = plainName
    if (taken.has(name)) {
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
      baseName,
      source: tool,
      // Always prefixed, even when the backend gave no description, so clients can rely on the shape;
      // listed with the hints the configuration declares for it (`flow.tools`).
      tool: withHints({ ...tool, name, description: `[${backendId}] ${description}` }, hints)
    }
  })
  const described = new Map(backends.map((b) => [b.backendId, b.description?.trim() ?? ""]))
  for (const entry of entries) {
    const description = described.get(entry.backendId)
    if (description) backendDescriptions.set(entry, description)
  }
  return { entries, byName: new Map(entries.map((entry) => [entry.name, entry])), conflicts }
}

/** Each entry's backend's configured `description`, when it has one (see `backendDescriptionOf`). */
const backendDescriptions = new WeakMap<CatalogEntry, string>()

/** What the configuration says its backend is about (its `description`), for ranking servers. */
export const backendDescriptionOf = (entry: CatalogEntry): string | undefined => backendDescriptions.get(entry)

/** A tool with these annotations (none: as it was). */
const withHints = (tool: Tool, annotations: unknown): Tool =>
  annotations === tool.annotations || annotations === undefined ? tool : { ...tool, annotations }

const views = new WeakMap<Catalog, WeakMap<Profile, Catalog>>()

/**
 * The catalog as a profile sees it: its backends' tools whose exposed names pass its globs, names
 * unchanged. Once per catalog and profile (a reload makes new ones of both).
 */
export const inProfile = (catalog: Catalog, profile: Profile | undefined): Catalog => {
  if (profile === undefined) return catalog
  let byProfile = views.get(catalog)
  if (byProfile === undefined) views.set(catalog, (byProfile = new WeakMap()))
  let view = byProfile.get(profile)
  if (view === undefined) {
    const entries = catalog.entries.filter((e) => profileAdmits(profile, e.backendId, e.name))
    view = {
      entries,
      byName: new Map(entries.map((e) => [e.name, e])),
      conflicts: catalog.conflicts.filter((c) => profileServes(profile, c.dropped.backendId))
    }
    byProfile.set(profile, view)
  }
  return view
}
