/**
 * The SEP-2243 request headers of MCP 2026-07-28, both ways: `Mcp-Method` (the body's method),
 * `Mcp-Name` (what the request names: a tool or prompt, a resource's URI, a task's id) and
 * `Mcp-Param-<Name>` for each argument whose inputSchema property declares `x-mcp-header`. A client
 * sends them so that proxies can route without reading bodies; a server refuses a request whose
 * headers contradict its body (HTTP 400, -32020), so that what a proxy routed on is what runs.
 *
 * Values are plain printable ASCII, or `=?base64?<UTF-8 as Base64>?=` for anything else.
 */
import { field, isObject, objectField } from "../json/Json.js"

/**
 * Where each method keeps the name `Mcp-Name` mirrors: SEP-2243's, and SEP-2663's task methods
 * (`tasks/result` is not one of them: the extension removed it).
 */
export const NAMED_BY: Readonly<Record<string, string>> = {
  "tools/call": "name",
  "prompts/get": "name",
  "resources/read": "uri",
  "resources/subscribe": "uri",
  "resources/unsubscribe": "uri",
  "tasks/get": "taskId",
  "tasks/update": "taskId",
  "tasks/cancel": "taskId"
}

/** An RFC 9110 token: what a header name may be. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const SENTINEL = /^=\?base64\?(.*)\?=$/s
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/**
 * A value as a header carries it: plain printable ASCII as it is; anything else (leading or
 * trailing whitespace, other characters, a value that looks like the sentinel) as `=?base64?...?=`.
 */
export const encodeValue = (value: string): string =>
  /^[\x20-\x7e]*$/.test(value) && value.trim() === value && !SENTINEL.test(value)
    ? value
    : `=?base64?${Buffer.from(value, "utf8").toString("base64")}?=`

/**
 * What a received header value stands for: whitespace around it dropped (RFC 9110 §5.5), the
 * Base64 form decoded; undefined when the Base64 is not valid (wrong alphabet or padding).
 * A value with only half of the wrapper is literal.
 */
export const decodeValue = (raw: string): string | undefined => {
  const value = raw.replace(/^[ \t]+|[ \t]+$/g, "")
  const wrapped = SENTINEL.exec(value)
  if (wrapped === null) return value
  const encoded = wrapped[1]!
  return BASE64.test(encoded) ? Buffer.from(encoded, "base64").toString("utf8") : undefined
}

/** An argument's value as a header value; undefined for what no header carries (null, objects). */
export const argumentValue = (value: unknown): string | undefined =>
  typeof value === "string"
    ? value
    : typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))
      ? String(value)
      : undefined

/** The `x-mcp-header` properties of an inputSchema: [property, header name]. */
export const headerParams = (inputSchema: unknown): ReadonlyArray<readonly [string, string]> => {
  const properties = field(inputSchema, "properties")
  if (!isObject(properties)) return []
  const out: Array<readonly [string, string]> = []
  const seen = new Set<string>()
  for (const [property, schema] of Object.entries(properties)) {
    const name = field(schema, "x-mcp-header")
    // A declaration the revision does not allow (not a token, twice) is not honoured.
    if (typeof name !== "string" || !TOKEN.test(name) || seen.has(name.toLowerCase())) continue
    seen.add(name.toLowerCase())
    out.push([property, name])
  }
  return out
}

/** The name a request's `Mcp-Name` mirrors, if its method names one. */
export const nameOf = (method: string, params: unknown): string | undefined => {
  const key = NAMED_BY[method]
  const name = key === undefined ? undefined : field(params, key)
  return typeof name === "string" ? name : undefined
}

/**
 * Why a request's headers contradict its body, or undefined when they agree. `headers` are the
 * request's, names in lower case (as Node gives them); `schemaOf` finds the inputSchema of a tool
 * by the name the client called it by, for its `Mcp-Param-*` headers.
 */
export const mismatch = (
  request: { readonly method: string; readonly params?: unknown },
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
  schemaOf: (toolName: string) => unknown
): string | undefined => {
  const header = (name: string): string | undefined => {
    const value = headers[name]
    return typeof value === "string" ? value : value?.join(", ")
  }
  const method = header("mcp-method")
  if (method === undefined) return "Missing Mcp-Method header"
  if (method.replace(/^[ \t]+|[ \t]+$/g, "") !== request.method) {
    return `Mcp-Method header '${method.slice(0, 64)}' does not match the body's method '${request.method}'`
  }
  // A method that names nothing has no Mcp-Name to check (one sent anyway is not read).
  const name = nameOf(request.method, request.params)
  const sentName = header("mcp-name")
  if (name !== undefined) {
    const key = NAMED_BY[request.method]
    if (sentName === undefined) return `Missing Mcp-Name header (the body's params.${key} is '${name}')`
    if (decodeValue(sentName) !== name) return `Mcp-Name header does not match the body's params.${key}`
  }
  if (request.method !== "tools/call" || name === undefined) return undefined
  const args = objectField(request.params, "arguments")
  for (const [property, headerName] of headerParams(schemaOf(name))) {
    const inBody = args !== undefined && Object.hasOwn(args, property) ? argumentValue(args[property]) : undefined
    const sent = header(`mcp-param-${headerName.toLowerCase()}`)
    if (inBody === undefined && sent === undefined) continue
    const label = `Mcp-Param-${headerName}`
    if (sent === undefined) return `Missing ${label} header (arguments.${property} is in the body)`
    const decoded = decodeValue(sent)
    if (decoded === undefined) return `${label} header is not valid Base64`
    if (decoded !== inBody) return `${label} header does not match arguments.${property}`
  }
  return undefined
}
