/**
 * ToolCatalog: naming, the LLM function definitions of both routing modes, and ranking.
 * The ranking fixtures are the real tool lists of server-filesystem and server-memory (as they
 * list themselves, schemas reduced to property names) plus a few look-alike distractors.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Tool } from "../../../src/protocol/Mcp.js"
import {
  backendFunctions,
  buildCatalog,
  exposedName,
  prepareRanking,
  rank,
  rankEntries,
  toolFunctions,
  type CatalogEntry,
  type RankContext
} from "../../../src/catalog/ToolCatalog.js"
import { analyzeQuery, MAX_QUERY_ASPECTS } from "../../../src/catalog/Analysis.js"

const NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/

const tool = (name: string, description: string, properties: ReadonlyArray<string> = []): Tool => ({
  name,
  description,
  inputSchema: {
    type: "object",
    properties: Object.fromEntries(properties.map((p) => [p, { type: "string" }])),
    required: properties.slice(0, 1)
  }
})

const filesystemTools: ReadonlyArray<Tool> = [
  tool("read_file", "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.", [
    "path",
    "tail",
    "head"
  ]),
  tool(
    "read_text_file",
    "Read the complete contents of a file from the file system as text. Handles various text encodings and provides detailed error messages if the file cannot be read. Use this tool when you need to examine the contents of a single file. Use the 'head' parameter to read only the first N lines of a file, or the 'tail' parameter to read only the last N lines of a file. Operates on the file as text regardless of extension. Only works within allowed directories.",
    ["path", "tail", "head"]
  ),
  tool(
    "read_media_file",
    "Read a file and return it as a base64-encoded content block with its MIME type. Image and audio files are returned as image/audio content; any other file type is returned as an embedded resource. Only works within allowed directories.",
    ["path"]
  ),
  tool(
    "read_multiple_files",
    "Read the contents of multiple files simultaneously. This is more efficient than reading files one by one when you need to analyze or compare multiple files. Each file's content is returned with its path as a reference. Failed reads for individual files won't stop the entire operation. Only works within allowed directories.",
    ["paths"]
  ),
  tool(
    "write_file",
    "Create a new file or completely overwrite an existing file with new content. Use with caution as it will overwrite existing files without warning. Handles text content with proper encoding. Only works within allowed directories.",
    ["path", "content"]
  ),
  tool(
    "edit_file",
    "Make line-based edits to a text file. Each edit replaces exact line sequences with new content. Returns a git-style diff showing the changes made. Only works within allowed directories.",
    ["path", "edits", "dryRun"]
  ),
  tool(
    "create_directory",
    "Create a new directory or ensure a directory exists. Can create multiple nested directories in one operation. If the directory already exists, this operation will succeed silently. Perfect for setting up directory structures for projects or ensuring required paths exist. Only works within allowed directories.",
    ["path"]
  ),
  tool(
    "list_directory",
    "Get a detailed listing of all files and directories in a specified path. Results clearly distinguish between files and directories with [FILE] and [DIR] prefixes. This tool is essential for understanding directory structure and finding specific files within a directory. Only works within allowed directories.",
    ["path"]
  ),
  tool(
    "list_directory_with_sizes",
    "Get a detailed listing of all files and directories in a specified path, including sizes. Results clearly distinguish between files and directories with [FILE] and [DIR] prefixes. This tool is useful for understanding directory structure and finding specific files within a directory. Only works within allowed directories.",
    ["path", "sortBy"]
  ),
  tool(
    "directory_tree",
    "Get a recursive tree view of files and directories as a JSON structure. Each entry includes 'name', 'type' (file/directory), and 'children' for directories. Files have no children array, while directories always have a children array (which may be empty). The output is formatted with 2-space indentation for readability. Only works within allowed directories.",
    ["path", "excludePatterns"]
  ),
  tool(
    "move_file",
    "Move or rename files and directories. Can move files between directories and rename them in a single operation. If the destination exists, the operation will fail. Works across different directories and can be used for simple renaming within the same directory. Both source and destination must be within allowed directories.",
    ["source", "destination"]
  ),
  tool(
    "search_files",
    "Recursively search for files and directories matching a pattern. The patterns should be glob-style patterns that match paths relative to the working directory. Use pattern like '*.ext' to match files in current directory, and '**/*.ext' to match files in all subdirectories. Returns full paths to all matching items. Great for finding files when you don't know their exact location. Only searches within allowed directories.",
    ["path", "pattern", "excludePatterns"]
  ),
  tool(
    "get_file_info",
    "Retrieve detailed metadata about a file or directory. Returns comprehensive information including size, creation time, last modified time, permissions, and type. This tool is perfect for understanding file characteristics without reading the actual content. Only works within allowed directories.",
    ["path"]
  ),
  tool(
    "list_allowed_directories",
    "Returns the list of directories that this server is allowed to access. Subdirectories within these allowed directories are also accessible. Use this to understand which directories and their nested paths are available before trying to access files.",
    []
  )
]

