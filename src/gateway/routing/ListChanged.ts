/**
 * Which sessions to tell that their lists changed. A session hears `notifications/tools/list_changed`
 * only when the list its `tools/list` gives changed (a profile's session not when another
 * profile's backend did; a session listed in part, past `maxListedTools`, not when a tool it does
 * not list came; nobody when a backend lists again what it listed), and `resources/list_changed` or `prompts/list_changed` when the backends behind its lists
 * changed: one came or went, restarted, or had its filters edited by a reload.
 *
 * What a session was told is kept (the tools it lists, on the session; the backends behind its
 * resources and prompts, here) and compared when the backends' tools or the configuration change.
 */
import type { BackendsService } from "../../backend/Backends.js"
import type { Profile } from "../../config/Config.js"
import { type CatalogEntry, catalogOf, inProfile, profileServes } from "../../catalog/ToolCatalog.js"
import type { Session } from "../session/Session.js"
import type { Tool } from "../../protocol/Mcp.js"

/** One backend behind a session's resources or prompts: which process, under which filters. */
type Source = readonly [backendId: string, instance: unknown, filters: string]

interface Seen {
  resources: ReadonlyArray<Source>
  prompts: ReadonlyArray<Source>
}

/**
 * Whether two lists of tools read the same to a client: the same tools in the same order, each
 * the very object or one with the same definition (a backend that lists again what it listed
 * gives new objects; nobody is told of those).
 */
export const sameTools = (a: ReadonlyArray<Tool> | undefined, b: ReadonlyArray<Tool> | undefined): boolean =>
  a === b ||
  (a !== undefined &&
    b !== undefined &&
    a.length === b.length &&
    a.every((tool, i) => {
      const other = b[i]
      return other !== undefined && (tool === other || (tool.name === other.name && sameJson(tool, other)))
    }))

const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)

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

  /** The tools the session lists now: its own list, else the catalog as it sees it. */
  const toolsOf = (session: Session): ReadonlyArray<Tool> | undefined => {
    const { target } = session
    if (target._tag === "Backend") return backends.toolsSync().find((b) => b.backendId === target.backendId)?.tools
    if (session.listedTools !== undefined) return session.listedTools()
    return inProfile(catalogOf(backends.toolsSync()), profileOf(session)).entries.map((e: CatalogEntry) => e.tool)
  }

  const signature = (session: Session): Seen => {
    if (session.target._tag === "Backend") return { resources: [], prompts: [] }
    const profile = profileOf(session)
    return { resources: sources("resources", profile), prompts: sources("prompts", profile) }
  }

  return {
    /**
     * What the session sees now is what it will be told changed from (one initialized while
     * backends start holds nothing until its first tools/list or their start: see SessionMethods).
     */
    remember: (session: Session): void => {
      seen.set(session, signature(session))
      session.toolsTold = toolsOf(session)
    },
    /**
     * Tells every ready session of the lists that changed since it was last told; a session not
     * ready yet lists after its `initialize`, so it only has its signature taken.
     */
    announce: (sessions: Iterable<Session>): void => {
      for (const session of sessions) {
        const before = seen.get(session)
        const now = signature(session)
        seen.set(session, now)
        const toolsBefore = session.toolsTold
        // None held (initialized while backends started, not listed since): its first tools/list
        // gets them whole; it is told from when they have started.
        const tools = toolsBefore === undefined && backends.settling() ? undefined : toolsOf(session)
        if (tools !== undefined) session.toolsTold = tools
        if (session.phase !== "ready" || before === undefined || toolsBefore === undefined) continue
        // Only when the list it would get differs from the last it got or was told of.
        if (tools !== undefined && !sameTools(toolsBefore, tools)) session.notify("notifications/tools/list_changed", {})
        if (session.target._tag === "Backend") continue
        if (!sameSources(before.resources, now.resources)) session.notify("notifications/resources/list_changed", {})
        if (!sameSources(before.prompts, now.prompts)) session.notify("notifications/prompts/list_changed", {})
      }
    }
  }
}
