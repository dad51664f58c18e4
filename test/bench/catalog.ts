/**
 * A synthetic catalog for the scale benchmark: `count` tools spread over backends of 50, with names,
 * descriptions and input schemas shaped like real MCP servers' (verb_noun names, a sentence or two
 * of description, a few described parameters). Deterministic: the same count gives the same tools.
 */
import type { Tool } from "../../src/protocol/Mcp.js"
import type { BackendTools } from "../../src/catalog/ToolCatalog.js"

const VERBS = [
  "get",
  "list",
  "create",
  "update",
  "delete",
  "search",
  "read",
  "write",
  "move",
  "copy",
  "rename",
  "find",
  "fetch",
  "send",
  "run",
  "query",
  "add",
  "remove",
  "merge",
  "close"
]
const NOUNS = [
  "file",
  "directory",
  "issue",
  "pull_request",
  "branch",
  "commit",
  "comment",
  "label",
  "user",
  "team",
  "page",
  "screenshot",
  "table",
  "row",
  "record",
  "entity",
  "relation",
  "message",
  "channel",
  "event",
  "calendar",
  "document",
  "image",
  "secret",
  "deployment",
  "container",
  "log",
  "metric",
  "alert",
  "ticket"
]
const DOMAINS = [
  "github",
  "gitlab",
  "filesystem",
  "postgres",
  "sqlite",
  "slack",
  "calendar",
  "browser",
  "memory",
  "jira",
  "notion",
  "docker",
  "kubernetes",
  "sentry",
  "grafana",
  "linear",
  "drive",
  "mail",
  "search",
  "vault"
]
const PHRASES = [
  "Returns the result as JSON.",
  "Only works within the allowed scope.",
  "Use this when the user asks for it by name.",
  "Fails if the target does not exist.",
  "Supports pagination with a cursor.",
  "Requires write access.",
  "The operation cannot be undone.",
  "Results are sorted by relevance."
]

/** A small linear congruential generator: reproducible without a dependency. */
const random = (seed: number) => () => {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0
  return seed / 2 ** 32
}

export const syntheticBackends = (count: number, perBackend = 50): Array<BackendTools> => {
  const next = random(42)
  const pick = <T>(list: ReadonlyArray<T>): T => list[Math.floor(next() * list.length)]!
  const backends: Array<BackendTools> = []
  for (let b = 0; b * perBackend < count; b++) {
    const domain = DOMAINS[b % DOMAINS.length]!
    const backendId = b < DOMAINS.length ? domain : `${domain}${Math.floor(b / DOMAINS.length) + 1}`
    const tools: Array<Tool> = []
    const names = new Set<string>()
    for (let t = 0; t < perBackend && b * perBackend + t < count; t++) {
      let name = `${pick(VERBS)}_${pick(NOUNS)}`
      while (names.has(name)) name = `${pick(VERBS)}_${pick(NOUNS)}_${names.size}`
      names.add(name)
      const [verb, ...rest] = name.split("_")
      const noun = rest.join(" ")
      const properties: Record<string, unknown> = {}
      const required: Array<string> = []
      const parameterCount = 1 + Math.floor(next() * 4)
      for (let p = 0; p < parameterCount; p++) {
        const parameter = p === 0 ? `${rest[0]}_id` : pick(["path", "query", "limit", "owner", "repo", "title", "body", "cursor"])
        properties[parameter] = {
          type: parameter === "limit" ? "number" : "string",
          description: `The ${parameter.replace(/_/g, " ")} of the ${noun}`
        }
        if (p === 0) required.push(parameter)
      }
      tools.push({
        name,
        description: `${verb![0]!.toUpperCase()}${verb!.slice(1)} a ${noun} in ${domain}. ${pick(PHRASES)} ${pick(PHRASES)}`,
        inputSchema: { type: "object", properties, required }
      })
    }
    backends.push({ backendId, tools })
  }
  return backends
}

/** Queries as people type them, cycled through by the ranking benchmark. */
export const QUERIES = [
  "show me the open issues in the repo",
  "read the file src/index.ts",
  "create a new branch called feature/login",
  "post a message to the team channel",
  "list the folders under /home/me/project",
  "take a screenshot of the page",
  "remember that Alice works on the billing team",
  "find the slow queries in postgres",
  "rename report.txt to report-2024.txt",
  "what alerts fired in grafana last night"
]