const memoryTools: ReadonlyArray<Tool> = [
  tool("create_entities", "Create multiple new entities in the knowledge graph", ["entities"]),
  tool(
    "create_relations",
    "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice",
    ["relations"]
  ),
  tool("add_observations", "Add new observations to existing entities in the knowledge graph", ["observations"]),
  tool("delete_entities", "Delete multiple entities and their associated relations from the knowledge graph", ["entityNames"]),
  tool("delete_observations", "Delete specific observations from entities in the knowledge graph", ["deletions"]),
  tool("delete_relations", "Delete multiple relations from the knowledge graph", ["relations"]),
  tool("read_graph", "Read the entire knowledge graph", []),
  tool("search_nodes", "Search for nodes in the knowledge graph based on a query", ["query"]),
  tool("open_nodes", "Open specific nodes in the knowledge graph by their names", ["names"])
]

const distractors: ReadonlyArray<Tool> = [
  tool("get_file_contents", "Get the contents of a file or directory from a GitHub repository", [
    "owner",
    "repo",
    "path",
    "branch"
  ]),
  tool("create_issue", "Create a new issue in a GitHub repository", ["owner", "repo", "title", "body"]),
  tool("create_pull_request", "Create a new pull request in a GitHub repository", ["owner", "repo", "title", "head", "base"]),
  tool("slack_post_message", "Post a new message to a Slack channel", ["channel_id", "text"]),
  tool("browser_take_screenshot", "Take a screenshot of the current page.", ["filename"])
]

const catalog = buildCatalog([
  { backendId: "filesystem", tools: filesystemTools },
  { backendId: "memory", tools: memoryTools },
  { backendId: "github", tools: distractors.slice(0, 3) },
  { backendId: "slack", tools: distractors.slice(3, 4) },
  { backendId: "playwright", tools: distractors.slice(4) }
])
const exposedTools = catalog.entries.map((e) => e.tool)

const names = (entries: ReadonlyArray<CatalogEntry>) => entries.map((e) => e.name)
const positionOf = (query: string, name: string, context?: RankContext) =>
  names(rankEntries(catalog.entries, query, catalog.entries.length, context)).indexOf(name)

