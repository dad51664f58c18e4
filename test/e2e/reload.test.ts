/**
 * The config file edited while an SDK client is connected over stdio, with real servers behind the
 * built CLI: a backend added, one removed (its call in flight fails with "backend removed"), one
 * changed (restarted), one only re-exposed and one untouched (both keep their process), then an
 * invalid edit refused while everything stays, then a valid edit applied again. The client's
 * list_changed notifications and the backends' pids are the evidence.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema
} from "@modelcontextprotocol/sdk/types.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { BIN, cleanEnv, ROOT, tempDir } from "../support/stdioClient.js"
import { descendants, sleep, until, untilGone } from "../support/process.js"
import { startHttpGateway } from "../support/httpClient.js"

const modules = join(ROOT, "node_modules", "@modelcontextprotocol")
const FILESYSTEM = join(modules, "server-filesystem", "dist", "index.js")
const MEMORY = join(modules, "server-memory", "dist", "index.js")
const EVERYTHING = join(modules, "server-everything", "dist", "index.js")

/** Each backend's process carries its id in its environment, so its pid can be found from /proc. */
const marked = (id: string, backend: Record<string, unknown>) => ({
  id,
  command: process.execPath,
  ...backend,
  env: { ...((backend.env as Record<string, string> | undefined) ?? {}), TEST_BACKEND_ID: id }
})

const backendPids = (gatewayPid: number): Map<string, number> => {
  const pids = new Map<string, number>()
  for (const pid of descendants(gatewayPid)) {
    try {
      const id = /(?:^|\0)TEST_BACKEND_ID=([^\0]*)/.exec(readFileSync(`/proc/${pid}/environ`, "utf8"))?.[1]
      if (id !== undefined) pids.set(id, pid)
    } catch {
      // gone meanwhile
    }
  }
  return pids
}

