/**
 * The SEP-2243 headers (2026-07-28) a request to a remote server carries: `Mcp-Method` (the body's
 * method), `Mcp-Name` (what the request names: a tool or prompt, a resource's URI, a task's id) and
 * `Mcp-Param-<Name>` for each argument whose inputSchema property asks for one (`x-mcp-header`).
 * Servers of that revision MUST refuse a request whose headers do not match its body (400, -32020),
 * so they are computed from what the backend receives: its own tool name, never the namespaced one.
 * The rules themselves (names, encoding) are `protocol/Headers`, which the gateway's own endpoints
 * check clients against.
 *
 * The tools' headers are learned from the backend's own tools list (`toolsListed`).
 */
import type { Tool } from "../../protocol/Mcp.js"
import { argumentValue, encodeValue, headerParams, nameOf } from "../../protocol/Headers.js"
import { objectField } from "../../json/Json.js"

export { encodeValue, headerParams } from "../../protocol/Headers.js"

/** The part of an outgoing message the headers are computed from. */
export interface Named {
  readonly method?: string
  readonly params?: Readonly<Record<string, unknown>>
}

export class McpHeaders {
  private params = new Map<string, ReadonlyArray<readonly [string, string]>>()

  /** The backend's tools as it lists them (own names): which of their arguments go in headers. */
  toolsListed(tools: ReadonlyArray<Tool>): void {
    const params = new Map<string, ReadonlyArray<readonly [string, string]>>()
    for (const tool of tools) {
      const found = headerParams(tool.inputSchema)
      if (found.length > 0) params.set(tool.name, found)
    }
    this.params = params
  }

  /** The headers for one message (none for a reply, which has no method). */
  for(message: Named): Record<string, string> {
    const method = message.method
    if (method === undefined) return {}
    const headers: Record<string, string> = { "mcp-method": method }
    const name = nameOf(method, message.params)
    if (name !== undefined) headers["mcp-name"] = encodeValue(name)
    if (method === "tools/call" && name !== undefined) {
      const args = objectField(message.params, "arguments")
      for (const [property, header] of this.params.get(name) ?? []) {
        const value = args !== undefined && Object.hasOwn(args, property) ? argumentValue(args[property]) : undefined
        if (value !== undefined) headers[`mcp-param-${header.toLowerCase()}`] = encodeValue(value)
      }
    }
    return headers
  }
}
