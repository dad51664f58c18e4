/**
 * MCP Apps (the `io.modelcontextprotocol/ui` extension) in the catalog. A tool with an app names
 * its UI in `_meta.ui.resourceUri` (a `ui://` resource; earlier drafts: `_meta["ui/resourceUri"]`),
 * and `_meta.ui.visibility` says who may call it: `["model", "app"]` by default, `["app"]` for a
 * tool only its app calls. A host keeps app-only tools from its model; so does the gateway from
 * its own (orchestration and code mode).
 */
import { field, isObject } from "../json/Json.js"
import type { Tool } from "../protocol/Mcp.js"
import type { Catalog } from "./Naming.js"

export const UI_EXTENSION = "io.modelcontextprotocol/ui"

/** What the gateway declares to backends for the clients it relays apps to. */
export const UI_CAPABILITY = { mimeTypes: ["text/html;profile=mcp-app"] }

/** Whether a tool has an app (a UI resource). */
export const hasApp = (tool: Tool): boolean => {
  const meta = field(tool, "_meta")
  return typeof field(field(meta, "ui"), "resourceUri") === "string" || typeof field(meta, "ui/resourceUri") === "string"
}

/** Whether only its app may call a tool (`visibility` without "model"): no model is offered it. */
export const isAppOnly = (tool: Tool): boolean => {
  const visibility = field(field(field(tool, "_meta"), "ui"), "visibility")
  return Array.isArray(visibility) && !visibility.includes("model")
}

/** Whether a client's capabilities declare the UI extension (it renders apps). */
export const rendersApps = (capabilities: unknown): boolean => isObject(field(field(capabilities, "extensions"), UI_EXTENSION))

const forModels = new WeakMap<Catalog, Catalog>()

/** The catalog a model is offered: without app-only tools. The same object when it has none. */
export const forModel = (catalog: Catalog): Catalog => {
  let view = forModels.get(catalog)
  if (view === undefined) {
    const entries = catalog.entries.filter((e) => !isAppOnly(e.source))
    view =
      entries.length === catalog.entries.length
        ? catalog
        : { ...catalog, entries, byName: new Map(entries.map((e) => [e.name, e])) }
    forModels.set(catalog, view)
  }
  return view
}

/**
 * Whether a client sees a tool in its list. A client that renders no apps does not see app-only
 * tools; nor, when the gateway declared the extension to backends on its own account (a shared
 * gateway, for every client), tools with an app: the backend would have kept them from such a
 * client itself.
 */
export const listedFor = (tool: Tool, clientRendersApps: boolean, declaredForClients: boolean): boolean =>
  clientRendersApps || !(isAppOnly(tool) || (declaredForClients && hasApp(tool)))
