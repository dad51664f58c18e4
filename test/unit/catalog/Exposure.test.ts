import { describe, expect, it } from "vitest"
import {
  admits,
  buildCatalog,
  describeConflict,
  inProfile,
  matchesGlob,
  ownToolName,
  resourceAdmitted
} from "../../../src/catalog/ToolCatalog.js"
import type { Tool } from "../../../src/protocol/Mcp.js"

const tool = (name: string, description = ""): Tool => ({ name, description, inputSchema: { type: "object" } })

describe("globs", () => {
  it("matches * within a segment, ** across, ? one character, the rest literally", () => {
    expect(matchesGlob("read_*", "read_text_file")).toBe(true)
    expect(matchesGlob("read_*", "write_file")).toBe(false)
    expect(matchesGlob("*_file", "read_text_file")).toBe(true)
    expect(matchesGlob("file:///docs/*", "file:///docs/a.md")).toBe(true)
    expect(matchesGlob("file:///docs/*", "file:///docs/sub/a.md")).toBe(false)
    expect(matchesGlob("file:///docs/**", "file:///docs/sub/a.md")).toBe(true)
    expect(matchesGlob("get-su?", "get-sum")).toBe(true)
    // regex characters are literal
    expect(matchesGlob("a.b", "aXb")).toBe(false)
    expect(matchesGlob("(x)+", "(x)+")).toBe(true)
    expect(matchesGlob("echo", "echo2")).toBe(false)
  })

  it("matches in one pass whatever the stars: a name built against a pattern cannot make it backtrack", () => {
    // As a RegExp (^[^/]*a[^/]*a...b$) this takes exponential time on a run of a's without the b.
    const pattern = `${"*a".repeat(12)}*b`
    expect(matchesGlob(pattern, "a".repeat(20_000))).toBe(false)
    expect(matchesGlob(pattern, `${"a".repeat(20_000)}b`)).toBe(true)
    expect(matchesGlob("**/x/**", `${"d/".repeat(5_000)}x/y`)).toBe(true)
    expect(matchesGlob("", "")).toBe(true)
    expect(matchesGlob("*", "")).toBe(true)
    expect(matchesGlob("?", "")).toBe(false)
  })

  it("lets deny win over allow, and everything through without lists", () => {
    expect(admits(undefined, undefined, "anything")).toBe(true)
    expect(admits(["read_*"], ["read_media_file"], "read_text_file")).toBe(true)
    expect(admits(["read_*"], ["read_media_file"], "read_media_file")).toBe(false)
    expect(admits(["read_*"], undefined, "write_file")).toBe(false)
    expect(admits([], undefined, "read_file")).toBe(false)
    expect(resourceAdmitted({ denyResources: ["**/secret*"] }, "file:///a/b/secret.txt")).toBe(false)
  })
})

describe("the catalog with exposure settings", () => {
  it("filters, renames and namespaces, calling the backend by its own name", () => {
    const catalog = buildCatalog([
      {
        backendId: "filesystem",
        tools: [tool("read_text_file", "Read a file"), tool("write_file"), tool("read_media_file")],
        exposure: {
          namespace: "fs",
          denyTools: ["read_media_file"],
          toolOverrides: { read_text_file: { name: "cat", description: "Print a file" } }
        }
      },
      { backendId: "memory", tools: [tool("read_graph")], exposure: { namespace: false } }
    ])
    expect(catalog.entries.map((e) => [e.name, e.backendId, e.toolName, e.tool.description])).toEqual([
      ["fs__cat", "filesystem", "read_text_file", "[filesystem] Print a file"],
      ["fs__write_file", "filesystem", "write_file", "[filesystem] "],
      ["read_graph", "memory", "read_graph", "[memory] "]
    ])
    expect(catalog.conflicts).toEqual([])
  })

  it("keeps a chosen name with the first backend and reports the other as a conflict", () => {
    const catalog = buildCatalog([
      { backendId: "a", tools: [tool("search")], exposure: { namespace: false } },
      { backendId: "b", tools: [tool("search"), tool("other")], exposure: { namespace: false } },
      { backendId: "c", tools: [tool("find")], exposure: { namespace: false, toolOverrides: { find: { name: "other" } } } }
    ])
    expect(catalog.entries.map((e) => `${e.backendId}:${e.name}`)).toEqual(["a:search", "b:other"])
    expect(catalog.conflicts.map(describeConflict)).toEqual([
      "the tool name 'search' of backend 'b' (its 'search') is also backend 'a''s (its 'search'): 'b''s is not exposed; give one backend a namespace or the tool a toolOverrides name",
      "the tool name 'other' of backend 'c' (its 'find') is also backend 'b''s (its 'other'): 'c''s is not exposed; give one backend a namespace or the tool a toolOverrides name"
    ])
  })

  it("maps an exposed name back to the backend's own, unless filtered or renamed away", () => {
    const exposure = { denyTools: ["write_*"], toolOverrides: { read_text_file: { name: "cat" } } }
    expect(ownToolName(exposure, "cat")).toBe("read_text_file")
    expect(ownToolName(exposure, "read_text_file")).toBeUndefined()
    expect(ownToolName(exposure, "write_file")).toBeUndefined()
    expect(ownToolName(exposure, "list_directory")).toBe("list_directory")
  })

  it("shows a profile only its backends' tools whose exposed names pass its globs, the same view each time", () => {
    const catalog = buildCatalog([
      { backendId: "fs", tools: [tool("read_file"), tool("write_file")] },
      { backendId: "mem", tools: [tool("read_graph"), tool("delete_entities")] }
    ])
    const profile = { allowTools: ["*__read_*", "mem__*"], denyTools: ["mem__delete_*"] }
    const view = inProfile(catalog, profile)
    expect(view.entries.map((e) => e.name)).toEqual(["fs__read_file", "mem__read_graph"])
    expect(inProfile(catalog, profile)).toBe(view)
    expect(inProfile(catalog, { backends: ["mem"] }).entries.map((e) => e.name)).toEqual([
      "mem__read_graph",
      "mem__delete_entities"
    ])
    expect(inProfile(catalog, undefined)).toBe(catalog)
  })
})