describe("exposedName", () => {
  it("namespaces a tool by its backend", () => {
    expect(exposedName("filesystem", "read_text_file")).toBe("filesystem__read_text_file")
    expect(exposedName("everything", "get-sum")).toBe("everything__get-sum")
  })

  it("replaces characters outside [a-zA-Z0-9_-] with _", () => {
    expect(exposedName("my.backend", "tool name/with:chars")).toBe("my_backend__tool_name_with_chars")
    // one astral character is one _
    expect(exposedName("b", "say\u{1F600}hi")).toBe("b__say_hi")
    expect(exposedName("b", "caf\u00e9")).toBe("b__caf_")
  })

  it("cuts an over-long name to 64 characters with a stable hash of the full name", () => {
    const long = exposedName("backend", "x".repeat(100))
    expect(long).toHaveLength(64)
    expect(long).toMatch(NAME_PATTERN)
    expect(long).toMatch(/^backend__x+_[0-9a-f]{6}$/)
    expect(exposedName("backend", "x".repeat(100))).toBe(long)
    // same first 57 characters, different tails: different names
    expect(exposedName("backend", `${"x".repeat(100)}y`)).not.toBe(long)
    // exactly 64 is kept as it is
    const exact = "t".repeat(64 - "backend__".length)
    expect(exposedName("backend", exact)).toBe(`backend__${exact}`)
    // one past it, and every length just above: cut and hashed, never let through
    for (let length = 65; length <= 72; length++) {
      const name = exposedName("backend", "t".repeat(length - "backend__".length))
      expect(name).toHaveLength(64)
      expect(name).toMatch(/_[0-9a-f]{6}$/)
    }
  })
})

describe("buildCatalog", () => {
  it("keeps backends and tools in the given order", () => {
    expect(names(catalog.entries).slice(0, 3)).toEqual([
      "filesystem__read_file",
      "filesystem__read_text_file",
      "filesystem__read_media_file"
    ])
    expect(catalog.entries).toHaveLength(filesystemTools.length + memoryTools.length + distractors.length)
    expect(catalog.entries.at(-1)?.name).toBe("playwright__browser_take_screenshot")
  })

  it("exposes the tool with a prefixed description, its inputSchema and other fields untouched", () => {
    const original: Tool = {
      name: "read.me",
      title: "Read me",
      description: "Reads it.",
      inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"], $schema: "x" },
      annotations: { readOnlyHint: true }
    }
    const [entry] = buildCatalog([{ backendId: "fs", tools: [original] }]).entries
    expect(entry?.name).toBe("fs__read_me")
    expect(entry?.backendId).toBe("fs")
    expect(entry?.toolName).toBe("read.me")
    expect(entry?.tool).toEqual({
      name: "fs__read_me",
      title: "Read me",
      description: "[fs] Reads it.",
      inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"], $schema: "x" },
      annotations: { readOnlyHint: true }
    })
    expect(entry?.tool.inputSchema).toBe(original.inputSchema)
    // the backend's own tool object is not touched
    expect(original.name).toBe("read.me")
    expect(original.description).toBe("Reads it.")
  })

  it("prefixes even a tool without a description", () => {
    const [entry] = buildCatalog([{ backendId: "fs", tools: [{ name: "x", inputSchema: { type: "object" } }] }]).entries
    expect(entry?.tool.description).toBe("[fs] ")
  })

  it("indexes entries by exposed name", () => {
    const entry = catalog.byName.get("memory__create_entities")
    expect(entry?.backendId).toBe("memory")
    expect(entry?.toolName).toBe("create_entities")
    expect(catalog.byName.size).toBe(catalog.entries.length)
  })

  it("resolves collisions deterministically: the first keeps the name, later ones get a hash", () => {
    const backends = [
      {
        backendId: "a",
        tools: [tool("x.y", "first"), tool("x_y", "second"), tool("x y", "third"), tool("x.y", "dup"), tool("_z", "")]
      },
      // "a_" + "__" + "z" and "a" + "__" + "_z" are the same name
      { backendId: "a_", tools: [tool("z", "another backend, the same name")] }
    ]
    const built = buildCatalog(backends)
    const exposed = names(built.entries)
    expect(exposed[0]).toBe("a__x_y")
    expect(exposed[4]).toBe("a___z")
    expect(new Set(exposed).size).toBe(exposed.length)
    for (const name of exposed) expect(name).toMatch(NAME_PATTERN)
    for (const name of exposed.slice(1, 4)) expect(name).toMatch(/^a__x_y_[0-9a-f]{6}$/)
    expect(exposed[5]).toMatch(/^a___z_[0-9a-f]{6}$/)
    expect(names(buildCatalog(backends).entries)).toEqual(exposed)
    // each entry still routes to its own backend tool
    expect(built.entries.map((e) => [e.backendId, e.toolName])).toEqual([
      ["a", "x.y"],
      ["a", "x_y"],
      ["a", "x y"],
      ["a", "x.y"],
      ["a", "_z"],
      ["a_", "z"]
    ])
    expect(built.byName.get(exposed[5] ?? "")?.backendId).toBe("a_")
  })

  it("never gives a later tool's plain name to an earlier colliding one", () => {
    const suffixed = buildCatalog([{ backendId: "b", tools: [tool("t.1", ""), tool("t_1", "")] }]).entries[1]?.name ?? ""
    expect(suffixed).toMatch(/^b__t_1_[0-9a-f]{6}$/)
    // a third tool whose plain name is that suffixed name keeps it; the colliding one moves on
    const exposed = names(
      buildCatalog([{ backendId: "b", tools: [tool("t.1", ""), tool("t_1", ""), tool(suffixed.slice("b__".length), "")] }])
        .entries
    )
    expect(exposed[2]).toBe(suffixed)
    expect(new Set(exposed).size).toBe(3)
  })

  it("keeps over-long names unique", () => {
    const prefix = "a_very_long_tool_name_that_goes_on_and_on_and_on_and_on_and_on"
    const [one, two] = names(
      buildCatalog([{ backendId: "backend", tools: [tool(`${prefix}_1`, ""), tool(`${prefix}_2`, "")] }]).entries
    )
    expect(one).toHaveLength(64)
    expect(two).toHaveLength(64)
    expect(one).not.toBe(two)
  })
})

