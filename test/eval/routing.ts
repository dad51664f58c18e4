/**
 * Routing eval: how often the tool ranking (ToolCatalog.rankEntries) puts the right tool first, in
 * the top 5, and within the top k (maxToolsPerRequest, what the model is offered).
 *
 * The tools are the real ones of server-filesystem, server-memory and server-everything (listed by
 * spawning each over stdio, as the gateway would), plus distractors from servers people commonly
 * run beside them (GitHub, Slack, Playwright, Postgres, Jira, fetch, git), all namespaced by
 * buildCatalog. The queries, in queries.json, are phrased as an IDE user would, mostly not in the
 * tools' own words. Those marked `"split": "holdout"` were written after the ranking was tuned on the
 * others and never tuned on: their figures are the honest estimate. No network, no LLM.
 *
 *     npm run eval            a table and the misses at @1
 *     npm run eval -- --json  the figures as JSON on stdout
 *     npm run eval -- --live [--limit N]  the queries end to end with the configured model (live.ts)
 *     npm run eval -- --scale N  the same queries among N more synthetic tools (as a large gateway has)
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Tool } from "../../src/protocol/Mcp.js"
import { buildCatalog, type BackendTools, type RankContext } from "../../src/catalog/ToolCatalog.js"
import { rankTask } from "../../src/catalog/TaskRank.js"
import { syntheticBackends } from "../bench/catalog.js"

const K = 32 // the default maxToolsPerRequest
const here = dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)

interface Query {
  readonly query: string
  readonly expected: string
  readonly context?: RankContext
  /** "holdout": written after tuning, never tuned on; "fresh": a second such set, written before the synonym work. */
  readonly split?: "holdout" | "fresh"
}

// ---------------------------------------------------------------------------------------------
// The real servers' tools
// ---------------------------------------------------------------------------------------------

const binOf = (pkg: string): string => {
  const manifestPath = require.resolve(`${pkg}/package.json`)
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { bin: string | Record<string, string> }
  const bin = typeof manifest.bin === "string" ? manifest.bin : Object.values(manifest.bin)[0]
  if (bin === undefined) throw new Error(`${pkg} has no bin`)
  return join(dirname(manifestPath), bin)
}

const listTools = async (pkg: string, args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Array<Tool>> => {
  const client = new Client({ name: "mcp-agentify-eval", version: "0.0.0" })
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [binOf(pkg), ...args],
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: "ignore"
  })
  await client.connect(transport)
  try {
    const tools: Array<Tool> = []
    let cursor: string | undefined
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor })
      tools.push(...(page.tools as Array<Tool>))
      cursor = page.nextCursor
    } while (cursor !== undefined)
    return tools
  } finally {
    await client.close()
  }
}

// ---------------------------------------------------------------------------------------------
// Distractors: abridged from the real servers' tool lists
// ---------------------------------------------------------------------------------------------

type Prop = string | readonly [type: string, description: string]

const tool = (name: string, description: string, props: Record<string, Prop>, required: ReadonlyArray<string> = []): Tool => ({
  name,
  description,
  inputSchema: {
    type: "object",
    properties: Object.fromEntries(
      Object.entries(props).map(([key, p]) => [key, typeof p === "string" ? { type: p } : { type: p[0], description: p[1] }])
    ),
    required
  }
})

