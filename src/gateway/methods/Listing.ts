/**
 * Many tools: what `tools/list` gives a client that cannot take the whole catalog. A catalog larger
 * than `maxListedTools` (the client's `initializationOptions`, else its profile's, else the
 * gateway's) is listed as the gateway's own tools, `agentify_search_tools {query, limit?}` and
 * `agentify_call_tool {name, arguments}` beside `agentify_orchestrate` and `agentify_run_code`,
 * then the tools the profile lists always (`alwaysListTools`), then those this session's searches
 * found, the most recently found first; the least recently found leave when the list is full. A
 * catalog that fits is listed whole, as it always was.
 *
 * A search ranks what the session may see with the task ranking (catalog/TaskRank, with the
 * semantic one when `embeddings` are configured) and returns each matching tool's name, description
 * and inputSchema, only tools that match: a search that finds nothing says so, names the backends
 * still starting (whose tools it could not see), and adds nothing to the list. `agentify_call_tool`
 * is a client's own `tools/call` of the tool it names (the pipeline in every stage, `via` "client"),
 * so neither reaches anything the session could not.
 */
import { Result } from "effect"
import type { CatalogEntry } from "../../catalog/ToolCatalog.js"
import { admits, matchingTask } from "../../catalog/ToolCatalog.js"
import type { Profile, ResolvedConfig } from "../../config/Config.js"
import { InvalidParams } from "../../protocol/Errors.js"
import type { Tool } from "../../protocol/Mcp.js"
import { isObject } from "../../json/Json.js"
import type { Session } from "../session/Session.js"

export const SEARCH_TOOL_NAME = "agentify_search_tools"
export const CALL_TOOL_NAME = "agentify_call_tool"

/** What one search returns by default, and at most. */
export const DEFAULT_SEARCH_LIMIT = 10
export const MAX_SEARCH_LIMIT = 50
/** The longest query a search takes: a task's description fits; a pasted document is refused, not cut. */
export const MAX_QUERY_CHARS = 2_000

export const SEARCH_TOOL: Tool = {
  name: SEARCH_TOOL_NAME,
  description:
    "Finds the tools of the gateway's MCP servers for a task: describe what you want done, in plain words. Returns the best matches with their name, description and inputSchema (only tools that match: none when nothing does); they are listed from then on (the client is told with notifications/tools/list_changed), and any of them can be called directly or through agentify_call_tool.",
  inputSchema: {
    type: "object",
    properties: {
      query: { type: "string", description: "What the tools should do, in plain words.", maxLength: MAX_QUERY_CHARS },
      limit: {
        type: "integer",
        description: `How many tools to return (default ${DEFAULT_SEARCH_LIMIT}).`,
        minimum: 1,
        maximum: MAX_SEARCH_LIMIT
      }
    },
    required: ["query"]
  },
  annotations: { readOnlyHint: true, openWorldHint: false }
}

export const CALL_TOOL: Tool = {
  name: CALL_TOOL_NAME,
  description:
    "Calls a tool of the gateway's MCP servers by the name agentify_search_tools gave, with its arguments (an object matching its inputSchema). The same call as calling the tool itself: the same checks, confirmations and limits apply.",
  inputSchema: {
    type: "object",
    properties: {
      name: { type: "string", description: "The tool's name, as agentify_search_tools returned it." },
      arguments: { type: "object", description: "The tool's arguments, as its inputSchema describes them." }
    },
    required: ["name"]
  }
}

/** The gateway's own tools by name: `agentify_call_tool` calls the catalog's tools, never these. */
export const isGatewayTool = (name: string, own: ReadonlyArray<string>): boolean =>
  name === SEARCH_TOOL_NAME || name === CALL_TOOL_NAME || own.includes(name)

/** The most tools this session's `tools/list` gives: its client's word, else its profile's, else the gateway's. */
export const limitOf = (session: Session, profile: Profile | undefined, config: ResolvedConfig): number =>
  session.maxListedTools ?? profile?.maxListedTools ?? config.maxListedTools

/**
 * The tools a session's searches found, least recently found first: at most as many as the list
 * has room for (the oldest leave). One per session: HTTP sessions never see each other's.
 */
export class Found {
  private readonly names = new Set<string>()

  /** `found` (best first) join as the most recent, the best of them last; the oldest leave beyond `room`. */
  add(found: ReadonlyArray<string>, room: number): void {
    for (const name of [...found].reverse()) {
      this.names.delete(name)
      this.names.add(name)
    }
    for (const name of this.names) {
      if (this.names.size <= Math.max(0, room)) break
      this.names.delete(name)
    }
  }

  /** The most recently found first. */
  recent(): ReadonlyArray<string> {
    return [...this.names].reverse()
  }
}

/**
 * The tools listed: `own` and the whole catalog when they fit `limit`; else `own` with the search
 * and call tools, then what the profile lists always, then what was found, within `limit` in all.
 */