describe("toolFunctions (routing: tool)", () => {
  it("makes one function per entry, named as exposed, with its description and schema", () => {
    const functions = toolFunctions(catalog.entries)
    expect(functions.map((f) => f.function.name)).toEqual(names(catalog.entries))
    const write = functions.find((f) => f.function.name === "filesystem__write_file")
    expect(write?.type).toBe("function")
    expect(write?.function.description).toMatch(/^\[filesystem\] Create a new file/)
    expect(write?.function.parameters).toEqual({
      type: "object",
      properties: { path: { type: "string" }, content: { type: "string" } },
      required: ["path"]
    })
  })

  it("adapts the schema only as far as Chat Completions requires", () => {
    const inputSchema = {
      $schema: "http://json-schema.org/draft-07/schema#",
      required: ["a"],
      additionalProperties: false,
      description: "kept"
    }
    const built = buildCatalog([
      {
        backendId: "b",
        tools: [
          { name: "t", description: "d", inputSchema },
          { name: "u", inputSchema: { type: "object", properties: { x: { type: "number" } } } }
        ]
      }
    ])
    const [t, u] = toolFunctions(built.entries)
    expect(t?.function.parameters).toEqual({
      type: "object",
      properties: {},
      required: ["a"],
      additionalProperties: false,
      description: "kept"
    })
    expect(u?.function.parameters).toEqual({ type: "object", properties: { x: { type: "number" } } })
    // the backend's schema is not mutated
    expect(inputSchema).toEqual({
      $schema: "http://json-schema.org/draft-07/schema#",
      required: ["a"],
      additionalProperties: false,
      description: "kept"
    })
  })

  it("keeps descriptions within the API's 1024 characters", () => {
    const built = buildCatalog([{ backendId: "b", tools: [tool("t", "w ".repeat(2000))] }])
    const description = toolFunctions(built.entries)[0]?.function.description ?? ""
    expect(description.length).toBeLessThanOrEqual(1024)
    expect(description.startsWith("[b] w w")).toBe(true)
  })
})