describe("config changes without a restart, seen by a connected client", () => {
  // Each test starts its own gateway on v1: none depends on what an earlier one edited.
  let dir: string
  let file: string
  let client: Client
  let transport: StdioClientTransport
  let stderr = ""
  const heard: Array<{ method: string; at: number }> = []

  const v1 = (root: string) => ({
    // initialize does not wait for the backends: the ones still starting announce their tools
    // with list_changed, as they do on a busy machine, and the tests must not take that for a reload's.
    startupTimeoutMs: 1,
    backends: [
      marked("fs", { args: [FILESYSTEM, root] }),
      marked("mem", { args: [MEMORY], env: { MEMORY_FILE_PATH: join(root, "mem.jsonl") } }),
      marked("ev", { args: [EVERYTHING, "stdio"] }),
      marked("kg", { args: [MEMORY], env: { MEMORY_FILE_PATH: join(root, "kg.jsonl") }, namespace: "kg" })
    ]
  })

  beforeEach(async () => {
    dir = tempDir()
    file = join(dir, "gateway.json")
    stderr = ""
    heard.length = 0
    writeFileSync(file, JSON.stringify(v1(dir), null, 2))
    client = new Client({ name: "reload-e2e", version: "1.0.0" })
    for (const [schema, method] of [
      [ToolListChangedNotificationSchema, "tools"],
      [ResourceListChangedNotificationSchema, "resources"],
      [PromptListChangedNotificationSchema, "prompts"]
    ] as const) {
      client.setNotificationHandler(schema, () => void heard.push({ method, at: Date.now() }))
    }
    transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "--config", file, "--log-level", "debug"],
      cwd: dir,
      env: cleanEnv() as Record<string, string>,
      stderr: "pipe"
    })
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    await client.connect(transport)
    // Every backend of v1 running (they start while initialize waits, bounded): the tests compare pids.
    await until("v1's backends", () => backendPids(transport.pid!).size === 4, 20_000)
    // ...and every one of them listed: a backend that was still starting when initialize returned
    // announces its tools with list_changed, sent before the reply of the listing that shows them.
    await until(
      "v1's tools",
      async () => {
        const names = await toolNames()
        return ["fs__read_text_file", "mem__read_graph", "ev__echo", "kg__read_graph"].every((n) => names.includes(n))
      },
      20_000
    )
    heard.length = 0
  })
  afterEach(async () => {
    await client.close()
  })

  const toolNames = async () => (await client.listTools()).tools.map((t) => t.name)

  it("applies an edit as a difference: added, removed, restarted, re-exposed, untouched", async () => {
    const before = backendPids(transport.pid!)
    expect([...before.keys()].sort()).toEqual(["ev", "fs", "kg", "mem"])
    expect(await toolNames()).toContain("ev__echo")
    // A call in flight on the backend about to be removed.
    const inFlight = client
      .callTool({ name: "ev__trigger-long-running-operation", arguments: { duration: 30, steps: 3 } }, undefined, {
        timeout: 60_000
      })
      .then(
        () => undefined,
        (error: { code: number; message: string }) => error
      )
    await sleep(300)

    const edited = v1(dir)
    edited.backends[0] = { ...edited.backends[0]!, denyTools: ["write_file"] } as (typeof edited.backends)[number] // re-exposed only
    edited.backends[3] = marked("kg", { args: [MEMORY], env: { MEMORY_FILE_PATH: join(dir, "kg2.jsonl") }, namespace: "kg" }) // changed
    edited.backends.splice(2, 1) // ev removed
    edited.backends.push(marked("fs2", { args: [FILESYSTEM, join(ROOT, "docs")] })) // added
    heard.length = 0
    writeFileSync(file, JSON.stringify(edited, null, 2))

    const failed = await inFlight
    expect(failed?.code).toBe(-32004)
    expect(failed?.message).toContain("backend removed")

    // fs2 starting, kg restarting: both list their tools once ready
    await until(
      "fs2's and the restarted kg's tools",
      async () => {
        const now = await toolNames()
        return now.includes("fs2__read_text_file") && now.includes("kg__read_graph")
      },
      20_000
    )
    const names = await toolNames()
    expect(names.filter((n) => n.startsWith("ev__"))).toEqual([])
    expect(names).not.toContain("fs__write_file")
    expect(names).toContain("fs__read_text_file")
    expect(names).toContain("kg__read_graph")
    expect(names).toContain("mem__read_graph")

    await until("the list_changed notifications", () => heard.some((h) => h.method === "tools"), 5_000)
    // server-everything offered resources and prompts: the client's lists of both changed too
    expect(heard.some((h) => h.method === "resources")).toBe(true)
    expect(heard.some((h) => h.method === "prompts")).toBe(true)

    await until(
      "kg restarted",
      () => backendPids(transport.pid!).get("kg") !== undefined && backendPids(transport.pid!).get("kg") !== before.get("kg"),
      20_000
    )
    const after = backendPids(transport.pid!)
    expect(after.get("fs")).toBe(before.get("fs"))
    expect(after.get("mem")).toBe(before.get("mem"))
    expect(after.has("fs2")).toBe(true)
    expect(after.has("ev")).toBe(false)
    await untilGone([before.get("ev")!])
    expect(stderr).toContain("configuration reloaded from file:")
    expect(stderr).toMatch(/added fs2; removed ev; restarted kg; re-exposed fs/)
  })

  it("refuses an invalid edit with start-up's message and keeps everything running", async () => {
    const pids = backendPids(transport.pid!)
    const tools = await toolNames()
    heard.length = 0
    writeFileSync(file, JSON.stringify({ backends: [{ id: "broken" }] }))
    await until("the refusal in the log", () => stderr.includes("configuration change refused"), 10_000)
    expect(stderr).toContain("backends[0].command: is required")
    writeFileSync(file, "{ not json")
    await until("the second refusal", () => /configuration change refused[^\n]*not valid JSON/.test(stderr), 10_000)
    await sleep(500)
    expect(heard).toEqual([])
    expect(await toolNames()).toEqual(tools)
    expect(backendPids(transport.pid!)).toEqual(pids)
  })

  it("applies the next valid edit after a refused one", async () => {
    const pids = backendPids(transport.pid!)
    writeFileSync(file, "{ not json")
    await until("the refusal", () => /configuration change refused[^\n]*not valid JSON/.test(stderr), 10_000)
    const edited = v1(dir)
    edited.backends.splice(2, 1) // ev removed
    edited.backends[0] = { ...edited.backends[0]!, denyTools: ["write_file"] } as (typeof edited.backends)[number]
    writeFileSync(file, JSON.stringify(edited))
    await until("ev gone", async () => !(await toolNames()).some((n) => n.startsWith("ev__")), 10_000)
    await until("the notification", () => heard.some((h) => h.method === "tools"), 5_000)
    await untilGone([pids.get("ev")!])
    expect(await toolNames()).not.toContain("fs__write_file")
    const after = backendPids(transport.pid!)
    for (const id of ["fs", "mem", "kg"]) expect(after.get(id), id).toBe(pids.get(id))
  })
})

