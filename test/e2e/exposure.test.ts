/**
 * Which tools, resources and prompts a client sees, end to end: the built CLI in front of the real
 * server-filesystem, server-memory and server-everything, with per-backend filters, an override
 * and namespaces, driven by the SDK client over stdio and HTTP; profiles side by side over HTTP,
 * one with the model (a local Chat Completions server) orchestrating inside it; `--profile` over
 * stdio; name collisions refused.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { spawnSync } from "node:child_process"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, cleanEnv, ROOT, tempDir } from "../support/stdioClient.js"
import { firstText } from "../support/mcpFixture.js"
import { startHttpGateway, type HttpGateway } from "../support/httpClient.js"
import { startFakeOpenAI, type FakeOpenAI } from "../support/fakeOpenAI.js"

const modules = join(ROOT, "node_modules", "@modelcontextprotocol")
const FILESYSTEM = join(modules, "server-filesystem", "dist", "index.js")
const MEMORY = join(modules, "server-memory", "dist", "index.js")
const EVERYTHING = join(modules, "server-everything", "dist", "index.js")

const filesystem = (id: string, root: string, extra: Record<string, unknown> = {}) => ({
  id,
  command: process.execPath,
  args: [FILESYSTEM, root],
  ...extra
})
const memory = (id: string, dir: string, extra: Record<string, unknown> = {}) => ({
  id,
  command: process.execPath,
  args: [MEMORY],
  env: { MEMORY_FILE_PATH: join(dir, `${id}.jsonl`) },
  ...extra
})
const everything = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  command: process.execPath,
  args: [EVERYTHING, "stdio"],
  ...extra
})

const stdioClient = async (args: ReadonlyArray<string>, cwd: string) => {
  const client = new Client({ name: "exposure-e2e", version: "1.0.0" })
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, ...args],
    cwd,
    env: cleanEnv() as Record<string, string>,
    stderr: "pipe"
  })
  let stderr = ""
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  await client.connect(transport)
  return { client, stderr: () => stderr }
}

const writeConfig = (dir: string, config: unknown) => {
  const file = join(dir, "gateway.json")
  writeFileSync(file, JSON.stringify(config))
  return file
}

/** The JSON-RPC error of a request the SDK client rejected. */
const rpcError = async (promise: Promise<unknown>): Promise<{ code: number; message: string }> => {
  try {
    await promise
  } catch (error) {
    return error as { code: number; message: string }
  }
  throw new Error("expected the request to fail")
}