export const listed = (
  own: ReadonlyArray<Tool>,
  catalog: ReadonlyArray<Tool>,
  limit: number,
  profile: Profile | undefined,
  found: Found
): ReadonlyArray<Tool> => {
  if (own.length + catalog.length <= limit) return [...own, ...catalog]
  const gateway = [SEARCH_TOOL, CALL_TOOL, ...own]
  const always = profile?.alwaysListTools ?? []
  const pinned = always.length === 0 ? [] : catalog.filter((t) => admits(always, undefined, t.name))
  const byName = new Map(catalog.map((t) => [t.name, t]))
  const pinnedNames = new Set(pinned.map((t) => t.name))
  const recent = found
    .recent()
    .filter((name) => !pinnedNames.has(name))
    .flatMap((name) => {
      const tool = byName.get(name)
      return tool === undefined ? [] : [tool]
    })
  return [...gateway, ...pinned, ...recent].slice(0, Math.max(limit, gateway.length))
}

/** Room for found tools in a list of `limit`: what the gateway's own and the always-listed leave. */
export const roomFor = (ownCount: number, catalog: ReadonlyArray<Tool>, limit: number, profile: Profile | undefined): number => {
  const always = profile?.alwaysListTools ?? []
  const pinned = always.length === 0 ? 0 : catalog.filter((t) => admits(always, undefined, t.name)).length
  return limit - ownCount - 2 - pinned
}

/** `agentify_search_tools`'s arguments, checked: a query of words, a limit in bounds. */
export const searchArguments = (
  args: unknown
): Result.Result<{ readonly query: string; readonly limit: number }, InvalidParams> => {
  const refuse = (issue: string) => Result.fail(new InvalidParams({ message: `Invalid params: ${issue}`, issues: [issue] }))
  if (args !== undefined && !isObject(args)) return refuse("arguments: must be an object")
  const query = args?.query
  const limit = args?.limit ?? DEFAULT_SEARCH_LIMIT
  if (typeof query !== "string") return refuse("query: must be a string saying what the tools should do")
  if (query.trim() === "") return refuse("query: must not be empty: say what the tools should do")
  if (query.length > MAX_QUERY_CHARS) {
    return refuse(`query: at most ${MAX_QUERY_CHARS} characters (this one has ${query.length}): say what the tools should do`)
  }
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > MAX_SEARCH_LIMIT) {
    return refuse(`limit: must be a whole number from 1 to ${MAX_SEARCH_LIMIT}`)
  }
  return Result.succeed({ query, limit })
}

/** `agentify_call_tool`'s arguments, checked: a catalog tool's name (none of the gateway's own) and an object. */
export const callArguments = (
  args: unknown,
  own: ReadonlyArray<string>
): Result.Result<{ readonly name: string; readonly arguments: Readonly<Record<string, unknown>> | undefined }, InvalidParams> => {
  const refuse = (issue: string) => Result.fail(new InvalidParams({ message: `Invalid params: ${issue}`, issues: [issue] }))
  if (args !== undefined && !isObject(args)) return refuse("arguments: must be an object")
  const name = args?.name
  const inner = args?.arguments
  if (typeof name !== "string" || name === "")
    return refuse("name: is required (a tool's name, as agentify_search_tools gave it)")
  if (isGatewayTool(name, own)) {
    return refuse(
      `name: '${name}' is one of the gateway's own tools; ${CALL_TOOL_NAME} calls the tools of its servers (call '${name}' directly)`
    )
  }
  if (inner !== undefined && !isObject(inner))
    return refuse(`arguments.arguments: must be an object (the arguments of '${name}')`)
  return Result.succeed({ name, arguments: inner })
}

/**
 * What a search returns: the `limit` tools of `entries` best for `query` by the task ranking, fused
 * with `similar` (the semantic ranking, when configured), only tools that match (none when nothing
 * does). Also what `npm run eval:routing` measures.
 */
export const search = (
  entries: ReadonlyArray<CatalogEntry>,
  query: string,
  limit: number,
  similar: ReadonlyArray<CatalogEntry> = []
): ReadonlyArray<CatalogEntry> => matchingTask(entries, query, limit, undefined, [], similar)

/** One tool of a search's answer. */
export interface FoundTool {
  readonly name: string
  readonly description: string
  readonly inputSchema: unknown
}

/**
 * A search's answer: the tools found, in the text (JSON) and in `structuredContent`; when none
 * matched, a sentence saying so and naming the backends still `starting` (whose tools no search
 * sees yet), in the text and as `structuredContent.message` and `.starting`.
 */
export const answer = (tools: ReadonlyArray<FoundTool>, stillStarting: ReadonlyArray<string>) => {
  if (tools.length > 0) {
    const found = { tools, ...(stillStarting.length === 0 ? {} : { stillStarting: [...stillStarting] }) }
    return { content: [{ type: "text", text: JSON.stringify(found, null, 2) }], structuredContent: found }
  }
  const message =
    stillStarting.length === 0
      ? "No tool matches this query. Describe what the tool should do in other words."
      : `No tool matches this query. Still starting, their tools not searchable yet: ${stillStarting.join(", ")}; search again once they are ready, or describe what the tool should do in other words.`
  return {
    content: [{ type: "text", text: message }],
    structuredContent: { tools: [], message, stillStarting: [...stillStarting] }
  }
}
