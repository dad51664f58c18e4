/**
 * A backend's filters on its own endpoint (`/servers/<id>/mcp`), where everything else is relayed
 * unchanged: what its `allow*`/`deny*` settings exclude is refused by name and taken out of lists,
 * as the aggregate does (see Exposure).
 */
import type { Exposure } from "../config/Config.js"
import { promptAdmitted, resourceAdmitted, toolAdmitted } from "./ToolCatalog.js"
import { InvalidParams } from "../protocol/Errors.js"
import * as Json from "../json/Json.js"
import { isObject, objectOr } from "../json/Json.js"

/**
 * What a backend's filters hide from its own endpoint: a call of a filtered tool, a read of a
 * filtered resource, a filtered prompt are refused as the aggregate refuses unknown names (-32602).
 */
export const hiddenBy = (config: Exposure | undefined, method: string, params: unknown): InvalidParams | undefined => {
  const p = objectOr(params)
  const refuse = (what: string, name: string) =>
    new InvalidParams({
      message: `Unknown ${what}: ${name}`,
      issues: [`${what === "tool" ? "name" : "uri"}: no ${what} '${name}'`]
    })
  if (method === "tools/call" && typeof p.name === "string" && !toolAdmitted(config, p.name)) return refuse("tool", p.name)
  if (method === "prompts/get" && typeof p.name === "string" && !promptAdmitted(config, p.name)) return refuse("prompt", p.name)
  if (method.startsWith("resources/") && typeof p.uri === "string" && !resourceAdmitted(config, p.uri)) {
    return refuse("resource", p.uri)
  }
  return undefined
}

/** A list result with what the backend's filters hide taken out; other results unchanged. */
export const filteredList = (config: Exposure | undefined, method: string, result: unknown): unknown => {
  const fields: Record<string, readonly [string, string, (config: Exposure | undefined, name: string) => boolean]> = {
    "tools/list": ["tools", "name", toolAdmitted],
    "prompts/list": ["prompts", "name", promptAdmitted],
    "resources/list": ["resources", "uri", resourceAdmitted],
    "resources/templates/list": ["resourceTemplates", "uriTemplate", resourceAdmitted]
  }
  const field = fields[method]
  const items = field === undefined ? undefined : Json.field(result, field[0])
  if (field === undefined || !isObject(result) || !Array.isArray(items)) return result
  const [key, nameKey, admitted] = field
  return {
    ...result,
    [key]: items.filter((item: unknown) => {
      const name = Json.field(item, nameKey)
      return typeof name !== "string" || admitted(config, name)
    })
  }
}