describe("filters, overrides and namespaces, through the CLI in front of real servers", () => {
  let dir: string
  let client: Client
  beforeAll(async () => {
    dir = tempDir()
    writeFileSync(join(dir, "notes.txt"), "the pelican is in the notes\n")
    const config = writeConfig(dir, {
      backends: [
        filesystem("fs", dir, {
          allowTools: ["read_*", "list_directory", "write_file"],
          denyTools: ["read_media_file"],
          toolOverrides: { read_text_file: { name: "cat", description: "Print a text file" } }
        }),
        memory("mem", dir, { namespace: false, denyTools: ["delete_*"] }),
        everything("everything", {
          namespace: "ev",
          allowTools: ["echo", "get-sum"],
          allowResources: ["demo://resource/static/document/*"],
          denyResources: ["**/features.md"],
          denyPrompts: ["args-*"]
        })
      ]
    })
    ;({ client } = await stdioClient(["--config", config], dir))
  })
  afterAll(async () => {
    await client.close()
  })

  it("lists only what the filters let through, under the namespaces and overrides configured", async () => {
    const { tools } = await client.listTools()
    const names = tools.map((t) => t.name)
    expect(names.filter((n) => n.startsWith("fs__")).sort()).toEqual(
      ["fs__cat", "fs__list_directory", "fs__read_file", "fs__read_multiple_files", "fs__write_file"].sort()
    )
    expect(names.filter((n) => n.startsWith("ev__")).sort()).toEqual(["ev__echo", "ev__get-sum"])
    // namespace: false: the memory server's own names, its delete tools denied
    expect(names).toContain("create_entities")
    expect(names).toContain("read_graph")
    expect(names.filter((n) => n.startsWith("delete_"))).toEqual([])
    expect(names.filter((n) => n.startsWith("mem__") || n.startsWith("everything__"))).toEqual([])
    expect(tools.find((t) => t.name === "fs__cat")?.description).toBe("[fs] Print a text file")
  })

  it("calls an overridden tool by its new name, the backend by its own", async () => {
    const result = await client.callTool({ name: "fs__cat", arguments: { path: join(dir, "notes.txt") } })
    expect(result.isError).toBeFalsy()
    expect(firstText(result)).toContain("the pelican is in the notes")
    const sum = await client.callTool({ name: "ev__get-sum", arguments: { a: 2, b: 40 } })
    expect(firstText(sum)).toContain("42")
    const entity = await client.callTool({
      name: "create_entities",
      arguments: { entities: [{ name: "Orion", entityType: "project", observations: [] }] }
    })
    expect(entity.isError).toBeFalsy()
  })

  it("refuses a filtered tool, and the old name of an overridden one, as unknown (-32602)", async () => {
    for (const name of ["fs__read_media_file", "fs__edit_file", "fs__read_text_file", "delete_entities", "ev__get-env"]) {
      const error = await rpcError(client.callTool({ name, arguments: {} }))
      expect(error.code, name).toBe(-32602)
      expect(error.message, name).toContain(`Unknown tool: ${name}`)
    }
  })

  it("lists and reads only the resources the filters admit", async () => {
    const { resources } = await client.listResources()
    const ev = resources.map((r) => r.uri).filter((u) => u.startsWith("demo://"))
    expect(ev.length).toBeGreaterThan(1)
    for (const uri of ev) expect(uri).toMatch(/^demo:\/\/resource\/static\/document\/[^/]+$/)
    expect(ev).not.toContain("demo://resource/static/document/features.md")
    const read = await client.readResource({ uri: "demo://resource/static/document/architecture.md" })
    expect(read.contents.length).toBeGreaterThan(0)
    const denied = await rpcError(client.readResource({ uri: "demo://resource/static/document/features.md" }))
    expect(denied.code).toBe(-32602)
    // the dynamic templates are outside allowResources
    const { resourceTemplates } = await client.listResourceTemplates()
    expect(resourceTemplates.filter((t) => t.uriTemplate.startsWith("demo://"))).toEqual([])
    const templated = await rpcError(client.readResource({ uri: "demo://resource/dynamic/text/1" }))
    expect(templated.code).toBe(-32602)
  })

  it("lists and gets only the prompts the filters admit, in the backend's namespace", async () => {
    const { prompts } = await client.listPrompts()
    const names = prompts.map((p) => p.name)
    expect(names).toContain("ev__simple-prompt")
    expect(names).not.toContain("ev__args-prompt")
    const got = await client.getPrompt({ name: "ev__simple-prompt" })
    expect(got.messages.length).toBeGreaterThan(0)
    const denied = await rpcError(client.getPrompt({ name: "ev__args-prompt", arguments: { city: "Paris" } }))
    expect(denied.code).toBe(-32602)
  })
})