const distractors: ReadonlyArray<BackendTools> = [
  {
    backendId: "github",
    tools: [
      tool(
        "create_or_update_file",
        "Create or update a single file in a GitHub repository",
        {
          owner: "string",
          repo: "string",
          path: ["string", "Path where to create/update the file"],
          content: ["string", "Content of the file"],
          message: ["string", "Commit message"],
          branch: "string",
          sha: ["string", "SHA of the file being replaced (required when updating existing files)"]
        },
        ["owner", "repo", "path", "content", "message", "branch"]
      ),
      tool(
        "search_repositories",
        "Search for GitHub repositories",
        { query: ["string", "Search query (see GitHub search syntax)"], page: "number", perPage: "number" },
        ["query"]
      ),
      tool(
        "create_issue",
        "Create a new issue in a GitHub repository",
        {
          owner: "string",
          repo: "string",
          title: "string",
          body: "string",
          assignees: "array",
          labels: "array",
          milestone: "number"
        },
        ["owner", "repo", "title"]
      ),
      tool(
        "list_issues",
        "List issues in a GitHub repository with filtering options",
        {
          owner: "string",
          repo: "string",
          state: "string",
          labels: "array",
          sort: "string",
          direction: "string",
          since: "string"
        },
        ["owner", "repo"]
      ),
      tool(
        "create_pull_request",
        "Create a new pull request in a GitHub repository",
        {
          owner: "string",
          repo: "string",
          title: ["string", "Pull request title"],
          body: "string",
          head: ["string", "The name of the branch where your changes are implemented"],
          base: ["string", "The name of the branch you want the changes pulled into"],
          draft: "boolean"
        },
        ["owner", "repo", "title", "head", "base"]
      ),
      tool(
        "get_file_contents",
        "Get the contents of a file or directory from a GitHub repository",
        { owner: "string", repo: "string", path: ["string", "Path to the file or directory"], branch: "string" },
        ["owner", "repo", "path"]
      ),
      tool(
        "push_files",
        "Push multiple files to a GitHub repository in a single commit",
        {
          owner: "string",
          repo: "string",
          branch: "string",
          files: ["array", "Array of files to push"],
          message: ["string", "Commit message"]
        },
        ["owner", "repo", "branch", "files", "message"]
      ),
      tool(
        "create_branch",
        "Create a new branch in a GitHub repository",
        { owner: "string", repo: "string", branch: ["string", "Name for the new branch"], from_branch: "string" },
        ["owner", "repo", "branch"]
      ),
      tool(
        "list_commits",
        "Get list of commits of a branch in a GitHub repository",
        { owner: "string", repo: "string", sha: "string", page: "number", perPage: "number" },
        ["owner", "repo"]
      ),
      tool(
        "search_code",
        "Search for code across GitHub repositories",
        { q: "string", order: "string", page: "number", per_page: "number" },
        ["q"]
      ),
      tool(
        "add_issue_comment",
        "Add a comment to an existing issue",
        { owner: "string", repo: "string", issue_number: "number", body: "string" },
        ["owner", "repo", "issue_number", "body"]
      )
    ]
  },
  {
    backendId: "slack",
    tools: [
      tool(
        "slack_post_message",
        "Post a new message to a Slack channel",
        { channel_id: ["string", "The ID of the channel to post to"], text: ["string", "The message text to post"] },
        ["channel_id", "text"]
      ),
      tool("slack_list_channels", "List public channels in the workspace with pagination", { limit: "number", cursor: "string" }),
      tool("slack_get_channel_history", "Get recent messages from a channel", { channel_id: "string", limit: "number" }, [
        "channel_id"
      ]),
      tool(
        "slack_reply_to_thread",
        "Reply to a specific message thread in Slack",
        { channel_id: "string", thread_ts: "string", text: "string" },
        ["channel_id", "thread_ts", "text"]
      ),
      tool(
        "slack_add_reaction",
        "Add a reaction emoji to a message",
        { channel_id: "string", timestamp: "string", reaction: ["string", "The name of the emoji reaction (without ::)"] },
        ["channel_id", "timestamp", "reaction"]
      ),
      tool("slack_get_users", "Get a list of all users in the workspace with their basic profile information", {
        cursor: "string",
        limit: "number"
      })
    ]
  },
  {
    backendId: "playwright",
    tools: [
      tool("browser_navigate", "Navigate to a URL", { url: ["string", "The URL to navigate to"] }, ["url"]),
      tool(
        "browser_click",
        "Perform click on a web page",
        {
          element: ["string", "Human-readable element description used to obtain permission to interact with the element"],
          ref: ["string", "Exact target element reference from the page snapshot"]
        },
        ["element", "ref"]
      ),
      tool(
        "browser_type",
        "Type text into editable element",
        { element: "string", ref: "string", text: ["string", "Text to type into the element"], submit: "boolean" },
        ["element", "ref", "text"]
      ),
      tool(
        "browser_take_screenshot",
        "Take a screenshot of the current page. You can't perform actions based on the screenshot, use browser_snapshot for actions.",
        { filename: "string", fullPage: "boolean" }
      ),
      tool("browser_snapshot", "Capture accessibility snapshot of the current page, this is better than screenshot", {}),
      tool("browser_file_upload", "Upload one or multiple files", {
        paths: ["array", "The absolute paths to the files to upload"]
      })
    ]
  },
  {
    backendId: "postgres",
    tools: [tool("query", "Run a read-only SQL query", { sql: "string" }, ["sql"])]
  },
  {
    backendId: "jira",
    tools: [
      tool(
        "jira_create_issue",
        "Create a new Jira issue with optional Epic link or parent for subtasks",
        { project_key: "string", summary: "string", issue_type: "string", description: "string" },
        ["project_key", "summary", "issue_type"]
      ),
      tool(
        "jira_search",
        "Search Jira issues using JQL (Jira Query Language)",
        { jql: "string", fields: "string", limit: "number" },
        ["jql"]
      ),
      tool(
        "jira_transition_issue",
        "Transition a Jira issue to a new status",
        { issue_key: "string", transition_id: "string", comment: "string" },
        ["issue_key", "transition_id"]
      ),
      tool(
        "jira_add_comment",
        "Add a comment to a Jira issue",
        { issue_key: "string", comment: ["string", "Comment text in Markdown format"] },
        ["issue_key", "comment"]
      )
    ]
  },
  {
    backendId: "fetch",
    tools: [
      tool(
        "fetch",
        "Fetches a URL from the internet and optionally extracts its contents as markdown.",
        {
          url: "string",
          max_length: "number",
          start_index: "number",
          raw: ["boolean", "Get the actual HTML content of the requested page, without simplification."]
        },
        ["url"]
      )
    ]
  },
  {
    backendId: "git",
    tools: [
      tool("git_status", "Shows the working tree status", { repo_path: "string" }, ["repo_path"]),
      tool(
        "git_diff_unstaged",
        "Shows changes in the working directory that are not yet staged",
        { repo_path: "string", context_lines: "number" },
        ["repo_path"]
      ),
      tool("git_commit", "Records changes to the repository", { repo_path: "string", message: "string" }, [
        "repo_path",
        "message"
      ]),
      tool("git_log", "Shows the commit logs", { repo_path: "string", max_count: "number" }, ["repo_path"]),
      tool(
        "git_create_branch",
        "Creates a new branch from an optional base branch",
        { repo_path: "string", branch_name: "string", base_branch: "string" },
        ["repo_path", "branch_name"]
      )
    ]
  }
]

