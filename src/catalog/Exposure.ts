/**
 * What a backend exposes and under which names: its `allow*`/`deny*` globs over its own tool names,
 * resource URIs and prompt names (deny wins), its `toolOverrides`, its `namespace`; and what a
 * profile admits of the aggregate. Pure functions over the configuration, shared by the catalog,
 * the relay of resources and prompts, the backend's own endpoint and `check`.
 */
import { type Exposure, namespaceOf, type Profile } from "../config/Config.js"

/** The separator between a namespace and a name. */
export const SEPARATOR = "__"

/** A glob's parts: a character, `?` (one but `/`), `*` (a run without `/`) or `**` (any run). */
type Part = string | { readonly any: "one" | "segment" | "all" }

const compiled = new Map<string, ReadonlyArray<Part>>()

const partsOf = (pattern: string): ReadonlyArray<Part> => {
  let parts = compiled.get(pattern)
  if (parts === undefined) {
    const out: Array<Part> = []
    for (let i = 0; i < pattern.length; i++) {
      const c = pattern[i]!
      if (c === "*" && pattern[i + 1] === "*") {
        while (pattern[i + 1] === "*") i++
        out.push({ any: "all" })
      } else if (c === "*") out.push({ any: "segment" })
      else if (c === "?") out.push({ any: "one" })
      else out.push(c)
    }
    parts = out
    if (compiled.size > 10_000) compiled.clear()
    compiled.set(pattern, parts)
  }
  return parts
}

/**
 * Whether `text` matches the glob: `**` any run, `*` any run without `/`, `?` one character but
 * `/`, the rest literal. Every position of the pattern is followed at once through the text (a
 * set of states, not backtracking), so the time is at most the text's length times the
 * pattern's, whatever names a backend lists: a RegExp of several stars backtracks exponentially.
 */
export const matchesGlob = (pattern: string, text: string): boolean => {
  const parts = partsOf(pattern)
  const size = parts.length + 1
  let states = new Uint8Array(size)
  let next = new Uint8Array(size)
  // A star may match nothing: reaching it reaches what follows it too.
  const enter = (into: Uint8Array, at: number) => {
    for (let s = at; s < size && into[s] === 0; s++) {
      into[s] = 1
      const part = parts[s]
      if (part === undefined || typeof part === "string" || part.any === "one") break
    }
  }
  enter(states, 0)
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    next.fill(0)
    let alive = false
    for (let s = 0; s < parts.length; s++) {
      if (states[s] === 0) continue
      const part = parts[s]!
      const star = typeof part !== "string" && part.any !== "one"
      const takes = typeof part === "string" ? part === c : part.any === "all" || c !== "/"
      if (!takes) continue
      // A star takes this character and may take more, or stop here; anything else moves on.
      enter(next, star ? s : s + 1)
      alive = true
    }
    if (!alive) return false
    ;[states, next] = [next, states]
  }
  return states[parts.length] === 1
}

/** Allowed by the lists: in `allow` (when there is one) and in no `deny`. */
export const admits = (
  allow: ReadonlyArray<string> | undefined,
  deny: ReadonlyArray<string> | undefined,
  name: string
): boolean => (allow === undefined || allow.some((p) => matchesGlob(p, name))) && !(deny ?? []).some((p) => matchesGlob(p, name))

export const toolAdmitted = (exposure: Exposure | undefined, toolName: string): boolean =>
  exposure === undefined || admits(exposure.allowTools, exposure.denyTools, toolName)

export const resourceAdmitted = (exposure: Exposure | undefined, uri: string): boolean =>
  exposure === undefined || admits(exposure.allowResources, exposure.denyResources, uri)

export const promptAdmitted = (exposure: Exposure | undefined, name: string): boolean =>
  exposure === undefined || admits(exposure.allowPrompts, exposure.denyPrompts, name)

/** Whether a backend's exposure settings filter anything at all (the common case: no). */
export const filtersAnything = (exposure: Exposure | undefined): boolean =>
  exposure !== undefined &&
  (exposure.allowTools !== undefined ||
    exposure.denyTools !== undefined ||
    exposure.allowResources !== undefined ||
    exposure.denyResources !== undefined ||
    exposure.allowPrompts !== undefined ||
    exposure.denyPrompts !== undefined)

/**
 * A name in its namespace, before it is made a valid tool name: `<namespace>__<name>`, or the name
 * itself for `namespace: false`.
 */
export const namespaced = (backend: { readonly id: string; readonly namespace?: string | false | undefined }, name: string) => {
  const namespace = namespaceOf(backend)
  return namespace === "" ? name : `${namespace}${SEPARATOR}${name}`
}

/** A tool's name and description as exposed, before the namespace: its override's, else its own. */
export const overridden = (
  exposure: Exposure | undefined,
  tool: { readonly name: string; readonly description?: string | undefined }
): { readonly name: string; readonly description: string | undefined } => {
  const override = exposure?.toolOverrides?.[tool.name]
  return { name: override?.name ?? tool.name, description: override?.description ?? tool.description }
}

/**
 * The backend's own tool name for a name exposed without its namespace (an override's name goes
 * back to its original), or undefined when that name is overridden away or filtered.
 */
export const ownToolName = (exposure: Exposure | undefined, exposedBase: string): string | undefined => {
  const overrides = Object.entries(exposure?.toolOverrides ?? {})
  const renamed = overrides.find(([, o]) => o.name === exposedBase)
  const own =
    renamed !== undefined
      ? renamed[0]
      : overrides.some(([own, o]) => own === exposedBase && o.name !== undefined)
        ? undefined
        : exposedBase
  return own !== undefined && toolAdmitted(exposure, own) ? own : undefined
}

/** Whether a profile serves a backend at all. */
export const profileServes = (profile: Profile | undefined, backendId: string): boolean =>
  profile === undefined || profile.backends === undefined || profile.backends.includes(backendId)

/** Whether a profile admits a tool: its backend is in the profile, its exposed name passes the globs. */
export const profileAdmits = (profile: Profile | undefined, backendId: string, exposedName: string): boolean =>
  profile === undefined || (profileServes(profile, backendId) && admits(profile.allowTools, profile.denyTools, exposedName))
