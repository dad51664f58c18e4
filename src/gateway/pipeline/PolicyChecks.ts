/**
 * The policies (see policy/) asked about what a session does: a tool call, as a rule of the
 * `decide` stage (every call however made); the gateway's own work (an orchestration, a script),
 * a resource read and a prompt fetched, before they start; and a listing, which leaves out what
 * the user may never do. Who asks is the session's user (`User::"<subject>"`, "local" over stdio);
 * a denial names the policies that forbid it.
 */
import { Effect } from "effect"
import * as Capabilities from "../../catalog/Capabilities.js"
import { type Catalog, exposedNameIn } from "../../catalog/ToolCatalog.js"
import { field } from "../../json/Json.js"
import type * as Policy from "../../policy/Policy.js"
import { PolicyDenied } from "../../protocol/Errors.js"
import type { Session } from "../session/Session.js"
import { isRequest, type ToolCall, userOf } from "./Call.js"
import type { Rule } from "./Rule.js"

/** The session's user as policies see them. */
export const principalOf = (session: Session | undefined): Policy.Principal => {
  const name = field(session?.clientInfo, "name")
  return {
    id: userOf(session),
    scopes: session?.identity?.scopes ?? [],
    groups: session?.identity?.groups ?? [],
    profile: session?.target._tag === "Aggregate" ? (session.target.profile ?? "") : "",
    client: typeof name === "string" ? name : ""
  }
}

/** A listed tool as policies see it: its name as listed, its backend, its capabilities as the gateway takes them. */
export const toolOf = (
  name: string,
  backendId: string,
  own: string,
  annotations: unknown,
  flow: Capabilities.FlowSetting | undefined
): Policy.Resource => {
  const c = Capabilities.of(own, annotations, flow)
  return {
    type: "Tool",
    id: name,
    backend: backendId,
    tool: {
      readOnly: c.readOnly,
      destructive: c.destructive,
      openWorld: c.openWorld,
      idempotent: field(annotations, "idempotentHint") === true
    }
  }
}

/** The gateway's own tools (`agentify_orchestrate`, `agentify_run_code`), in the backend "agentify". */
export const ownTool = (name: string): Policy.Resource => ({
  type: "Tool",
  id: name,
  backend: "agentify",
  tool: { readOnly: false, destructive: true, openWorld: true, idempotent: false }
})

const flowOf = (call: ToolCall): Policy.FlowContext | undefined => {
  if (call.flow === undefined) return undefined
  const { plan, read, origins } = call.flow
  return {
    read: [...new Set(read.map((s) => s.backendId))],
    argumentsFrom: [...new Set(origins.map((o) => o.from.backendId))],
    planned: plan === undefined || plan.includes(call.name)
  }
}

export interface Settings {
  readonly policies: () => Policy.PolicySet | undefined
  /** A backend's `flow` setting as configured now (its tools' declared hints). */
  readonly flowOf: (backendId: string) => Capabilities.FlowSetting | undefined
}

/** What the policies are asked of a request other than a tool call: a read, a prompt; nothing else (listings, completion). */
const requestOf = (
  call: ToolCall,
  backendId: string,
  own: string,
  configOf: (backendId: string) => { readonly namespace?: string | false | undefined } | undefined
): { readonly action: Policy.Action; readonly resource: Policy.Resource } | undefined => {
  if (call.method === "resources/read") return { action: "read", resource: { type: "Resource", id: own, backend: backendId } }
  if (call.method !== "prompts/get") return undefined
  const id = exposedNameIn({ id: backendId, namespace: configOf(backendId)?.namespace }, own)
  return { action: "get", resource: { type: "Prompt", id, backend: backendId } }
}

/**
 * `decide`'s rule: a call the policies deny is refused, naming them. The model's read or prompt
 * (`routing: "backend"`) is judged as the client's own `resources/read` and `prompts/get` are.
 */
