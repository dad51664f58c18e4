/**
 * Which sessions to tell that their lists changed. A session hears `notifications/tools/list_changed`
 * only when the tools it sees changed (a profile's session not when another profile's backend
 * did), and `resources/list_changed` or `prompts/list_changed` when the backends behind its lists
 * changed: one came or went, restarted, or had its filters edited by a reload.
 *
 * What a session saw is kept as a signature (the entries it listed, the backends behind its
 * resources and prompts) and compared when the backends' tools or the configuration change.
 */
import type { BackendsService } from "../../backend/Backends.js"
import type { Profile } from "../../config/Config.js"
import { type CatalogEntry, catalogOf, inProfile, profileServes } from "../../catalog/ToolCatalog.js"
import type { Session } from "../session/Session.js"

/** One backend behind a session's resources or prompts: which process, under which filters. */
type Source = readonly [backendId: string, instance: unknown, filters: string]

interface Seen {
  tools: ReadonlyArray<CatalogEntry>
  resources: ReadonlyArray<Source>
  prompts: ReadonlyArray<Source>
  /** A backend served as itself: its tool list as last announced. */
  ownTools: unknown
}

const sameEntries = (a: ReadonlyArray<CatalogEntry>, b: ReadonlyArray<CatalogEntry>): boolean =>
  a.length === b.length &&
  a.every((e, i) => {
    const f = b[i]
    return f !== undefined && e.name === f.name && e.source === f.source && e.tool.description === f.tool.description
  })

const sameSources = (a: ReadonlyArray<Source>, b: ReadonlyArray<Source>): boolean =>
  a.length === b.length &&
  a.every((s, i) => {
    const t = b[i]
    return t !== undefined && s[0] === t[0] && s[1] === t[1] && s[2] === t[2]
  })

export const make = (backends: BackendsService, profileOf: (session: Session) => Profile | undefined) => {
  const seen = new WeakMap<Session, Seen>()

  const sources = (capability: "resources" | "prompts", profile: Profile | undefined): ReadonlyArray<Source> =>
    backends.toolsSync().flatMap(({ backendId }) => {
      const running = backends.backend(backendId)
      if (running === undefined || running.serverCapabilities[capability] === undefined) return []
      if (!profileServes(profile, backendId)) return []
      const config = backends.configOf(backendId)
      const filters =
        capability === "resources"
          ? JSON.stringify([config?.allowResources, config?.denyResources])
          : JSON.stringify([config?.allowPrompts, config?.denyPrompts, config?.namespace])
      return [[backendId, running, filters] as const]
    })

  const signature = (session: Session): Seen => {
    const { target } = session
    if (target._tag === "Backend") {
      const own = backends.toolsSync().find((b) => b.backendId === target.backendId)
      return { tools: [], resources: [], prompts: [], ownTools: own?.tools }
    }
    const profile = profileOf(session)
    return {
      tools: inProfile(catalogOf(backends.toolsSync()), profile).entries,
      resources: sources("resources", profile),
      prompts: sources("prompts", profile),
      ownTools: undefined
    }
  }

  return {
    /** What the session sees now is what it will be told changed from. */
    remember: (session: Session): void => void seen.set(session, signature(session)),
    /**
     * Tells every ready session of the lists that changed since it was last told; a session not
     * ready yet lists after its `initialize`, so it only has its signature taken.
     */
    announce: (sessions: Iterable<Session>): void => {
      for (const session of sessions) {
        const before = seen.get(session)
        const now = signature(session)
        seen.set(session, now)
        if (session.phase !== "ready" || before === undefined) continue
        if (session.target._tag === "Backend") {
          if (before.ownTools !== now.ownTools) session.notify("notifications/tools/list_changed", {})
          continue
        }
        if (!sameEntries(before.tools, now.tools)) session.notify("notifications/tools/list_changed", {})
        if (!sameSources(before.resources, now.resources)) session.notify("notifications/resources/list_changed", {})
        if (!sameSources(before.prompts, now.prompts)) session.notify("notifications/prompts/list_changed", {})
      }
    }
  }
}
