/**
 * Listing's rules as functions: the list within its limit whatever is found or pinned, the found
 * set bounded (the least recently found leave), a catalog that fits listed whole, and what the
 * search and call tools refuse.
 */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import * as Listing from "../../../../src/gateway/methods/Listing.js"
import type { Tool } from "../../../../src/protocol/Mcp.js"

const tool = (name: string): Tool => ({ name, description: `${name} does a thing`, inputSchema: { type: "object" } })
const catalog = Array.from({ length: 200 }, (_, i) => tool(`fx__tool_${i}`))
const own = [tool("agentify_orchestrate"), tool("agentify_run_code")]
const names = (tools: ReadonlyArray<Tool>) => tools.map((t) => t.name)

describe("Listing", () => {
  it("lists a catalog that fits as it is, the gateway's own first", () => {
    const small = catalog.slice(0, 62)
    expect(names(Listing.listed(own, small, 64, undefined, new Listing.Found()))).toEqual(names([...own, ...small]))
  })

  it("one tool more than fits: the search and call tools beside the gateway's own, nothing else yet", () => {
    expect(names(Listing.listed(own, catalog.slice(0, 63), 64, undefined, new Listing.Found()))).toEqual([
      "agentify_search_tools",
      "agentify_call_tool",
      "agentify_orchestrate",
      "agentify_run_code"
    ])
  })

  it("keeps the found set within the room left, the least recently found leaving, the best of a search first", () => {
    const found = new Listing.Found()
    const room = Listing.roomFor(own.length, catalog, 10, undefined)
    expect(room).toBe(6)
    found.add(["fx__tool_1", "fx__tool_2", "fx__tool_3", "fx__tool_4"], room)
    found.add(["fx__tool_10", "fx__tool_11", "fx__tool_12"], room)
    // The second search's three, best first, then the first's best three: tool_4 left.
    expect(found.recent()).toEqual(["fx__tool_10", "fx__tool_11", "fx__tool_12", "fx__tool_1", "fx__tool_2", "fx__tool_3"])
    // Found again: it is the most recent once more.
    found.add(["fx__tool_3"], room)
    expect(found.recent()[0]).toBe("fx__tool_3")
    for (let i = 0; i < 1_000; i++) found.add([`fx__tool_${i % 200}`], room)
    expect(found.recent()).toHaveLength(room)
    expect(Listing.listed(own, catalog, 10, undefined, found)).toHaveLength(10)
  })

  it("lists a profile's always-listed tools first, and never more than the limit in all", () => {
    const profile = { alwaysListTools: ["fx__tool_1?"] }
    const found = new Listing.Found()
    found.add(
      catalog.slice(100, 150).map((t) => t.name),
      Listing.roomFor(own.length, catalog, 16, profile)
    )
    const listed = names(Listing.listed(own, catalog, 16, profile, found))
    expect(listed).toHaveLength(16)
    expect(listed.slice(4, 14)).toEqual(Array.from({ length: 10 }, (_, i) => `fx__tool_1${i}`))
    expect(listed.slice(14)).toEqual(["fx__tool_100", "fx__tool_101"])
    // More pinned than there is room: cut at the limit still.
    expect(Listing.listed(own, catalog, 8, { alwaysListTools: ["**"] }, found)).toHaveLength(8)
  })

  it("a found tool that left the catalog is no longer listed", () => {
    const found = new Listing.Found()
    found.add(["fx__gone", "fx__tool_5"], 10)
    expect(names(Listing.listed(own, catalog, 10, undefined, found)).slice(4)).toEqual(["fx__tool_5"])
  })

  it("refuses what a search cannot take, and a call of the gateway's own tools or of non-object arguments", () => {
    const searchIssue = (args: unknown) =>
      Result.match(Listing.searchArguments(args), { onFailure: (e) => e.issues[0], onSuccess: () => undefined })
    expect(searchIssue({ query: "" })).toMatch(/must not be empty/)
    expect(searchIssue({ query: "a".repeat(Listing.MAX_QUERY_CHARS + 1) })).toMatch(/at most 2000 characters/)
    expect(searchIssue({ query: "ok", limit: Listing.MAX_SEARCH_LIMIT + 1 })).toMatch(/limit:/)
    expect(searchIssue([])).toMatch(/must be an object/)
    expect(Listing.searchArguments({ query: "ok" })).toEqual(Result.succeed({ query: "ok", limit: Listing.DEFAULT_SEARCH_LIMIT }))
    const callIssue = (args: unknown) =>
      Result.match(Listing.callArguments(args, ["agentify_orchestrate"]), {
        onFailure: (e) => e.issues[0],
        onSuccess: () => undefined
      })
    expect(callIssue({ name: "agentify_call_tool" })).toMatch(/gateway's own tools/)
    expect(callIssue({ name: "agentify_orchestrate" })).toMatch(/gateway's own tools/)
    expect(callIssue({ name: "fx__echo", arguments: [] })).toMatch(/must be an object/)
    expect(callIssue({ name: "fx__echo", arguments: { text: "x" } })).toBeUndefined()
  })
})
