/**
 * The aggregate's resources, prompts and completion: every backend's lists merged, and each
 * request routed to the backend that owns its URI or name. A backend waiting for its first use
 * (see backend/Known) offers what it listed when it last ran; a request routed to it starts it.
 *
 * Resources keep their URIs (a URI two backends offer goes to the first in configuration order,
 * logged once); prompts are named in the backend's namespace like tools (`<backendId>__<name>` by
 * default). A backend's `allowResources`/`denyResources` and `allowPrompts`/`denyPrompts` hide
 * what they exclude from lists and routes alike, and a profile sees only its backends. Each
 * backend's lists are read when first needed and kept until it says they changed (`invalidate`)
 * or it restarts.
 */
import * as Caller from "../pipeline/Caller.js"
import { CurrentCaller } from "../pipeline/Caller.js"
import { Forwarder } from "../pipeline/Forwarding.js"
import { Context, Effect, Layer } from "effect"
import { Backends, type BackendsService } from "../../backend/Backends.js"
import { type BackendError, InvalidParams } from "../../protocol/Errors.js"
import { exposedNameIn, profileServes, promptAdmitted, resourceAdmitted } from "../../catalog/ToolCatalog.js"
import type { Profile } from "../../config/Config.js"
import { readAll } from "../../backend/Listing.js"
import type * as Params from "./Params.js"

type Item = Readonly<Record<string, unknown>>

interface Lists {
  /** The backend client these lists came from: a restarted backend is read again. */
  readonly instance: unknown
  resources?: ReadonlyArray<Item> | undefined
  templates?: ReadonlyArray<Item> | undefined
  prompts?: ReadonlyArray<Item> | undefined
}

/**
 * Whether `uri` fits `template` (RFC 6570 level 1, `{var}`, as MCP resource templates use it): each
 * variable stands for a non-empty run without `/`, up to the next literal part. A scan, not a regex:
 * with adjacent or repeated variables a regex backtracks exponentially on a URI that does not fit,
 * and templates come from backends and URIs from clients.
 */
export const templateMatches = (template: string, uri: string): boolean => {
  // Adjacent variables match as one run.
  const parts = template.split(/(\{[^{}]*\})/).filter((part) => part !== "")
  let position = 0
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!
    if (!(part.startsWith("{") && part.endsWith("}"))) {
      if (!uri.startsWith(part, position)) return false
      position += part.length
      continue
    }
    while (i + 1 < parts.length && parts[i + 1]!.startsWith("{") && parts[i + 1]!.endsWith("}")) i++
    const literal = parts[i + 1]
    const end = literal === undefined ? uri.length : uri.indexOf(literal, position + 1)
    if (end < 0 || end === position) return false
    const slash = uri.indexOf("/", position)
    if (slash >= 0 && slash < end) return false
    position = end
  }
  return position === uri.length
}

/** A list a backend failed to give. */
const NOTHING: ReadonlyArray<Item> = []

/** Where each kind of list is read, and under which key its items are. */
const LISTED = {
  resources: { method: "resources/list", key: "resources" },
  templates: { method: "resources/templates/list", key: "resourceTemplates" },
  prompts: { method: "prompts/list", key: "prompts" }
} as const

/** A request naming something no backend offers. */
const unknown = (what: string, value: string) =>
  new InvalidParams({
    message: `Invalid params: no backend offers ${what} '${value}'`,
    issues: [`${what}: no backend offers '${value}'`]
  })

/** Prompts of every backend listing them (see `listing`), named in its namespace, with where each one goes. */
const promptsOf = (
  backends: BackendsService,
  listing: (capability: string, profile?: Profile) => Effect.Effect<ReadonlyArray<string>>,
  listOf: (backendId: string, kind: "prompts") => Effect.Effect<ReadonlyArray<Item>>,
  profile: Profile | undefined
) =>
  Effect.gen(function* () {
    const routes = new Map<string, { backendId: string; name: string }>()
    const out: Array<Item> = []
    for (const backendId of yield* listing("prompts", profile)) {
      const config = backends.configOf(backendId)
      for (const prompt of yield* listOf(backendId, "prompts")) {
        if (typeof prompt.name !== "string" || !promptAdmitted(config, prompt.name)) continue
        const name = exposedNameIn({ id: backendId, namespace: config?.namespace }, prompt.name)
        if (routes.has(name)) continue
        routes.set(name, { backendId, name: prompt.name })
        const description = typeof prompt.description === "string" ? `[${backendId}] ${prompt.description}` : `[${backendId}]`
        out.push({ ...prompt, name, description })
      }
    }
    return { items: out, routes }
  })