export const rule = (
  settings: Settings,
  configOf: (backendId: string) => { readonly namespace?: string | false | undefined } | undefined = () => undefined
): Rule => ({
  name: "policies",
  concerns: (call) => settings.policies() !== undefined && call.target !== undefined,
  refuses: (call) =>
    Effect.sync(() => {
      const policies = settings.policies()
      if (policies === undefined || call.target === undefined) return undefined
      const { backendId, own, entry } = call.target
      if (isRequest(call)) {
        const asked = requestOf(call, backendId, own, configOf)
        if (asked === undefined) return undefined
        const verdict = policies.decide({
          principal: principalOf(call.session),
          ...asked,
          arguments: asked.action === "get" ? call.params.arguments : {},
          via: "orchestration"
        })
        return verdict.allowed ? undefined : { why: verdict.why, data: { policies: verdict.policies } }
      }
      const verdict = policies.decide({
        principal: principalOf(call.session),
        action: "call",
        resource: toolOf(entry?.name ?? call.name, backendId, own, entry?.tool.annotations, settings.flowOf(backendId)),
        arguments: call.params.arguments,
        via: call.via,
        flow: flowOf(call)
      })
      return verdict.allowed ? undefined : { why: verdict.why, data: { policies: verdict.policies } }
    })
})

/**
 * Asks before the gateway's own work or a read: fails with the refusal (the policies named in
 * `data.policies`) when the policies deny it.
 */
export const allowed = (
  settings: Settings,
  session: Session,
  action: Policy.Action,
  resource: Policy.Resource,
  args: unknown,
  via: "client" | "orchestration" = "client"
): Effect.Effect<void, PolicyDenied> => {
  const policies = settings.policies()
  if (policies === undefined) return Effect.void
  const verdict = policies.decide({ principal: principalOf(session), action, resource, arguments: args, via })
  if (verdict.allowed) return Effect.void
  const what = resource.type === "Tool" ? resource.id : `${resource.type.toLowerCase()} ${resource.id}`
  return Effect.fail(
    new PolicyDenied({ message: `${action} of ${what} refused by policies: ${verdict.why}`, policies: verdict.policies })
  )
}

/** The catalog as this session's user may ever call it: the view itself without policies. */
export const admitted = (settings: Settings, session: Session, view: Catalog): Catalog => {
  const policies = settings.policies()
  if (policies === undefined) return view
  const principal = principalOf(session)
  const entries = view.entries.filter((e) =>
    policies.mayEver(principal, "call", toolOf(e.name, e.backendId, e.toolName, e.tool.annotations, settings.flowOf(e.backendId)))
  )
  if (entries.length === view.entries.length) return view
  return { entries, byName: new Map(entries.map((e) => [e.name, e])), conflicts: view.conflicts }
}

/** Whether this session's user may ever use one of the gateway's own tools (what `tools/list` shows). */
export const mayUseOwn = (settings: Settings, session: Session, action: "orchestrate" | "run_code", name: string): boolean =>
  settings.policies()?.mayEver(principalOf(session), action, ownTool(name)) ?? true

/** The names of the view's tools this session's user may never call (none without policies). */
export const neverCallable = (settings: Settings, session: Session, view: Catalog): ReadonlyArray<string> => {
  const admittedView = admitted(settings, session, view)
  if (admittedView === view) return []
  return view.entries.filter((e) => !admittedView.byName.has(e.name)).map((e) => e.name)
}

/**
 * What a resource or prompt listing shows this session's user: each item they may ever read or
 * get (by its backend and its URI or listed name); undefined without policies (everything).
 */
export const mayList = (
  settings: Settings,
  session: Session,
  type: "Resource" | "Prompt"
): ((backendId: string, id: string) => boolean) | undefined => {
  const policies = settings.policies()
  if (policies === undefined) return undefined
  const principal = principalOf(session)
  const action = type === "Resource" ? "read" : "get"
  return (backendId, id) => policies.mayEver(principal, action, { type, id, backend: backendId })
}