describe("backendFunctions (routing: backend)", () => {
  const parameters = {
    type: "object",
    properties: {
      mcp_method: { type: "string", description: expect.stringContaining(`"tools/call"`) },
      mcp_params: { type: "object", description: expect.stringContaining(`"arguments"`) }
    },
    required: ["mcp_method", "mcp_params"]
  }

  it("makes one function per backend named by its id with {mcp_method, mcp_params}", () => {
    const functions = backendFunctions([
      { backendId: "filesystem", tools: filesystemTools },
      { backendId: "memory", description: "A knowledge graph that remembers people and facts.", tools: memoryTools }
    ])
    expect(functions.map((f) => f.function.name)).toEqual(["filesystem", "memory"])
    for (const f of functions) {
      expect(f.type).toBe("function")
      expect(f.function.parameters).toEqual(parameters)
    }
    expect(functions[1]?.function.description).toBe("A knowledge graph that remembers people and facts.")
    // the tool names the model may put in mcp_params.name
    expect(functions[1]?.function.parameters?.properties).toMatchObject({
      mcp_params: { description: expect.stringContaining("create_entities, create_relations") }
    })
  })

  it("generates a description from the backend's tools when the config has none", () => {
    const backend = {
      backendId: "fs",
      tools: [
        tool("read_text_file", "", ["path", "tail", "head"]),
        {
          name: "write_file",
          inputSchema: { type: "object", properties: { path: {}, content: {} }, required: ["path", "content"] }
        },
        { name: "list_allowed_directories", inputSchema: { type: "object" } }
      ]
    }
    const description = backendFunctions([backend])[0]?.function.description ?? ""
    expect(description).toContain(`"tools/call"`)
    expect(description).toContain("read_text_file(path, tail?, head?)")
    expect(description).toContain("write_file(path, content)")
    expect(description).toContain("list_allowed_directories()")
  })

  it("keeps a generated description under 1000 characters however many tools there are", () => {
    const many = Array.from({ length: 200 }, (_, i) => tool(`tool_number_${i}`, "", ["alpha", "beta", "gamma"]))
    const description = backendFunctions([{ backendId: "big", tools: many }])[0]?.function.description ?? ""
    expect(description.length).toBeLessThanOrEqual(1000)
    expect(description).toContain("tool_number_0")
    expect(description).toMatch(/\(\d+ more\)\.$/)
    // a backend with fewer tools gets full signatures
    const few = backendFunctions([{ backendId: "few", tools: many.slice(0, 3) }])[0]?.function.description ?? ""
    expect(few).toContain("tool_number_2(alpha, beta?, gamma?)")
  })

  it("describes a backend that lists no tools yet", () => {
    const [f] = backendFunctions([{ backendId: "empty", tools: [] }])
    expect(f?.function.name).toBe("empty")
    expect(f?.function.description).toContain(`"empty"`)
    expect(f?.function.parameters).toEqual(parameters)
  })
})

