/**
 * What a model must know to write a script: TypeScript declarations of the tools it may call,
 * generated from each inputSchema (and outputSchema), their descriptions as doc comments, and the
 * names a script reaches them by (`tools.<namespace>.<tool>`, or `callTool("<exposed name>")`).
 */
import * as Invisible from "../text/Invisible.js"
import { isObject, objectOr, stringField } from "../json/Json.js"

/** How a tool is reached from a script. */
export interface ScriptTool {
  /** The namespace object under `tools` (null: directly on `tools`). */
  readonly namespace: string | null
  /** Its key there. */
  readonly key: string
  /** The name clients see, which `callTool` takes. */
  readonly exposed: string
  readonly description?: string | undefined
  readonly inputSchema?: unknown
  readonly outputSchema?: unknown
}

/** The namespace and key of an exposed name: `fs__read_file` is `tools.fs.read_file`. */
export const pathOf = (exposed: string, namespace: string): { namespace: string | null; key: string } =>
  namespace !== "" && exposed.startsWith(`${namespace}__`)
    ? { namespace, key: exposed.slice(namespace.length + 2) }
    : { namespace: null, key: exposed }

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/
const key = (name: string) => (IDENTIFIER.test(name) ? name : JSON.stringify(name))

const comment = (text: string | undefined, indent: string): string => {
  // Nothing a reader of the tool's description could not see reaches the model (text/Invisible).
  const clean = Invisible.strip(text ?? "")
    .replace(/\*\//g, "* /")
    .trim()
  if (clean === "") return ""
  const lines = clean.split("\n").slice(0, 12)
  return `${indent}/** ${lines.join(`\n${indent} * `)} */\n`
}

/** A JSON Schema as a TypeScript type, depth-bounded (anything deeper, or unknown, is `unknown`). */
export const typeOf = (schema: unknown, indent = "", depth = 0): string => {
  if (!isObject(schema) || depth > 6) return "unknown"
  const s = schema
  if ("const" in s) return JSON.stringify(s.const) ?? "unknown"
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(" | ") || "never"
  for (const union of ["anyOf", "oneOf"] as const) {
    const members = s[union]
    if (Array.isArray(members)) return members.map((m: unknown) => typeOf(m, indent, depth + 1)).join(" | ")
  }
  const types: ReadonlyArray<unknown> = Array.isArray(s.type) ? s.type : [s.type]
  const one = (type: unknown): string => {
    switch (type) {
      case "string":
        return "string"
      case "number":
      case "integer":
        return "number"
      case "boolean":
        return "boolean"
      case "null":
        return "null"
      case "array":
        return `Array<${typeOf(s.items, indent, depth + 1)}>`
      case "object":
        return objectType(s, indent, depth)
      default:
        return s.properties !== undefined ? objectType(s, indent, depth) : "unknown"
    }
  }
  return types.map(one).join(" | ")
}

const objectType = (s: Record<string, unknown>, indent: string, depth: number): string => {
  const properties = objectOr(s.properties)
  const required = new Set(Array.isArray(s.required) ? s.required : [])
  const inner = `${indent}  `
  const fields = Object.entries(properties).map(
    ([name, p]) =>
      `${comment(stringField(p, "description"), inner)}${inner}${key(name)}${required.has(name) ? "" : "?"}: ${typeOf(p, inner, depth + 1)}`
  )
  if (s.additionalProperties !== false && fields.length === 0) return "Record<string, unknown>"
  return `{\n${fields.join("\n")}\n${indent}}`
}

/** One tool's declaration, as a method of its namespace's object. */
const declaration = (tool: ScriptTool, indent: string): string =>
  `${comment(tool.description, indent)}${indent}${key(tool.key)}(args: ${typeOf(tool.inputSchema ?? {}, indent)}): Promise<${
    tool.outputSchema === undefined ? "unknown" : typeOf(tool.outputSchema, indent)
  }>`

/** `items` grouped by `keyOf`, in the order each key first appears; linear in the items. */
const groupBy = <A, K>(items: ReadonlyArray<A>, keyOf: (a: A) => K): Map<K, Array<A>> => {
  const groups = new Map<K, Array<A>>()
  for (const item of items) {
    const k = keyOf(item)
    const group = groups.get(k)
    if (group === undefined) groups.set(k, [item])
    else group.push(item)
  }
  return groups
}

/**
 * The declarations of `tools`, grouped by namespace; undefined once they pass `maxChars` (a
 * catalog of thousands is not declared in full only to be thrown away).
 */
export const declarations = (tools: ReadonlyArray<ScriptTool>, maxChars = Infinity): string | undefined => {
  const members: Array<string> = []
  let size = 0
  for (const [namespace, group] of groupBy(tools, (t) => t.namespace)) {
    const indent = namespace === null ? "  " : "    "
    const lines: Array<string> = []
    for (const t of group) {
      const line = declaration(t, indent)
      size += line.length + 1
      if (size > maxChars) return undefined
      lines.push(line)
    }
    members.push(namespace === null ? lines.join("\n") : `  ${key(namespace)}: {\n${lines.join("\n")}\n  }`)
  }
  return `declare const tools: {\n${members.join("\n")}\n}`
}

/** The API every script has, whatever its tools. */
export const API = `/** Calls a tool by the name clients see; resolves to its structuredContent, else its text; rejects with an Error saying why. */
declare function callTool(name: string, args: object): Promise<unknown>
/** The declarations of the tools that best match a query (when the list below is not complete). */
declare function searchTools(query: string): Promise<string>
/** Captured and returned with the result. */
declare const console: { log(...values: unknown[]): void }`

/**
 * The declarations for a description: all of them when they fit `maxChars`, else the names by
 * namespace, and `searchTools` for the declarations of the matches of a query.
 */
export const forDescription = (tools: ReadonlyArray<ScriptTool>, maxChars: number): string => {
  const full = declarations(tools, maxChars)
  if (full !== undefined && full.length <= maxChars) return `${API}\n${full}`
  const names = groupBy(tools, (t) => t.namespace ?? "(tools)")
  const listing = [...names].map(([ns, group]) => `${ns}: ${group.map((t) => t.key).join(", ")}`).join("\n")
  return `${API}\n// ${tools.length} tools, too many to declare here: \`await searchTools("what the tool does")\` returns the declarations of the best matches.\n${listing}`
}