/** A request on a backend as the gateway's own (the lists it caches are every session's). */
export type Request = (backendId: string, method: string, params: unknown) => Effect.Effect<unknown, BackendError>

/** Which backends offer a capability, as the lists and the notices see them. */
const offeringOf = (backends: BackendsService) => {
  /** Whether it offers `capability`: a running backend says so; one waiting for its first use was remembered so. */
  const capable = (backendId: string, capability: string): boolean => {
    const running = backends.backend(backendId)
    if (running !== undefined) return typeof running.serverCapabilities[capability] === "object"
    return backends.known(backendId)?.capabilities.includes(capability) === true
  }
  const offering = (capability: string, profile: Profile | undefined, states: ReadonlyArray<string>) =>
    Effect.map(backends.states, (all) =>
      all.filter((s) => states.includes(s.state) && capable(s.id, capability) && profileServes(profile, s.id)).map((s) => s.id)
    )
  return {
    /** The ready backends offering `capability` (the ones a notice such as `logging/setLevel` goes to: it starts none). */
    readyWith: (capability: string, profile?: Profile): Effect.Effect<ReadonlyArray<string>> =>
      offering(capability, profile, ["ready"]),
    /** The backends whose lists of `capability` a client sees: the ready ones, and those waiting for their first use. */
    listing: (capability: string, profile?: Profile): Effect.Effect<ReadonlyArray<string>> =>
      offering(capability, profile, ["ready", "idle"])
  }
}