// ---------------------------------------------------------------------------------------------
// The eval
// ---------------------------------------------------------------------------------------------

/** A synthetic backend renamed when its id is taken, by the first free numbered suffix. */
const distinctFrom =
  (taken: Set<string>) =>
  (backend: BackendTools): BackendTools => {
    let id = backend.backendId
    for (let n = 2; taken.has(id); n++) id = `${backend.backendId}${n}`
    taken.add(id)
    return { ...backend, backendId: id }
  }

const main = async () => {
  const json = process.argv.includes("--json")
  if (process.argv.includes("--live")) {
    const limitAt = process.argv.indexOf("--limit")
    const limit = limitAt === -1 ? undefined : Number(process.argv[limitAt + 1])
    const queries = JSON.parse(readFileSync(join(here, "queries.json"), "utf8")) as Array<Query>
    const { runLive } = await import("./live.js")
    return runLive(queries, { json, ...(limit === undefined || !Number.isInteger(limit) ? {} : { limit }) })
  }
  const scratch = mkdtempSync(join(tmpdir(), "agentify-eval-"))
  try {
    const [filesystem, memory, everything] = await Promise.all([
      listTools("@modelcontextprotocol/server-filesystem", [scratch]),
      listTools("@modelcontextprotocol/server-memory", [], { MEMORY_FILE_PATH: join(scratch, "memory.jsonl") }),
      listTools("@modelcontextprotocol/server-everything", ["stdio"])
    ])
    const scaleAt = process.argv.indexOf("--scale")
    const scale = scaleAt === -1 ? 0 : Number(process.argv[scaleAt + 1])
    const realIds = new Set(["filesystem", "memory", "everything", ...distractors.map((d) => d.backendId)])
    const catalog = buildCatalog([
      { backendId: "filesystem", tools: filesystem },
      { backendId: "memory", tools: memory },
      { backendId: "everything", tools: everything },
      ...distractors,
      // The benchmark's deterministic synthetic servers (GitHub-, Slack-, database-like...), under
      // ids of their own: a gateway's backend ids are unique, so a synthetic "memory" server is "memory2".
      ...(Number.isInteger(scale) && scale > 0 ? syntheticBackends(scale).map(distinctFrom(realIds)) : [])
    ])
    const queries = JSON.parse(readFileSync(join(here, "queries.json"), "utf8")) as Array<Query>
    for (const q of queries) {
      if (!catalog.byName.has(q.expected)) throw new Error(`queries.json: unknown tool ${q.expected} (for "${q.query}")`)
    }

    const ranks = queries.map((q) => {
      // What the gateway offers: the task ranking (its first picks are the whole request's).
      const ranked = rankTask(catalog.entries, q.query, catalog.entries.length, q.context ?? null)
      return { ...q, rank: ranked.findIndex((e) => e.name === q.expected) + 1, top: ranked.slice(0, 3).map((e) => e.name) }
    })
    const figuresOf = (subset: typeof ranks) => {
      const recallAt = (k: number) => subset.filter((r) => r.rank >= 1 && r.rank <= k).length / Math.max(1, subset.length)
      return {
        queries: subset.length,
        recallAt1: recallAt(1),
        recallAt5: recallAt(5),
        recallAtK: recallAt(K),
        meanReciprocalRank: subset.reduce((sum, r) => sum + (r.rank > 0 ? 1 / r.rank : 0), 0) / Math.max(1, subset.length)
      }
    }
    const splits = {
      all: figuresOf(ranks),
      tuning: figuresOf(ranks.filter((r) => r.split === undefined)),
      holdout: figuresOf(ranks.filter((r) => r.split === "holdout")),
      fresh: figuresOf(ranks.filter((r) => r.split === "fresh"))
    }

    if (json) {
      process.stdout.write(`${JSON.stringify({ tools: catalog.entries.length, k: K, ...splits.all, splits }, null, 2)}\n`)
      return
    }
    const pct = (x: number) => `${(x * 100).toFixed(1)}%`.padStart(8)
    const row = (cells: ReadonlyArray<string>) => `  ${cells[0]?.padEnd(10)}${cells.slice(1).join("")}`
    console.log(`routing eval: ${ranks.length} queries, ${catalog.entries.length} tools (3 real servers + distractors)\n`)
    console.log(row(["", ...["queries", "@1", "@5", `@${K}`, "MRR"].map((h) => h.padStart(8))]))
    for (const [name, f] of Object.entries(splits)) {
      console.log(
        row([
          name,
          String(f.queries).padStart(8),
          pct(f.recallAt1),
          pct(f.recallAt5),
          pct(f.recallAtK),
          f.meanReciprocalRank.toFixed(3).padStart(8)
        ])
      )
    }
    const misses = ranks.filter((r) => r.rank !== 1)
    if (misses.length > 0) {
      console.log(`\nmisses at @1 (${misses.length}):`)
      for (const m of misses) {
        console.log(
          `  #${m.rank}  ${JSON.stringify(m.query)}${m.context ? " (with context)" : ""}${m.split ? ` [${m.split}]` : ""}`
        )
        console.log(`        want ${m.expected}; top: ${m.top.join(", ")}`)
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
