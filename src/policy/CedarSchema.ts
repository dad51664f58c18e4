/**
 * The Cedar schema of a gateway's policies, generated from its catalog (`mcp-agentify policy
 * schema`; `check` validates the policy file against it): the entity types (User, Group, Tool,
 * Resource, Prompt, Backend), the five actions, and the context every action sees. The
 * arguments' record is the union of every listed tool's input properties (and the gateway's own
 * tools' and the prompts'), each optional, typed as Cedar holds it; a name the tools give
 * different types is left out, with a comment saying so. `check` validates the policy file
 * against it (`review`).
 */
import * as Cedar from "./Cedar.js"
import * as Policies from "./Policies.js"
import { ACTIONS } from "./Policy.js"

export interface Listed {
  /** The tool's name as listed. */
  readonly name: string
  readonly inputSchema?: unknown
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** A JSON Schema's Cedar type, where Cedar can hold its values (see Cedar.toCedar); else undefined. */
export const cedarTypeOf = (schema: unknown, depth = 0): string | undefined => {
  if (!isObject(schema) || depth > 8) return undefined
  const type = Array.isArray(schema.type) ? schema.type.filter((t) => t !== "null") : [schema.type]
  if (type.length !== 1) return undefined
  switch (type[0]) {
    case "string":
      return "String"
    case "boolean":
      return "Bool"
    // Only whole numbers reach Cedar: a `number` argument that is one is a Long, others are left out.
    case "integer":
    case "number":
      return "Long"
    case "array": {
      const item = cedarTypeOf(schema.items, depth + 1)
      return item === undefined ? undefined : `Set<${item}>`
    }
    case "object": {
      const fields = recordOf(schema.properties, depth + 1)
      return fields === undefined ? undefined : `{${fields}}`
    }
    default:
      return undefined
  }
}

const quote = (name: string) => JSON.stringify(name)

const recordOf = (properties: unknown, depth: number): string | undefined => {
  if (!isObject(properties)) return ""
  const fields = Object.entries(properties).flatMap(([name, schema]) => {
    const type = cedarTypeOf(schema, depth)
    return type === undefined ? [] : [`${quote(name)}?: ${type}`]
  })
  return fields.join(", ")
}

/** The gateway's own tools' arguments, and a prompt's (strings, as MCP passes them). */
const OWN: ReadonlyArray<Listed> = [
  { name: "agentify_orchestrate", inputSchema: { type: "object", properties: { query: { type: "string" } } } },
  { name: "agentify_run_code", inputSchema: { type: "object", properties: { code: { type: "string" } } } }
]

/** The schema's text for these tools and prompt arguments. */
export const generate = (tools: ReadonlyArray<Listed>, promptArguments: ReadonlyArray<string> = []): string => {
  const fields = new Map<string, { type: string; from: string }>()
  const dropped = new Map<string, Array<string>>()
  const add = (name: string, type: string, from: string) => {
    if (dropped.has(name)) return void dropped.get(name)!.push(`${from}: ${type}`)
    const seen = fields.get(name)
    if (seen === undefined) fields.set(name, { type, from })
    else if (seen.type !== type) {
      fields.delete(name)
      dropped.set(name, [`${seen.from}: ${seen.type}`, `${from}: ${type}`])
    }
  }
  for (const tool of [...OWN, ...tools]) {
    const properties = isObject(tool.inputSchema) ? tool.inputSchema.properties : undefined
    if (!isObject(properties)) continue
    for (const [name, schema] of Object.entries(properties)) {
      const type = cedarTypeOf(schema)
      if (type !== undefined) add(name, type, tool.name)
    }
  }
  for (const name of promptArguments) add(name, "String", "a prompt")
  const names = [...fields.keys()].sort()
  const droppedNotes = [...dropped.entries()].map(
    ([name, types]) => `// ${quote(name)} is left out of Arguments: its types differ (${types.join("; ")})`
  )
  return [
    "// The Cedar schema of mcp-agentify's policies, generated from the tools it lists now.",
    '// Principal: the user (an access token\'s subject; "local" over stdio), in a Group per groups claim.',
    "entity Group;",
    "entity Backend;",
    "entity User in [Group] {",
    "  scopes: Set<String>,",
    "  groups: Set<String>,",
    "  profile: String,",
    "  client: String,",
    "};",
    "// A tool as listed; its capabilities as the gateway takes them (the config's hints, its own, MCP's defaults).",
    "// name: the id as a string (a tool's listed name, a resource's URI, a prompt's listed name), for `like`.",
    "entity Tool in [Backend] {",
    "  name: String,",
    "  backend: String,",
    "  readOnly: Bool,",
    "  destructive: Bool,",
    "  openWorld: Bool,",
    "  idempotent: Bool,",
    "};",
    "entity Resource in [Backend] { name: String, backend: String };",
    "entity Prompt in [Backend] { name: String, backend: String };",
    "// Where a call's data came from: backends read before it, backends its arguments' values came from,",
    "// and whether its tool was in the plan made before anything was read.",
    "type Flow = { read: Set<String>, argumentsFrom: Set<String>, planned: Bool };",
    ...droppedNotes,
    "type Arguments = {",
    ...names.map((name) => `  ${quote(name)}?: ${fields.get(name)!.type},`),
    "};",
    '// via: "client", "orchestration", "script", "task" or "backend-endpoint".',
    "type Circumstances = { arguments: Arguments, via: String, flow: Flow };",
    `action ${ACTIONS.filter((a) => a !== "read" && a !== "get")
      .map(quote)
      .join(", ")} appliesTo { principal: User, resource: Tool, context: Circumstances };`,
    `action "read" appliesTo { principal: User, resource: Resource, context: Circumstances };`,
    `action "get" appliesTo { principal: User, resource: Prompt, context: Circumstances };`,
    ""
  ].join("\n")
}

/** What `check` says of a policy file: how many policies it holds, and what is wrong or doubtful in it. */
export const review = (
  file: string,
  tools: ReadonlyArray<Listed>
): {
  readonly ids: ReadonlyArray<string>
  readonly problems: ReadonlyArray<string>
  readonly warnings: ReadonlyArray<string>
} => {
  const text = Policies.textOf(file)
  if (typeof text !== "string") return { ids: [], problems: text.problems, warnings: [] }
  const loaded = Cedar.load(file, text)
  if ("problems" in loaded) return { ids: [], problems: loaded.problems, warnings: [] }
  const found = Cedar.validate(text, generate(tools))
  return {
    ids: loaded.ids,
    problems: found.filter((f) => !f.includes("(warning)")),
    warnings: found.filter((f) => f.includes("(warning)"))
  }
}
