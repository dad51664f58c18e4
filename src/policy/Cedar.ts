/**
 * Policies in Cedar, answered by the official engine (`@cedar-policy/cedar-wasm`, Node build): a
 * file's policies parsed once (each named by its `@id`), then every request asked of them. The
 * engine is loaded only when a policy file is configured (it costs tens of milliseconds).
 *
 * Most policies say who may use which tool whatever the arguments. So each (principal, action,
 * resource) is first asked once with the context unknown (Cedar's partial evaluation): when the
 * answer does not depend on the context it is kept, and the calls after cost a lookup; only the
 * rest (a policy that reads the arguments, how the call was made or where its data came from) go to
 * the engine each time. The same answer says what a listing leaves out: a tool denied in every
 * context.
 *
 * Values are given to Cedar as it can hold them: whole numbers only (others are left out), arrays
 * as sets, objects as records; an object key Cedar's JSON would read as an entity or extension
 * (`__entity`, `__extn`, `__expr`) is left out, so an argument cannot pose as an entity.
 */
import { createRequire } from "node:module"
import type * as CedarWasm from "@cedar-policy/cedar-wasm/nodejs"
import type { Action, FlowContext, PolicySet, Principal, Request, Resource, Verdict } from "./Policy.js"

type Engine = typeof CedarWasm
type CedarValue = CedarWasm.CedarValueJson

let engine: Engine | undefined
const cedar = (): Engine => (engine ??= createRequire(import.meta.url)("@cedar-policy/cedar-wasm/nodejs") as Engine)

/** Cedar's own version, for `check` and the logs. */
export const version = (): string => cedar().getCedarVersion()

/** Keys a record may not carry into Cedar: its JSON format reads them as escapes. */
const ESCAPES = new Set(["__entity", "__extn", "__expr"])
const MAX_DEPTH = 32

/** A JSON value as Cedar can hold it; undefined: nothing Cedar can hold. */
export const toCedar = (value: unknown, depth = 0): CedarValue | undefined => {
  if (typeof value === "string" || typeof value === "boolean") return value
  if (typeof value === "number") return Number.isSafeInteger(value) ? value : undefined
  if (depth >= MAX_DEPTH || typeof value !== "object" || value === null) return undefined
  if (Array.isArray(value)) {
    const items: Array<CedarValue> = []
    for (const item of value) {
      const converted = toCedar(item, depth + 1)
      if (converted !== undefined) items.push(converted)
    }
    return items
  }
  const record: Record<string, CedarValue> = {}
  for (const [key, item] of Object.entries(value)) {
    if (ESCAPES.has(key)) continue
    const converted = toCedar(item, depth + 1)
    if (converted !== undefined) record[key] = converted
  }
  return record
}

const uid = (type: string, id: string) => ({ type, id })

const principalEntity = (p: Principal): CedarWasm.EntityJson => ({
  uid: uid("User", p.id),
  attrs: { scopes: [...p.scopes], groups: [...p.groups], profile: p.profile, client: p.client },
  parents: p.groups.map((g) => uid("Group", g))
})

const resourceEntity = (r: Resource): CedarWasm.EntityJson => ({
  uid: uid(r.type, r.id),
  // Its id as a string too (`resource.name like "fs__*"`): Cedar gives no way to read an entity's id.
  attrs: { name: r.id, backend: r.backend, ...(r.tool === undefined ? {} : { ...r.tool }) },
  parents: [uid("Backend", r.backend)]
})

const NO_FLOW: FlowContext = { read: [], argumentsFrom: [], planned: true }

/** The parts of the context policies read: handing Cedar less is most of a decision's cost. */
interface Needs {
  readonly via: boolean
  readonly flow: boolean
  /** Every argument, these arguments, or none. */
  readonly arguments: "all" | ReadonlySet<string> | undefined
}
const EVERYTHING: Needs = { via: true, flow: true, arguments: "all" }

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)
/** `context.<name>` in a policy's JSON: its name; else undefined. */
const contextAttr = (node: unknown): string | undefined => {
  const access = isObject(node) ? node["."] : undefined
  return isObject(access) && isObject(access.left) && access.left.Var === "context" && typeof access.attr === "string"
    ? access.attr
    : undefined
}