describe("config changes over HTTP, per profile, and in --servers-dir", () => {
  it("tells only the sessions whose view changed, serves a profile added by the edit, and shows the reload in the debug UI", async () => {
    const dir = tempDir()
    const file = join(dir, "profiles.json")
    const config = (memExtra: Record<string, unknown>, profiles: Record<string, unknown>) => ({
      backends: [
        marked("fs", { args: [FILESYSTEM, dir] }),
        marked("mem", { args: [MEMORY], env: { MEMORY_FILE_PATH: join(dir, "mem.jsonl") }, ...memExtra })
      ],
      profiles
    })
    const twoProfiles = { files: { backends: ["fs"] }, graph: { backends: ["mem"] } }
    writeFileSync(file, JSON.stringify(config({}, twoProfiles)))
    const gateway = await startHttpGateway({ args: ["--config", file, "--debug-port", "0"] })
    const connect = async (path: string) => {
      const client = new Client({ name: path, version: "1.0.0" })
      const changed: Array<number> = []
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed.push(Date.now()))
      await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}${path}`)))
      // The notification stream (GET) is open once a first request has gone through.
      await client.listTools()
      return { client, changed }
    }
    try {
      const files = await connect("/profiles/files/mcp")
      const graph = await connect("/profiles/graph/mcp")
      await sleep(300)
      const pids = backendPids(gateway.child.pid!)
      writeFileSync(file, JSON.stringify(config({ denyTools: ["delete_*"] }, { ...twoProfiles, both: {} })))
      await until("the graph client's list_changed", () => graph.changed.length > 0, 10_000)
      expect((await graph.client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith("mem__delete_"))).toEqual([])
      await sleep(500)
      expect(files.changed).toEqual([])
      expect(backendPids(gateway.child.pid!)).toEqual(pids)
      // the profile the edit added is served without a restart
      const both = await connect("/profiles/both/mcp")
      const names = (await both.client.listTools()).tools.map((t) => t.name)
      expect(names).toContain("fs__read_text_file")
      expect(names).toContain("mem__read_graph")
      await both.client.close()
      const debugPort = /debug UI at http:\/\/127\.0\.0\.1:(\d+)\//.exec(gateway.stderr())?.[1]
      const status = (await (await fetch(`http://127.0.0.1:${debugPort}/api/status`)).json()) as {
        reloads: Array<{ outcome: string; reexposed?: Array<string> }>
      }
      expect(status.reloads.at(-1)).toMatchObject({ outcome: "applied", reexposed: ["mem"] })
      // A refused edit, then the running configuration written back: the header no longer says refused.
      const lastReload = async () =>
        (
          (await (await fetch(`http://127.0.0.1:${debugPort}/api/status`)).json()) as { reloads: Array<{ outcome: string }> }
        ).reloads.at(-1)?.outcome
      writeFileSync(file, "{ not json")
      await until("the refusal", async () => (await lastReload()) === "refused", 10_000)
      writeFileSync(file, JSON.stringify(config({ denyTools: ["delete_*"] }, { ...twoProfiles, both: {} })))
      await until("the file back to the running configuration", async () => (await lastReload()) === "unchanged", 10_000)
      expect(backendPids(gateway.child.pid!)).toEqual(pids)
      await files.client.close()
      await graph.client.close()
    } finally {
      await gateway.close()
    }
  })

  it("starts a server whose folder appears in --servers-dir, and stops one whose folder goes", async () => {
    const servers = tempDir()
    const echo = pathToFileURL(join(ROOT, "test", "fixtures", "servers", "node-echo", "server.mjs")).href
    const addServer = (name: string) => {
      mkdirSync(join(servers, name))
      writeFileSync(join(servers, name, "server.mjs"), `import ${JSON.stringify(echo)}\n`)
      writeFileSync(join(servers, name, "package.json"), JSON.stringify({ name, type: "module", bin: { [name]: "server.mjs" } }))
    }
    addServer("one")
    const client = new Client({ name: "servers-dir", version: "1.0.0" })
    const changed: Array<number> = []
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed.push(Date.now()))
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "--servers-dir", servers],
        cwd: servers,
        env: cleanEnv() as Record<string, string>,
        stderr: "ignore"
      })
    )
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain("one__echo")
      addServer("two")
      await until("two's tools", async () => (await client.listTools()).tools.some((t) => t.name === "two__echo"), 15_000)
      expect(changed.length).toBeGreaterThan(0)
      rmSync(join(servers, "one"), { recursive: true })
      await until("one's tools gone", async () => !(await client.listTools()).tools.some((t) => t.name === "one__echo"), 15_000)
    } finally {
      await client.close()
    }
  })
})
