/**
 * The SEP-2243 headers (2026-07-28) a request to a remote server carries: `Mcp-Method` (the body's
 * method), `Mcp-Name` (what the request names: a tool or prompt, a resource's URI, a task's id) and
 * `Mcp-Param-<Name>` for each argument whose inputSchema property asks for one (`x-mcp-header`).
 * Servers of that revision MUST refuse a request whose headers do not match its body (400, -32020),
 * so they are computed from what the backend receives: its own tool name, never the namespaced one.
 *
 * The tools' headers are learned from the backend's own tools list (`toolsListed`).
 */
import type { Tool } from "../../protocol/Mcp.js"
import { field, objectField } from "../../data/Json.js"

/** Where each method keeps the name `Mcp-Name` mirrors. */
const NAMED_BY: Readonly<Record<string, string>> = {
  "tools/call": "name",
  "prompts/get": "name",
  "resources/read": "uri",
  "resources/subscribe": "uri",
  "resources/unsubscribe": "uri",
  "tasks/get": "taskId",
  "tasks/update": "taskId",
  "tasks/cancel": "taskId",
  "tasks/result": "taskId"
}

/** An RFC 9110 token: what a header name may be. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const SENTINEL = /^=\?base64\?.*\?=$/

/**
 * A value as a header carries it: plain printable ASCII as it is; anything else (leading or
 * trailing whitespace, other characters, a value that looks like the sentinel) as `=?base64?...?=`.
 */
export const encodeValue = (value: string): string =>
  /^[\x20-\x7e]*$/.test(value) && value.trim() === value && !SENTINEL.test(value)
    ? value
    : `=?base64?${Buffer.from(value, "utf8").toString("base64")}?=`

/** An argument's value as a header value; undefined for what no header carries (null, objects). */
const argumentValue = (value: unknown): string | undefined =>
  typeof value === "string"
    ? encodeValue(value)
    : typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))
      ? String(value)
      : undefined

/** The `x-mcp-header` properties of an inputSchema: [property, header name]. */
export const headerParams = (inputSchema: unknown): ReadonlyArray<readonly [string, string]> => {
  const properties = field(inputSchema, "properties")
  if (typeof properties !== "object" || properties === null) return []
  const out: Array<readonly [string, string]> = []
  const seen = new Set<string>()
  for (const [property, schema] of Object.entries(properties)) {
    const name = field(schema, "x-mcp-header")
    // A declaration the revision does not allow (not a token, twice) is not sent.
    if (typeof name !== "string" || !TOKEN.test(name) || seen.has(name.toLowerCase())) continue
    seen.add(name.toLowerCase())
    out.push([property, name])
  }
  return out
}

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
    const field = NAMED_BY[method]
    const name = field === undefined ? undefined : message.params?.[field]
    if (typeof name === "string") headers["mcp-name"] = encodeValue(name)
    if (method === "tools/call" && typeof name === "string") {
      const args = objectField(message.params, "arguments")
      for (const [property, header] of this.params.get(name) ?? []) {
        const value = args !== undefined && Object.hasOwn(args, property) ? argumentValue(args[property]) : undefined
        if (value !== undefined) headers[`mcp-param-${header.toLowerCase()}`] = value
      }
    }
    return headers
  }
}