/** What of the context these policies (JSON) read, down to the names of the arguments. */
const needsOf = (json: unknown): Needs => {
  let via = false
  let flow = false
  let args: "all" | Set<string> | undefined
  let all = false
  const visit = (node: unknown): void => {
    if (all) return
    if (Array.isArray(node)) return node.forEach(visit)
    if (!isObject(node)) return
    // context.arguments.<name>, context.arguments has <name>: that argument.
    const access = isObject(node["."]) ? node["."] : isObject(node.has) ? node.has : undefined
    if (access !== undefined && contextAttr(access.left) === "arguments" && typeof access.attr === "string") {
      if (args === undefined) args = new Set()
      if (args !== "all") args.add(access.attr)
      return
    }
    // context has <name>: whether it is there.
    if (access !== undefined && isObject(access.left) && access.left.Var === "context") {
      if (access.attr === "via") via = true
      else if (access.attr === "flow") flow = true
      else if (access.attr === "arguments") args ??= new Set()
      else all = true
      return
    }
    if (node.Var === "context") {
      all = true
      return
    }
    Object.values(node).forEach(visit)
  }
  visit(json)
  return all ? EVERYTHING : { via, flow, arguments: args }
}

const contextOf = (request: Request, needs: Needs): Record<string, CedarValue> => {
  const context: Record<string, CedarValue> = {}
  if (needs.arguments !== undefined) {
    const given = isObject(request.arguments) ? request.arguments : {}
    if (needs.arguments === "all") context.arguments = toCedar(given) ?? {}
    else {
      const picked: Record<string, CedarValue> = {}
      for (const name of needs.arguments) {
        const value = Object.hasOwn(given, name) ? toCedar(given[name], 1) : undefined
        if (value !== undefined && !ESCAPES.has(name)) picked[name] = value
      }
      context.arguments = picked
    }
  }
  if (needs.via) context.via = request.via
  if (needs.flow) {
    const flow = request.flow ?? NO_FLOW
    context.flow = { read: [...flow.read], argumentsFrom: [...flow.argumentsFrom], planned: flow.planned }
  }
  return context
}

const unknownContext = {
  arguments: { __extn: { fn: "unknown", arg: "arguments" } },
  via: { __extn: { fn: "unknown", arg: "via" } },
  flow: { __extn: { fn: "unknown", arg: "flow" } }
} as Record<string, CedarValue>

const errorsOf = (errors: ReadonlyArray<CedarWasm.DetailedError>): Array<string> =>
  errors.map((e) => (e.help === null || e.help === undefined ? e.message : `${e.message} (${e.help})`))

/** The policies of a file's text, each by its `@id` (else `policy<N>`), or what is wrong with them. */
export const partsOf = (text: string): { policies: Record<string, string> } | { problems: Array<string> } => {
  const split = cedar().policySetTextToParts(text)
  if (split.type === "failure") return { problems: errorsOf(split.errors) }
  if (split.policy_templates.length > 0) {
    return { problems: ["templates are not supported: write each policy for its principal and resource"] }
  }
  const policies: Record<string, string> = {}
  const problems: Array<string> = []
  split.policies.forEach((policy, index) => {
    const json = cedar().policyToJson(policy)
    const id = json.type === "success" ? (json.json.annotations?.id ?? `policy${index}`) : `policy${index}`
    if (Object.hasOwn(policies, id)) problems.push(`two policies have the @id "${id}"`)
    policies[id] = policy
  })
  return problems.length > 0 ? { problems } : { policies }
}

/** Answers kept per (principal, action, resource) that do not depend on the context. */
type Known =
  | { readonly _tag: "Decided"; readonly verdict: Verdict }
  /** What is left of the policies once the principal and the resource are known: read the context only. */
  | {
      readonly _tag: "Depends"
      /** The engine's id of the policies to ask: the residuals, else the whole set (which needs the entities). */
      readonly policies: string
      readonly residual: boolean
      readonly needs: Needs
    }
const MAX_KNOWN = 10_000
let sets = 0

const denied = (reasons: ReadonlyArray<string>, request: { action: Action; resource: Resource }): Verdict =>
  reasons.length > 0
    ? {
        allowed: false,
        policies: reasons,
        why: `forbidden by policy ${reasons.map((r) => `"${r}"`).join(", ")}`
      }
    : {
        allowed: false,
        policies: [],
        why: `no policy permits ${request.action} on ${request.resource.type}::"${request.resource.id}"`
      }

