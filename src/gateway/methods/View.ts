/**
 * What one session of the aggregate may see and use: its profile as configured now, the tools the
 * policies leave it (listed, and offered to scripts), the profile as the gateway's model may use
 * it, whether the policies let it start the gateway's own work, and each backend's namespace.
 */
import { Context, Effect, Layer } from "effect"
import { Backends, type BackendsService } from "../../backend/Backends.js"
import { type Catalog, catalogOf, inProfile } from "../../catalog/ToolCatalog.js"
import { type GatewayConfig, inForce, namespaceOf, type Profile } from "../../config/Config.js"
import { Policies } from "../../policy/Policies.js"
import type { PolicyDenied } from "../../protocol/Errors.js"
import * as PolicyChecks from "../pipeline/PolicyChecks.js"
import { profileIn, type Session } from "../session/Session.js"

export interface View {
  readonly profile: () => Profile | undefined
  readonly catalog: () => Catalog
  readonly modelProfile: () => Profile | undefined
  readonly allowed: (action: "orchestrate" | "run_code", name: string, args: unknown) => Effect.Effect<void, PolicyDenied>
  readonly namespaceOfBackend: (backendId: string) => string
}

export const of = (
  ctx: {
    readonly backends: BackendsService
    readonly policies: PolicyChecks.Settings
    readonly profileOf: (session: Session) => Profile | undefined
  },
  session: Session
): View => {
  const { backends } = ctx
  const profile = () => ctx.profileOf(session)
  return {
    profile,
    // What the user may ever call of the profile's tools (listed, and offered to scripts).
    catalog: (): Catalog => PolicyChecks.admitted(ctx.policies, session, inProfile(catalogOf(backends.toolsSync()), profile())),
    // The profile as the gateway's model may use it: without the tools the user may never call.
    modelProfile: (): Profile | undefined => {
      const view = inProfile(catalogOf(backends.toolsSync()), profile())
      const denied = PolicyChecks.neverCallable(ctx.policies, session, view)
      if (denied.length === 0) return profile()
      return { ...profile(), denyTools: [...(profile()?.denyTools ?? []), ...denied] }
    },
    // Refused before it starts when the policies deny it (see PolicyChecks).
    allowed: (action, name, args) => PolicyChecks.allowed(ctx.policies, session, action, PolicyChecks.ownTool(name), args),
    // A backend's namespace in the exposed names (its id unless configured otherwise).
    namespaceOfBackend: (backendId) => {
      const config = backends.configOf(backendId)
      return config === undefined ? backendId : namespaceOf(config)
    }
  }
}

export interface ViewsService {
  /** What `session` may see and use, as configured now. */
  readonly of: (session: Session) => View
  /** The profile a session is served, as configured now (see session/Session `profileIn`). */
  readonly profileOf: (session: Session) => Profile | undefined
  /** The policies in force, asked before the gateway's own work, reads and listings. */
  readonly policies: PolicyChecks.Settings
}

/** What each session may see and use: the profiles as configured now, and the policies in force. */
export class Views extends Context.Service<Views, ViewsService>()("mcp-agentify/Views") {
  /** Built from the services it uses (its layer, or the gateway's methods layer: see Gateway). */
  static readonly make: Effect.Effect<Views["Service"], never, GatewayConfig | Policies | Backends> = Effect.gen(function* () {
    const current = yield* inForce
    const backends = yield* Backends
    const { current: policies } = yield* Policies
    const profileOf = (session: Session) => profileIn(current(), session)
    const settings: PolicyChecks.Settings = { policies, flowOf: (backendId) => backends.configOf(backendId)?.flow }
    return { of: (session) => of({ backends, policies: settings, profileOf }, session), profileOf, policies: settings }
  })
  static readonly layer: Layer.Layer<Views, never, GatewayConfig | Policies | Backends> = Layer.effect(Views, Views.make)
}