describe("namespace: false", () => {
  it("serves two backends' own names side by side when they do not collide", async () => {
    const dir = tempDir()
    const config = writeConfig(dir, {
      backends: [memory("mem", dir, { namespace: false }), everything("ev", { namespace: false, allowTools: ["echo"] })]
    })
    const { client } = await stdioClient(["--config", config], dir)
    try {
      const names = (await client.listTools()).tools.map((t) => t.name)
      expect(names).toContain("read_graph")
      expect(names).toContain("echo")
      expect(firstText(await client.callTool({ name: "echo", arguments: { message: "hi" } }))).toContain("hi")
    } finally {
      await client.close()
    }
  })

  it("keeps a colliding name with the first backend, withholds the second's and says why (log and check)", async () => {
    const dir = tempDir()
    const config = writeConfig(dir, {
      backends: [
        memory("first", dir, { namespace: false }),
        memory("second", dir, { namespace: false, allowTools: ["read_graph", "open_nodes"] })
      ]
    })
    const { client, stderr } = await stdioClient(["--config", config], dir)
    try {
      const tools = (await client.listTools()).tools
      expect(tools.filter((t) => t.name === "read_graph").map((t) => t.description)).toEqual([
        expect.stringMatching(/^\[first\] /)
      ])
      await expect
        .poll(stderr, { timeout: 5_000 })
        .toContain("the tool name 'read_graph' of backend 'second' (its 'read_graph') is also backend 'first''s")
    } finally {
      await client.close()
    }
    const check = spawnSync(process.execPath, [BIN, "check", "--config", config], { cwd: dir, env: cleanEnv(), encoding: "utf8" })
    expect(check.status).toBe(1)
    expect(check.stdout).toContain("- second: the tool name 'open_nodes' of backend 'second'")
    // listed 9, exposed none: its two allowed tools both lost their names to the first
    expect(check.stdout).toMatch(/^second\s+stdio\s+ready\s+\S+\s+0 of 9\s/m)
  })

  it("refuses at load two overrides that give one name in one namespace, naming both", () => {
    const dir = tempDir()
    const config = writeConfig(dir, {
      backends: [
        memory("a", dir, { namespace: "kg", toolOverrides: { read_graph: { name: "graph" } } }),
        memory("b", dir, { namespace: "kg", toolOverrides: { open_nodes: { name: "graph" } } })
      ]
    })
    const run = spawnSync(process.execPath, [BIN, "--config", config], { cwd: dir, env: cleanEnv(), encoding: "utf8", input: "" })
    expect(run.status).toBe(2)
    expect(run.stdout).toBe("")
    expect(run.stderr).toContain("backends[1].toolOverrides.open_nodes.name")
    expect(run.stderr).toContain("'graph' is also the name given to a's 'read_graph' in the same namespace")
  })
})