export const make = (backends: BackendsService, request: Request) => {
  const lists = new Map<string, Lists>()
  const warned = new Set<string>()

  const entry = (backendId: string): Lists => {
    const instance = backends.backend(backendId)
    let found = lists.get(backendId)
    if (found === undefined || found.instance !== instance) lists.set(backendId, (found = { instance }))
    return found
  }

  /**
   * One backend's list, cached; a backend that fails to list offers nothing this time. One waiting
   * for its first use offers what it listed when it last ran (it is not started to be listed).
   */
  const listOf = (backendId: string, kind: "resources" | "templates" | "prompts"): Effect.Effect<ReadonlyArray<Item>> =>
    Effect.suspend(() => {
      if (backends.backend(backendId) === undefined) {
        const known = backends.known(backendId)?.lists?.[LISTED[kind].key]
        if (known !== undefined) return Effect.succeed(known)
      }
      const cached = entry(backendId)[kind]
      if (cached !== undefined) return Effect.succeed(cached)
      const { method, key } = LISTED[kind]
      return readAll(request, backendId, method, key).pipe(
        Effect.tap((items) => Effect.sync(() => (entry(backendId)[kind] = items))),
        Effect.catch((error) =>
          Effect.as(Effect.logWarning(`cannot list ${kind} of backend ${backendId}: ${error.summary}`), NOTHING)
        )
      )
    })

  const { readyWith, listing } = offeringOf(backends)

  /** Whether the backend's filters let this URI through. */
  const uriAdmitted = (backendId: string, uri: string) => resourceAdmitted(backends.configOf(backendId), uri)

  /** Resources (or templates) of every backend listing them (see `listing`), URIs unchanged, the first owner winning. */
  const merged = (kind: "resources" | "templates", profile: Profile | undefined) =>
    Effect.gen(function* () {
      const owners = new Map<string, string>()
      const out: Array<Item> = []
      const uriKey = kind === "resources" ? "uri" : "uriTemplate"
      for (const backendId of yield* listing("resources", profile)) {
        for (const item of yield* listOf(backendId, kind)) {
          const uri = item[uriKey]
          if (typeof uri !== "string" || !uriAdmitted(backendId, uri)) continue
          const owner = owners.get(uri)
          if (owner !== undefined) {
            const note = `${kind}:${uri}:${backendId}`
            if (!warned.has(note)) {
              warned.add(note)
              yield* Effect.logWarning(`${backendId} also offers ${uri}; it stays ${owner}'s (configuration order)`)
            }
            continue
          }
          owners.set(uri, backendId)
          out.push(item)
        }
      }
      return { items: out, owners }
    })

  /** The backend a resource URI belongs to: an exact URI first, then a template that matches it. */
  const ownerOfUri = (uri: string, profile: Profile | undefined) =>
    Effect.gen(function* () {
      const exact = (yield* merged("resources", profile)).owners.get(uri)
      if (exact !== undefined) return exact
      for (const [template, backendId] of (yield* merged("templates", profile)).owners) {
        if (templateMatches(template, uri) && uriAdmitted(backendId, uri)) return backendId
      }
      // A backend may serve URIs it does not list: with one resource server, it is the one.
      const servers = yield* listing("resources", profile)
      return servers.length === 1 && uriAdmitted(servers[0]!, uri) ? servers[0] : undefined
    })

  const prompts = (profile: Profile | undefined) => promptsOf(backends, listing, listOf, profile)

  return {
    /** `admits`: whether a listed resource is shown (the policies' say), by its backend and URI. */
    listResources: (profile: Profile | undefined, admits?: (backendId: string, uri: string) => boolean) =>
      Effect.map(merged("resources", profile), ({ items, owners }) => ({
        resources:
          admits === undefined ? items : items.filter(({ uri }) => typeof uri === "string" && admits(owners.get(uri) ?? "", uri))
      })),
    listResourceTemplates: (profile: Profile | undefined) =>
      Effect.map(merged("templates", profile), ({ items }) => ({ resourceTemplates: items })),
    /** `admits`: whether a listed prompt is shown (the policies' say), by its backend and name as listed. */
    listPrompts: (profile: Profile | undefined, admits?: (backendId: string, name: string) => boolean) =>
      Effect.map(prompts(profile), ({ items, routes }) => ({
        prompts:
          admits === undefined
            ? items
            : items.filter(({ name }) => typeof name === "string" && admits(routes.get(name)?.backendId ?? "", name))
      })),

    /** Where a request about a resource URI (`resources/read`, subscribe) goes. */
    routeUri: (params: Params.UriParams, profile: Profile | undefined) =>
      Effect.gen(function* () {
        const backendId = yield* ownerOfUri(params.uri, profile)
        if (backendId === undefined) return yield* unknown("the resource", params.uri)
        return { backendId, params }
      }),

    /** Where `prompts/get` goes, with the backend's own prompt name. */
    routePrompt: (params: Params.GetPromptParams, profile: Profile | undefined) =>
      Effect.gen(function* () {
        const route = (yield* prompts(profile)).routes.get(params.name)
        if (route === undefined) return yield* unknown("the prompt", params.name)
        return { backendId: route.backendId, params: { ...params, name: route.name } }
      }),

    /** Where `completion/complete` goes: by its `ref`, a prompt name or a resource (template) URI. */
    routeCompletion: (params: Params.CompleteParams, profile: Profile | undefined) =>
      Effect.gen(function* () {
        const { ref } = params
        if (ref.type === "ref/prompt") {
          const route = (yield* prompts(profile)).routes.get(ref.name)
          if (route === undefined) return yield* unknown("the prompt", ref.name)
          return { backendId: route.backendId, params: { ...params, ref: { ...ref, name: route.name } } }
        }
        const backendId = (yield* merged("templates", profile)).owners.get(ref.uri) ?? (yield* ownerOfUri(ref.uri, profile))
        if (backendId === undefined) return yield* unknown("the resource", ref.uri)
        return { backendId, params }
      }),

    /** Backends with the logging capability, for `logging/setLevel`. */
    loggingBackends: (profile: Profile | undefined) => readyWith("logging", profile),

    /** A backend said its resources or prompts changed: read them again when next needed. */
    invalidate: (backendId: string, kind: "resources" | "prompts") => {
      const found = lists.get(backendId)
      if (found === undefined) return
      if (kind === "resources") {
        found.resources = undefined
        found.templates = undefined
      } else found.prompts = undefined
    }
  }
}

export type Relay = ReturnType<typeof make>

/** The backends' lists, merged and cached for every session (read as the gateway's own requests). */
export class RelayLists extends Context.Service<RelayLists, Relay>()("mcp-agentify/RelayLists") {
  /** Built from the services it uses (its layer, or the gateway's methods layer: see Gateway). */
  static readonly make: Effect.Effect<RelayLists["Service"], never, Backends | Forwarder> = Effect.map(
    Effect.all([Backends, Forwarder]),
    ([backends, forwarder]) =>
      make(backends, (backendId, method, params) =>
        Caller.as(CurrentCaller.gateway)(forwarder.forward(undefined, backendId, method, params))
      )
  )
  static readonly layer: Layer.Layer<RelayLists, never, Backends | Forwarder> = Layer.effect(RelayLists, RelayLists.make)
}