/** A policy file's text made ready to answer, or what is wrong with it (every problem). */
export const load = (file: string, text: string): PolicySet | { readonly problems: ReadonlyArray<string> } => {
  const parts = partsOf(text)
  if ("problems" in parts) return parts
  const policySet = { staticPolicies: parts.policies }
  const id = `agentify-${++sets}`
  const parsed = cedar().preparsePolicySet(id, policySet)
  if (parsed.type === "failure") return { problems: errorsOf(parsed.errors) }

  const known = new Map<string, Known>()
  /**
   * The residual policies of a (principal, action, resource), parsed once under an id of their own
   * (ids are reused after the map is cleared, so the engine's store stays bounded); the whole set
   * when the engine gave none.
   */
  const dependsOn = (answer: CedarWasm.PartialAuthorizationAnswer): Known => {
    const whole: Known = { _tag: "Depends", policies: id, residual: false, needs: EVERYTHING }
    if (answer.type !== "residuals") return whole
    const residualId = `${id}-${known.size}`
    // Only the policies still in play: those that hold whatever the context, and those that depend on it.
    const { residuals: all, satisfied, nontrivialResiduals } = answer.response
    const inPlay = new Set([...satisfied, ...nontrivialResiduals])
    const residuals = withContext(Object.fromEntries(Object.entries(all).filter(([policy]) => inPlay.has(policy))))
    const parsed = cedar().preparsePolicySet(residualId, {
      staticPolicies: residuals as Record<string, CedarWasm.PolicyJson>
    })
    return parsed.type === "success"
      ? { _tag: "Depends", policies: residualId, residual: true, needs: needsOf(residuals) }
      : whole
  }
  const keyOf = (p: Principal, action: Action, r: Resource) =>
    JSON.stringify([p.id, p.scopes, p.groups, p.profile, p.client, action, r.type, r.id, r.backend, r.tool])

  /** The answer for every context, when there is one. */
  const knownFor = (p: Principal, action: Action, r: Resource): Known => {
    const key = keyOf(p, action, r)
    let found = known.get(key)
    if (found !== undefined) return found
    const answer = cedar().isAuthorizedPartial({
      principal: uid("User", p.id),
      action: uid("Action", action),
      resource: uid(r.type, r.id),
      context: unknownContext,
      policies: policySet,
      entities: [principalEntity(p), resourceEntity(r)]
    })
    found =
      answer.type === "residuals" && answer.response.decision !== null
        ? {
            _tag: "Decided",
            verdict:
              answer.response.decision === "allow"
                ? { allowed: true }
                : denied(
                    answer.response.satisfied.filter((id) => answer.response.residuals[id]?.effect === "forbid"),
                    { action, resource: r }
                  )
          }
        : dependsOn(answer)
    if (known.size >= MAX_KNOWN) known.clear()
    known.set(key, found)
    return found
  }

  const decide = (request: Request): Verdict => {
    const found = knownFor(request.principal, request.action, request.resource)
    if (found._tag === "Decided") return found.verdict
    // The residual policies hold the principal's and the resource's facts as values and read only
    // the context: no entity is needed (what makes a decision cheap).
    const answer = cedar().statefulIsAuthorized({
      principal: uid("User", request.principal.id),
      action: uid("Action", request.action),
      resource: uid(request.resource.type, request.resource.id),
      context: contextOf(request, found.needs),
      preparsedPolicySetId: found.policies,
      entities: found.residual ? [] : [principalEntity(request.principal), resourceEntity(request.resource)]
    })
    // The engine could not answer: refused, saying why (a policy file is a rule, not a hint).
    if (answer.type === "failure") {
      return { allowed: false, policies: [], why: `the policy engine could not decide: ${errorsOf(answer.errors).join("; ")}` }
    }
    if (answer.response.decision === "allow") return { allowed: true }
    // Deny with reasons: the forbids that held; without: no permit held.
    return denied(answer.response.diagnostics.reason, request)
  }

  return {
    file,
    ids: Object.keys(parts.policies),
    decide,
    mayEver: (principal, action, resource) => {
      const found = knownFor(principal, action, resource)
      return found._tag === "Depends" || found.verdict.allowed
    }
  }
}

/**
 * A residual with its unknowns read from the context again: `unknown("arguments")` (how partial
 * evaluation leaves what it did not know) becomes `context.arguments`.
 */
const withContext = (json: unknown): unknown => {
  if (Array.isArray(json)) return json.map(withContext)
  if (typeof json !== "object" || json === null) return json
  const unknown = (json as { unknown?: unknown }).unknown
  if (Array.isArray(unknown) && unknown.length === 1 && Object.keys(json).length === 1) {
    const name = (unknown[0] as { Value?: unknown }).Value
    if (typeof name === "string") return { ".": { left: { Var: "context" }, attr: name } }
  }
  return Object.fromEntries(Object.entries(json).map(([key, value]) => [key, withContext(value)]))
}

/** Problems found by validating `text` against `schema` (strict mode); none: valid. */
export const validate = (text: string, schema: string): Array<string> => {
  const parts = partsOf(text)
  if ("problems" in parts) return parts.problems
  const answer = cedar().validate({
    validationSettings: { mode: "strict" },
    schema,
    policies: { staticPolicies: parts.policies }
  })
  if (answer.type === "failure") return errorsOf(answer.errors)
  return [
    ...answer.validationErrors.map((e) => `policy "${e.policyId}": ${errorsOf([e.error]).join("")}`),
    ...answer.validationWarnings.map((e) => `policy "${e.policyId}" (warning): ${errorsOf([e.error]).join("")}`)
  ]
}
