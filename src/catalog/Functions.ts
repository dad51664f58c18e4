/**
 * The LLM function definitions for both routing modes: one per tool ("tool") or one per backend
 * with `{mcp_method, mcp_params}` ("backend", the seed PoC's shape).
 */
import * as Invisible from "../text/Invisible.js"
import type { BackendTools } from "../backend/Backends.js"
import type { JsonObject, Tool } from "../protocol/Mcp.js"
import type { CatalogEntry } from "./Naming.js"
import { isObject } from "../json/Json.js"

/** OpenAI's `ChatCompletionFunctionTool`, structurally, so this module does not import `openai`. */
export interface ChatTool {
  type: "function"
  function: {
    name: string
    description?: string
    parameters?: Record<string, unknown>
    strict?: boolean | null
  }
}

/** The Chat Completions API rejects a function description longer than this. */
const MAX_FUNCTION_DESCRIPTION = 1024
/** Room left for the model's other input: a generated backend description stays below this. */
const BACKEND_SUMMARY_BUDGET = 1000

const clip = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`)

/**
 * An MCP inputSchema as Chat Completions `parameters`. Only what the API insists on is changed: it
 * wants an object schema with `properties`, and some OpenAI-compatible servers choke on `$schema`.
 */
const functionParameters = (schema: JsonObject): Record<string, unknown> => {
  const parameters: Record<string, unknown> = { ...schema, type: "object" }
  delete parameters.$schema
  if (!isObject(parameters.properties)) parameters.properties = {}
  return parameters
}

const screened = new WeakMap<JsonObject, JsonObject>()

/** An inputSchema as the model reads it: nothing hidden in its descriptions (see text/Invisible). */
const screenedSchema = (schema: JsonObject): JsonObject => {
  let clean = screened.get(schema)
  if (clean === undefined) {
    const stripped = Invisible.stripSchema(schema)
    clean = Invisible.schemaHides(schema) && isObject(stripped) ? stripped : schema
    screened.set(schema, clean)
  }
  return clean
}

/** Routing "tool": one function per catalog entry, named as in `tools/list`. */
export const toolFunctions = (entries: ReadonlyArray<CatalogEntry>): Array<ChatTool> =>
  entries.map((entry) => ({
    type: "function",
    function: {
      name: entry.name,
      description: clip(Invisible.strip(entry.tool.description ?? `[${entry.backendId}]`), MAX_FUNCTION_DESCRIPTION),
      parameters: functionParameters(screenedSchema(entry.tool.inputSchema))
    }
  }))

const propertyNames = (tool: Tool): { all: Array<string>; required: ReadonlySet<string> } => {
  const properties = isObject(tool.inputSchema.properties) ? Object.keys(tool.inputSchema.properties) : []
  const required = Array.isArray(tool.inputSchema.required)
    ? new Set(tool.inputSchema.required.filter((r): r is string => typeof r === "string"))
    : new Set<string>()
  return { all: properties, required }
}

type SignatureStyle = "full" | "required" | "bare"

const signature = (tool: Tool, style: SignatureStyle): string => {
  if (style === "bare") return tool.name
  const { all, required } = propertyNames(tool)
  const shown = style === "full" ? all.map((p) => (required.has(p) ? p : `${p}?`)) : all.filter((p) => required.has(p))
  return `${tool.name}(${shown.join(", ")})`
}

const usage = `Use mcp_method "tools/call" with mcp_params {"name": <tool name>, "arguments": {...}}.`

/** Lists the tools as compactly as it takes to stay in budget, and says how many did not fit. */
const describeBackend = (backend: BackendTools): string => {
  const head = `MCP server "${backend.backendId}". ${usage}`
  if (backend.tools.length === 0) return `${head} It lists no tools yet.`
  for (const style of ["full", "required", "bare"] as const) {
    const text = `${head} Tools: ${backend.tools.map((t) => signature(t, style)).join(", ")}.`
    if (text.length <= BACKEND_SUMMARY_BUDGET) return text
  }
  let text = `${head} Tools: `
  let shown = 0
  for (const tool of backend.tools) {
    const more = `, ... (${backend.tools.length - shown - 1} more)`
    if (text.length + tool.name.length + 2 + more.length > BACKEND_SUMMARY_BUDGET) break
    text += (shown === 0 ? "" : ", ") + tool.name
    shown++
  }
  return `${text}, ... (${backend.tools.length - shown} more).`
}

/**
 * Routing "backend" (the seed PoC's shape): one function per backend, named by its id (config
 * validation keeps ids within the function-name pattern), described by its config description or
 * else by a generated list of its tools.
 */
export const backendFunctions = (backends: ReadonlyArray<BackendTools>): Array<ChatTool> =>
  backends.map((backend) => {
    const names = backend.tools.map((t) => t.name).join(", ")
    return {
      type: "function",
      function: {
        name: backend.backendId,
        description: clip(backend.description?.trim() || describeBackend(backend), MAX_FUNCTION_DESCRIPTION),
        parameters: {
          type: "object",
          properties: {
            mcp_method: {
              type: "string",
              description: `The MCP method to call on this backend; normally "tools/call".`
            },
            mcp_params: {
              type: "object",
              description: clip(
                `The method's params. For "tools/call": {"name": <tool name>, "arguments": {...the tool's arguments}}` +
                  (names ? `, where the tool name is one of: ${names}.` : "."),
                BACKEND_SUMMARY_BUDGET
              )
            }
          },
          required: ["mcp_method", "mcp_params"]
        }
      }
    }
  })