describe("rank", () => {
  it("reads a bounded prefix of the query and context: megabytes of junk after it change nothing", () => {
    const tools: Array<Tool> = [
      { name: "read_file", description: "Read a file", inputSchema: { type: "object" } },
      { name: "list_directory", description: "List a directory", inputSchema: { type: "object" } },
      { name: "search_files", description: "Search for files matching a pattern", inputSchema: { type: "object" } }
    ]
    const names = (q: string, context?: Parameters<typeof rank>[3]) => rank(tools, q, 3, context).map((t) => t.name)
    const query = "show me what is in the src folder"
    const junk = ` ${".".repeat(500_000)} read search file ${"a.".repeat(300_000)} https://${"b".repeat(100_000)}`
    expect(names(query + junk)).toEqual(names(query))
    expect(names(query, { selectionText: "x" })).toEqual(names(query, { selectionText: `x${" read file".repeat(100_000)}` }))
  })

  it(`reads a query's first ${MAX_QUERY_ASPECTS} words: a word after as many others is not read`, () => {
    const tools: Array<Tool> = [
      { name: "pay_invoice", description: "Pay an invoice", inputSchema: { type: "object" } },
      { name: "tune_guitar", description: "Tune a guitar", inputSchema: { type: "object" } }
    ]
    // Distinct words no tool knows (w0 ... are not read as numbers: each has a letter).
    const filler = Array.from({ length: MAX_QUERY_ASPECTS }, (_, i) => `zq${i.toString(36)}x`).join(" ")
    expect(rank(tools, `guitar ${filler}`, 1).map((t) => t.name)).toEqual(["tune_guitar"])
    // The same word past the bound: nothing of the query matches, the tools keep their listed order.
    expect(rank(tools, `${filler} guitar`, 1).map((t) => t.name)).toEqual(["pay_invoice"])
    expect(analyzeQuery(`${filler} ${filler.toUpperCase()} more words`, null).aspects.length).toBe(MAX_QUERY_ASPECTS)
  })

  const cases: ReadonlyArray<readonly [query: string, expected: string]> = [
    ["make a new folder called assets", "filesystem__create_directory"],
    ["ls", "filesystem__list_directory"],
    ["mkdir build/output", "filesystem__create_directory"],
    ["cat package.json", "filesystem__read_text_file"],
    ["save this text to notes/todo.txt", "filesystem__write_file"],
    ["rename utils.js to helpers.js", "filesystem__move_file"],
    ["find all markdown files in the project", "filesystem__search_files"],
    ["grep for *.spec.ts", "filesystem__search_files"],
    ["show the project structure as a tree", "filesystem__directory_tree"],
    ["how big is yarn.lock and when was it modified", "filesystem__get_file_info"],
    ["forget the entity Charlie", "memory__delete_entities"],
    ["note that Alice prefers TypeScript", "memory__add_observations"],
    ["link Bob to Acme with a works_at relation", "memory__create_relations"],
    ["search memory for anything about kubernetes", "memory__search_nodes"],
    ["open an issue on GitHub about the login bug", "github__create_issue"]
  ]
  for (const [query, expected] of cases) {
    it(`finds ${expected} in the top 3 for ${JSON.stringify(query)}`, () => {
      expect(names(rankEntries(catalog.entries, query, 3))).toContain(expected)
    })
  }

  it("reads an SQL statement as a database query, its words as the argument", () => {
    const withDatabase = buildCatalog([
      { backendId: "postgres", tools: [tool("query", "Run a read-only SQL query", ["sql"])] },
      { backendId: "crm", tools: [tool("count_users", "Count the users of a team", ["team"])] },
      { backendId: "filesystem", tools: filesystemTools }
    ])
    expect(names(rankEntries(withDatabase.entries, "run SELECT count(*) FROM users", 1))).toEqual(["postgres__query"])
  })

  it("reads a path ending in a slash as a folder", () => {
    expect(positionOf("which files live in scripts/?", "filesystem__list_directory")).toBe(0)
  })

  it("returns k tools, or all of them ranked when there are fewer", () => {
    expect(rankEntries(catalog.entries, "read a file", 3)).toHaveLength(3)
    expect(rankEntries(catalog.entries, "read a file", 1000)).toHaveLength(catalog.entries.length)
    expect(rankEntries(catalog.entries, "read a file", Infinity)).toHaveLength(catalog.entries.length)
    expect(rankEntries(catalog.entries, "read a file", 2.7)).toHaveLength(2)
    expect(rankEntries(catalog.entries, "read a file", 0)).toEqual([])
    expect(rankEntries(catalog.entries, "read a file", -1)).toEqual([])
    expect(rankEntries(catalog.entries, "read a file", Number.NaN)).toEqual([])
    expect(rankEntries([], "read a file", 5)).toEqual([])
    // every tool exactly once
    const all = names(rankEntries(catalog.entries, "read a file", catalog.entries.length))
    expect([...all].sort()).toEqual(names(catalog.entries).sort())
  })

  it("returns the caller's own objects", () => {
    const [best] = rankEntries(catalog.entries, "create a directory", 1)
    expect(catalog.entries).toContain(best)
    const [bestTool] = rank(filesystemTools, "create a directory", 1)
    expect(filesystemTools).toContain(bestTool)
    expect(bestTool?.name).toBe("create_directory")
  })

  it("is deterministic, whatever array holds the same tools", () => {
    const query = "show me the files in this folder"
    const first = names(rankEntries(catalog.entries, query, 10))
    expect(names(rankEntries(catalog.entries, query, 10))).toEqual(first)
    expect(names(rankEntries([...catalog.entries], query, 10))).toEqual(first)
  })

  it("keeps the listed order when nothing matches", () => {
    expect(names(rankEntries(catalog.entries, "zzzz qqqq", 4))).toEqual(names(catalog.entries.slice(0, 4)))
    expect(names(rankEntries(catalog.entries, "", 4))).toEqual(names(catalog.entries.slice(0, 4)))
  })

  it("does not throw on empty or odd queries", () => {
    const odd = [
      "",
      "   ",
      "!!!",
      "(*[",
      "\\",
      "'",
      `"unterminated`,
      "\u{1F600}\u{1F600}",
      "x".repeat(100_000),
      "a/b/c/",
      "*",
      "2+2",
      "https://"
    ]
    const context: RankContext = { activeDocumentURI: null, currentWorkingDirectory: null, selectionText: null }
    for (const query of odd) {
      expect(rankEntries(catalog.entries, query, 5)).toHaveLength(5)
      expect(rank(exposedTools, query, 5, context)).toHaveLength(5)
    }
    // a non-string from an untyped caller
    expect(rankEntries(catalog.entries, undefined as unknown as string, 2)).toHaveLength(2)
  })

  it("ranks exposed MCP tools the same as catalog entries", () => {
    const query = "put a new entity for Apollo in the knowledge graph"
    expect(rank(exposedTools, query, 8).map((t) => t.name)).toEqual(names(rankEntries(catalog.entries, query, 8)))
  })

  it("uses the IDE context as a hint", () => {
    const query = "show me this"
    const withoutContext = positionOf(query, "filesystem__read_media_file")
    const withContext = positionOf(query, "filesystem__read_media_file", { activeDocumentURI: "file:///work/assets/logo.png" })
    expect(withContext).toBeLessThan(withoutContext)
    expect(withContext).toBeLessThan(3)
    // with a text document open, a file tool rather than a memory one comes first
    const [best] = rankEntries(catalog.entries, "what does this contain", 1, { activeDocumentURI: "file:///work/src/main.ts" })
    expect(best?.backendId).toBe("filesystem")
  })

  it("puts a tool named outright first", () => {
    expect(names(rankEntries(catalog.entries, "use list_allowed_directories please", 1))).toEqual([
      "filesystem__list_allowed_directories"
    ])
    expect(names(rankEntries(catalog.entries, "call memory__read_graph", 1))).toEqual(["memory__read_graph"])
  })

  it("prefers a current tool to its deprecated twin, and not deleting when nothing is to be deleted", () => {
    expect(positionOf("read the file notes.txt", "filesystem__read_text_file")).toBeLessThan(
      positionOf("read the file notes.txt", "filesystem__read_file")
    )
    expect(positionOf("connect Alice and Bob", "memory__create_relations")).toBeLessThan(
      positionOf("connect Alice and Bob", "memory__delete_relations")
    )
  })

  it("sees tools added to an array after it was first ranked", () => {
    const entries = [...catalog.entries]
    prepareRanking(entries)
    expect(names(rankEntries(entries, "post a message in the team chat", 1))).toEqual(["slack__slack_post_message"])
    const extra = buildCatalog([{ backendId: "chat", tools: [tool("send_chat_message", "Send a chat message to a team room")] }])
    entries.push(...extra.entries)
    expect(names(rankEntries(entries, "send a chat message to the team room", 1))).toEqual(["chat__send_chat_message"])
  })
})
