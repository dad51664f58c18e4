/**
 * What a backend exposes and under which names: its `allow*`/`deny*` globs over its own tool names,
 * resource URIs and prompt names (deny wins), its `toolOverrides`, its `namespace`; and what a
 * profile admits of the aggregate. Pure functions over the configuration, shared by the catalog,
 * the relay of resources and prompts, the backend's own endpoint and `check`.
 */
import { type Exposure, namespaceOf, type Profile } from "../config/Config.js"

/** The separator between a namespace and a name. */
export const SEPARATOR = "__"

const compiled = new Map<string, RegExp>()

/**
 * A glob as a RegExp: `**` any run, `*` any run without `/`, `?` one character but `/`, the rest
 * literal. Patterns come from the configuration, so a few hundred of them compile once.
 */
const globToRegExp = (pattern: string): RegExp => {
  let regexp = compiled.get(pattern)
  if (regexp === undefined) {
    let source = ""
    for (let i = 0; i < pattern.length; i++) {
      const c = pattern[i]!
      if (c === "*" && pattern[i + 1] === "*") {
        source += ".*"
        while (pattern[i + 1] === "*") i++
      } else if (c === "*") source += "[^/]*"
      else if (c === "?") source += "[^/]"
      else source += c.replace(/[\\^$.|+()[\]{}]/g, "\\$&")
    }
    regexp = new RegExp(`^${source}$`, "s")
    if (compiled.size > 10_000) compiled.clear()
    compiled.set(pattern, regexp)
  }
  return regexp
}

export const matchesGlob = (pattern: string, text: string): boolean => globToRegExp(pattern).test(text)

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