describe("profiles", () => {
  let gateway: HttpGateway
  let model: FakeOpenAI
  let dir: string
  beforeAll(async () => {
    model = await startFakeOpenAI({ text: "nothing" })
    dir = tempDir()
    writeFileSync(join(dir, "a.txt"), "alpha\n")
    gateway = await startHttpGateway({
      config: {
        backends: [filesystem("fs", dir), memory("mem", dir)],
        profiles: {
          files: { backends: ["fs"], denyTools: ["fs__write_*", "fs__edit_file", "fs__move_file", "fs__create_directory"] },
          graph: { allowTools: ["mem__*"], denyTools: ["mem__delete_*"] }
        }
      },
      env: { OPENAI_API_KEY: "sk-test-profiles-000000000000", OPENAI_BASE_URL: model.baseUrl }
    })
  })
  afterAll(async () => {
    await gateway.close()
    await model.close()
  })

  const connect = async (path: string, name: string) => {
    const client = new Client({ name, version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}${path}`)))
    return client
  }

  it("serves two profiles side by side to two clients, each its own tools", async () => {
    const files = await connect("/profiles/files/mcp", "files-client")
    const graph = await connect("/profiles/graph/mcp", "graph-client")
    try {
      const own = (n: string) => n === "agentify_orchestrate" || n === "agentify_run_code"
      const fileTools = (await files.listTools()).tools.map((t) => t.name).filter((n) => !own(n))
      const graphTools = (await graph.listTools()).tools.map((t) => t.name).filter((n) => !own(n))
      expect(fileTools).toContain("fs__read_text_file")
      expect(fileTools.every((n) => n.startsWith("fs__"))).toBe(true)
      expect(fileTools.filter((n) => /write|edit|move|create/.test(n))).toEqual([])
      expect(graphTools).toContain("mem__read_graph")
      expect(graphTools.every((n) => n.startsWith("mem__") && !n.startsWith("mem__delete_"))).toBe(true)
      // each calls its own, and the other's tool is unknown to it
      expect(firstText(await files.callTool({ name: "fs__read_text_file", arguments: { path: join(dir, "a.txt") } }))).toContain(
        "alpha"
      )
      expect((await rpcError(graph.callTool({ name: "fs__read_text_file", arguments: { path: join(dir, "a.txt") } }))).code).toBe(
        -32602
      )
      expect((await rpcError(files.callTool({ name: "mem__read_graph", arguments: {} }))).code).toBe(-32602)
      // A script in a profile sees that profile's tools only: the other's do not exist, and are refused by name.
      const script = (await graph.callTool({
        name: "agentify_run_code",
        arguments: {
          code: `let refused = ""
            try { await callTool("fs__read_text_file", { path: "a.txt" }) } catch (e) { refused = e.message }
            return { fs: typeof tools.fs, deleting: typeof tools.mem.delete_entities, graph: typeof (await tools.mem.read_graph({})), refused }`
        }
      })) as unknown as { structuredContent: { result: unknown } }
      expect(script.structuredContent.result).toEqual({
        fs: "undefined",
        deleting: "undefined",
        graph: "object",
        refused: "Unknown tool: fs__read_text_file"
      })
      const declared = (await graph.listTools()).tools.find((t) => t.name === "agentify_run_code")!.description!
      expect(declared).toContain("read_graph(")
      expect(declared).not.toContain("read_text_file(")
      // the whole aggregate still has everything
      const all = await connect("/mcp", "all-client")
      const allTools = (await all.listTools()).tools.map((t) => t.name)
      expect(allTools).toContain("fs__write_file")
      expect(allTools).toContain("mem__delete_entities")
      await all.close()
    } finally {
      await files.close()
      await graph.close()
    }
  })

  it("orchestrates inside a profile: the model is offered only its tools and cannot call another's", async () => {
    const graph = await connect("/profiles/graph/mcp", "graph-orchestrator")
    try {
      model.setReply({ tool: "fs__list_directory", arguments: { path: dir } })
      const before = model.requests.length
      const refused = await graph.callTool({ name: "agentify_orchestrate", arguments: { query: "list the folder", maxSteps: 1 } })
      const offered = (model.requests[before]?.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)
      expect(offered.length).toBeGreaterThan(0)
      expect(offered.every((n) => n.startsWith("mem__") && !n.startsWith("mem__delete_"))).toBe(true)
      expect(refused.isError).toBe(true)
      expect(firstText(refused)).toContain("fs__list_directory")
      model.setReply({ tool: "mem__read_graph", arguments: {} })
      const ran = await graph.callTool({ name: "agentify_orchestrate", arguments: { query: "show the graph", maxSteps: 1 } })
      expect(ran.isError).toBeFalsy()
    } finally {
      await graph.close()
    }
  })

  it("answers 404 for a profile that is not configured, naming the ones that are", async () => {
    const response = await fetch(`${gateway.base}/profiles/nope/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" })
    })
    expect(response.status).toBe(404)
    expect(JSON.stringify(await response.json())).toContain("no profile 'nope' is configured (there are: files, graph)")
  })

  it("serves a profile over stdio with --profile, and exits 2 for an unknown one", async () => {
    const config = writeConfig(dir, {
      backends: [filesystem("fs", dir), memory("mem", dir)],
      profiles: { graph: { backends: ["mem"] } }
    })
    const { client } = await stdioClient(["--config", config, "--profile", "graph"], dir)
    try {
      const names = (await client.listTools()).tools.map((t) => t.name)
      expect(names).toContain("mem__read_graph")
      expect(names.filter((n) => n.startsWith("fs__"))).toEqual([])
    } finally {
      await client.close()
    }
    const unknown = spawnSync(process.execPath, [BIN, "--config", config, "--profile", "nope"], {
      cwd: dir,
      env: cleanEnv(),
      encoding: "utf8",
      input: ""
    })
    expect(unknown.status).toBe(2)
    expect(unknown.stderr).toContain("no profile 'nope' is configured (there are: graph)")
    const check = spawnSync(process.execPath, [BIN, "check", "--config", config, "--profile", "graph"], {
      cwd: dir,
      env: cleanEnv(),
      encoding: "utf8"
    })
    expect(check.status).toBe(0)
    expect(check.stdout).toMatch(/profile graph: \d+ tools/)
    expect(check.stdout).toContain("  mem__read_graph  [mem]")
    expect(check.stdout).not.toContain("fs__")
  })
})
