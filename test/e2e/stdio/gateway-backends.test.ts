/**
 * End to end, as a user runs it: the built CLI (`dist/bin.js --config FILE`) in front of real MCP
 * servers (server-filesystem, server-memory) and the fixture server, driven by the MCP SDK client
 * and by raw JSON-RPC frames. Covers naming, pass-through, crashes and restarts, timeouts,
 * cancellation, start-up, progress relay and process cleanup.
 */
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { readFileSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { serverFilesystemEntry } from "../../../src/config/Config.js"
import { assertOnlyFrames, BIN, cleanEnv, type CliClient, ROOT, sleep, startGateway, tempDir } from "../../support/stdioClient.js"
import { filesystemBackend, firstText, fixtureBackend } from "../../support/mcpFixture.js"
import { descendants, isAlive, until } from "../../support/process.js"

const MEMORY_ENTRY = join(ROOT, "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js")
const VALID_NAME = /^[a-zA-Z0-9_-]{1,64}$/
const INIT = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "backends-e2e", version: "1.0.0" } }

/** `--config FILE` for a config written to a fresh temp file. */
const configArgs = (config: unknown): Array<string> => {
  const file = join(tempDir("agentify-backends-"), "config.json")
  writeFileSync(file, JSON.stringify(config, null, 2))
  return ["--config", file]
}

/** An SDK client connected to `command args` over stdio. */
const connect = async (command: string, args: Array<string>, env: Record<string, string> = {}) => {
  const transport = new StdioClientTransport({
    command,
    args,
    cwd: tempDir(),
    env: cleanEnv(env) as Record<string, string>,
    stderr: "pipe"
  })
  const client = new Client({ name: "backends-e2e", version: "1.0.0" })
  await client.connect(transport)
  return client
}

/** Closes the gateway and, should a test have failed half-way, kills what it left behind. */
const shutdown = async (gateway: CliClient, leftovers: Array<number> = []) => {
  const tree = gateway.child.pid === undefined ? [] : descendants(gateway.child.pid)
  const exit = await gateway.close()
  for (const pid of [...tree, ...leftovers]) {
    if (isAlive(pid)) process.kill(pid, "SIGKILL")
  }
  return exit
}

const callTool = (gateway: CliClient, name: string, args: Record<string, unknown> = {}, extra: object = {}, id?: string) =>
  gateway.request("tools/call", { name, arguments: args, ...extra }, id)

const listNames = async (gateway: CliClient): Promise<Array<string>> =>
  (await gateway.request("tools/list", {})).result.tools.map((t: { name: string }) => t.name)

const startInitialized = async (config: unknown) => {
  const gateway = startGateway({ args: configArgs(config) })
  const init = await gateway.request("initialize", INIT)
  expect(init.result?.serverInfo?.name).toBe("mcp-agentify")
  gateway.send({ jsonrpc: "2.0", method: "notifications/initialized" })
  return gateway
}

const pidOf = async (gateway: CliClient, backendId: string): Promise<{ pid: number; childPid: number | null }> =>
  (await callTool(gateway, `${backendId}__pid`)).result.structuredContent

// ---------------------------------------------------------------------------------------------

describe("gateway in front of the real server-filesystem and server-memory", () => {
  it("lists their tools namespaced with schemas unchanged, and calls give what a direct client gets", async () => {
    // server-filesystem compares real paths: /tmp may be a symlink.
    const root = realpathSync(tempDir("agentify-fs-root-"))
    const memoryDir = tempDir("agentify-memory-")
    const config = {
      mcpServers: {
        filesystem: { command: process.execPath, args: [serverFilesystemEntry(), root] },
        memory: { command: process.execPath, args: [MEMORY_ENTRY], env: { MEMORY_FILE_PATH: join(memoryDir, "gateway.jsonl") } }
      }
    }
    const gateway = await connect(process.execPath, [BIN, ...configArgs(config)])
    const directFs = await connect(process.execPath, [serverFilesystemEntry(), root])
    const directMemory = await connect(process.execPath, [MEMORY_ENTRY], { MEMORY_FILE_PATH: join(memoryDir, "direct.jsonl") })
    try {
      const exposed = (await gateway.listTools()).tools
      const names = exposed.map((t) => t.name)
      // The gateway's own two tools first.
      expect(names.slice(0, 2)).toEqual(["agentify_orchestrate", "agentify_run_code"])
      expect(names).toEqual(
        expect.arrayContaining([
          "filesystem__read_text_file",
          "filesystem__write_file",
          "memory__create_entities",
          "memory__read_graph"
        ])
      )
      for (const name of names) expect(name).toMatch(VALID_NAME)

      let backendTools = 0
      for (const [backendId, direct] of [
        ["filesystem", directFs],
        ["memory", directMemory]
      ] as const) {
        const tools = (await direct.listTools()).tools
        expect(tools.length).toBeGreaterThan(3)
        backendTools += tools.length
        for (const tool of tools) {
          const mine = exposed.find((t) => t.name === `${backendId}__${tool.name}`)
          expect(mine, `${backendId}__${tool.name}`).toBeDefined()
          expect(mine!.description).toBe(`[${backendId}] ${tool.description ?? ""}`)
          expect(mine!.inputSchema).toEqual(tool.inputSchema)
          // Everything else (outputSchema, annotations, title...) as the server listed it.
          expect({ ...mine, name: tool.name, description: tool.description }).toEqual(tool)
        }
      }
      expect(exposed).toHaveLength(2 + backendTools)

      // The same calls through the gateway and directly give the same results.
      const both = async (backendId: string, direct: Client, name: string, args: Record<string, unknown>) => {
        const viaGateway = await gateway.callTool({ name: `${backendId}__${name}`, arguments: args })
        const viaDirect = await direct.callTool({ name, arguments: args })
        expect(viaGateway).toEqual(viaDirect)
        return viaGateway
      }
      const file = join(root, "notes.txt")
      const written = await both("filesystem", directFs, "write_file", { path: file, content: "written through the gateway\n" })
      expect(written.isError).not.toBe(true)
      expect(readFileSync(file, "utf8")).toBe("written through the gateway\n")
      const read = await both("filesystem", directFs, "read_text_file", { path: file })
      expect(firstText(read)).toContain("written through the gateway")
      expect(firstText(await both("filesystem", directFs, "list_directory", { path: root }))).toContain("notes.txt")
      // A refusal is an isError result, passed through as a result.
      const outside = await both("filesystem", directFs, "read_text_file", { path: "/etc/hostname" })
      expect(outside.isError).toBe(true)

      const entities = {
        entities: [{ name: "Ada Lovelace", entityType: "person", observations: ["wrote the first published program"] }]
      }
      const created = await both("memory", directMemory, "create_entities", entities)
      expect(created.isError).not.toBe(true)
      await both("memory", directMemory, "create_relations", {
        relations: [{ from: "Ada Lovelace", to: "Ada Lovelace", relationType: "admires" }]
      })
      const graph = await both("memory", directMemory, "read_graph", {})
      expect(JSON.stringify(graph)).toContain("wrote the first published program")
      await both("memory", directMemory, "search_nodes", { query: "Lovelace" })
      // The gateway's memory server wrote where MEMORY_FILE_PATH said, not into node_modules.
      expect(readFileSync(join(memoryDir, "gateway.jsonl"), "utf8")).toContain("Ada Lovelace")
    } finally {
      await Promise.all([gateway.close(), directFs.close(), directMemory.close()])
    }
  }, 60_000)
})

describe("gateway: backend failures", () => {
  it("a killed backend fails the next call with -32004, restarts, and the other backend never notices", async () => {
    const gateway = await startInitialized({
      backends: [fixtureBackend("victim"), fixtureBackend("bystander")]
    })
    const before = await pidOf(gateway, "victim")
    const bystanderPid = (await pidOf(gateway, "bystander")).pid
    try {
      // Calls to the bystander run throughout, from before the kill until after the restart.
      let stop = false
      const bystanderReplies: Array<any> = []
      const loops = [0, 1, 2].map(async (loop) => {
        for (let i = 0; !stop; i++) {
          bystanderReplies.push(await callTool(gateway, "bystander__echo", { text: `loop ${loop} call ${i}` }))
          await sleep(20)
        }
      })
      await sleep(200)

      process.kill(before.pid, "SIGKILL")
      const failed = await callTool(gateway, "victim__echo", { text: "are you there?" })
      expect(failed.result).toBeUndefined()
      expect(failed.error.code).toBe(-32004)
      expect(failed.error.message).toMatch(/^Backend 'victim' failed: /)
      expect(failed.error.data.backendId).toBe("victim")

      // Restarted with backoff: calls work again a little later, on a new process.
      const failures: Array<any> = []
      const recovered = await until("the victim to come back", async () => {
        const reply = await callTool(gateway, "victim__echo", { text: "back?" })
        if (reply.error !== undefined) failures.push(reply.error)
        return reply.result
      })
      expect(firstText(recovered)).toBe(JSON.stringify({ text: "back?" }))
      for (const error of failures) {
        expect(error.code).toBe(-32004)
        expect(error.message).toMatch(/^Backend 'victim' failed: /)
      }
      const after = await pidOf(gateway, "victim")
      expect(after.pid).not.toBe(before.pid)
      expect(isAlive(before.pid)).toBe(false)

      await sleep(200)
      stop = true
      await Promise.all(loops)
      expect(bystanderReplies.length).toBeGreaterThan(10)
      for (const reply of bystanderReplies) {
        expect(reply.error).toBeUndefined()
        expect(firstText(reply.result)).toMatch(/^\{"text":"loop \d call \d+"\}$/)
      }
      expect((await pidOf(gateway, "bystander")).pid).toBe(bystanderPid)
    } finally {
      await shutdown(gateway)
    }
    assertOnlyFrames(gateway.stdout())
  }, 60_000)

  it("a backend that never answers: its call fails with -32004 at its requestTimeoutMs while other calls go on", async () => {
    const gateway = await startInitialized({
      backends: [fixtureBackend("slowpoke", [], { requestTimeoutMs: 1_000 }), fixtureBackend("other")]
    })
    try {
      const started = Date.now()
      const hang = callTool(gateway, "slowpoke__hang", {}, {}, "hang-1")
      const meanwhile = await Promise.all([
        callTool(gateway, "slowpoke__echo", { text: "same backend" }),
        callTool(gateway, "other__echo", { text: "other backend" }),
        callTool(gateway, "other__slow", { ms: 300 })
      ])
      const timedOut = await hang
      const elapsed = Date.now() - started
      for (const reply of meanwhile) expect(reply.error).toBeUndefined()
      expect(firstText(meanwhile[0].result)).toContain("same backend")
      // The other calls were answered while the hanging one was still waiting.
      const order = gateway.messages
      for (const reply of meanwhile) expect(order.indexOf(reply)).toBeLessThan(order.indexOf(timedOut))

      expect(timedOut.error.code).toBe(-32004)
      expect(timedOut.error.message).toBe("Backend 'slowpoke' failed: tools/call timed out after 1000 ms")
      expect(timedOut.error.data).toMatchObject({ backendId: "slowpoke", reason: "timeout", method: "tools/call" })
      // Its own timeout, well before the 60 s default.
      expect(elapsed).toBeLessThan(30_000)

      // A client cancellation: -32800 to the client, notifications/cancelled to the backend.
      const cancelled = callTool(gateway, "slowpoke__hang", {}, {}, "hang-2")
      await sleep(500)
      gateway.send({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: "hang-2", reason: "user pressed stop" }
      })
      expect((await cancelled).error).toEqual({ code: -32800, message: "Request cancelled" })

      const seen = (await callTool(gateway, "slowpoke__cancelled")).result.structuredContent.cancellations
      expect(seen).toEqual([
        { requestId: expect.anything(), reason: "timed out after 1000 ms", of: "tools/call hang" },
        { requestId: expect.anything(), reason: "cancelled by the client", of: "tools/call hang" }
      ])
    } finally {
      await shutdown(gateway)
    }
    assertOnlyFrames(gateway.stdout())
  }, 60_000)
})

describe("gateway: process cleanup", () => {
  it("closing stdin stops every backend process, grandchildren and npx-like chains included, and exits 0", async () => {
    // Stands in for `npx -y some-server`: npm starts a shell, which starts the server.
    const dir = tempDir("agentify-npx-like-")
    const npxLike = join(dir, "npx-like.mjs")
    writeFileSync(
      npxLike,
      [
        'import { spawn } from "node:child_process"',
        "const [server, ...args] = process.argv.slice(2)",
        'const child = spawn("/bin/sh", ["-c", \'"$0" "$@"; exit $?\', process.execPath, server, ...args], { stdio: "inherit" })',
        'child.on("exit", (code) => process.exit(code ?? 1))'
      ].join("\n")
    )
    const gateway = await startInitialized({
      backends: [
        fixtureBackend("parent", ["--spawn-child"]),
        { ...fixtureBackend("chain", ["--spawn-child"]), args: [npxLike, ...fixtureBackend("chain", ["--spawn-child"]).args] },
        filesystemBackend("filesystem", realpathSync(dir))
      ]
    })
    const parent = await pidOf(gateway, "parent")
    const chain = await pidOf(gateway, "chain")
    const tree = descendants(gateway.child.pid!)
    try {
      // parent + its grandchild, npx-like + sh + server + its grandchild, filesystem.
      expect(tree.length).toBeGreaterThanOrEqual(7)
      expect(tree).toEqual(expect.arrayContaining([parent.pid, parent.childPid, chain.pid, chain.childPid]))
      for (const pid of tree) expect(isAlive(pid)).toBe(true)

      const closedAt = Date.now()
      gateway.child.stdin!.end()
      const { code } = await gateway.exited
      expect(code).toBe(0)
      while (tree.some(isAlive) && Date.now() - closedAt < 3_000) await sleep(50)
      expect(tree.filter(isAlive)).toEqual([])
    } finally {
      await shutdown(gateway, tree)
    }
    assertOnlyFrames(gateway.stdout())
  }, 60_000)

  it("a backend tree that ignores SIGTERM is killed with SIGKILL after the grace period", async () => {
    const gateway = await startInitialized({ backends: [fixtureBackend("stubborn", ["--spawn-child", "--ignore-sigterm"])] })
    const { pid, childPid } = await pidOf(gateway, "stubborn")
    try {
      gateway.child.stdin!.end()
      const { code } = await gateway.exited
      expect(code).toBe(0)
      await until("the stubborn tree to die", () => (isAlive(pid) || isAlive(childPid!) ? undefined : true), 10_000)
      expect(gateway.stderr()).toMatch(/still running 2000 ms after SIGTERM; sending SIGKILL/)
    } finally {
      await shutdown(gateway, [pid, childPid!])
    }
  }, 60_000)
})

describe("gateway: start-up", () => {
  it("the first tools/list waits at most startupTimeoutMs; a slow backend's tools come later with list_changed; a failed one never fails initialize", async () => {
    const gateway = startGateway({
      args: configArgs({
        startupTimeoutMs: 2_500,
        backends: [
          fixtureBackend("fast"),
          fixtureBackend("slow", ["--startup-delay-ms", "8000"]),
          { id: "ghost", command: "agentify-no-such-command" }
        ]
      })
    })
    try {
      const init = await gateway.request("initialize", INIT)
      expect(init.error).toBeUndefined()
      expect(init.result.capabilities.tools.listChanged).toBe(true)
      gateway.send({ jsonrpc: "2.0", method: "notifications/initialized" })

      // Waited for within startupTimeoutMs, then no longer: the slow backend is still starting.
      const early = await listNames(gateway)
      expect(early).toContain("fast__echo")
      expect(early.some((name) => name.startsWith("slow__"))).toBe(false)
      const tooEarly = await callTool(gateway, "slow__echo")
      expect(tooEarly.error).toMatchObject({ code: -32004, message: "Backend 'slow' failed: still starting" })

      // The one that could not start: a clear error naming it, for its tools and any name under it.
      expect(early.some((name) => name.startsWith("ghost__"))).toBe(false)
      for (const name of ["ghost__echo", "ghost__anything"]) {
        const reply = await callTool(gateway, name)
        expect(reply.error.code).toBe(-32004)
        expect(reply.error.message).toBe("Backend 'ghost' failed: not running: command not found: agentify-no-such-command")
      }
      // A name under no backend at all is simply unknown.
      expect((await callTool(gateway, "nobody__echo")).error.code).toBe(-32602)

      // Later: list_changed, then the slow backend's tools are listed and work.
      const initIndex = gateway.messages.indexOf(init)
      let seen = 0
      const names = await until(
        "list_changed with the slow backend's tools",
        async () => {
          const changes = gateway.messages.filter((m, i) => i > initIndex && m.method === "notifications/tools/list_changed")
          if (changes.length === seen) return undefined
          seen = changes.length
          const listed = await listNames(gateway)
          return listed.includes("slow__echo") ? listed : undefined
        },
        30_000
      )
      expect(names).toContain("fast__echo")
      expect(firstText((await callTool(gateway, "slow__echo", { text: "finally" })).result)).toContain("finally")
    } finally {
      await shutdown(gateway)
    }
    assertOnlyFrames(gateway.stdout())
  }, 60_000)
})

describe("gateway: pass-through", () => {
  it("forwards _meta.progressToken and relays progress before the result; isError stays a result; log messages are relayed", async () => {
    // --junk-stdout: banners between the backend's frames never reach the client.
    const gateway = await startInitialized({ backends: [fixtureBackend("worker", ["--junk-stdout"])] })
    try {
      const reply = await callTool(gateway, "worker__progress", { steps: 3 }, { _meta: { progressToken: "p-1" } })
      expect(firstText(reply.result)).toBe("done in 3 steps")
      const messages = gateway.messages
      const progress = messages.filter((m) => m.method === "notifications/progress")
      expect(progress.map((m) => m.params)).toEqual([1, 2, 3].map((progress) => ({ progressToken: "p-1", progress, total: 3 })))
      for (const m of progress) expect(messages.indexOf(m)).toBeLessThan(messages.indexOf(reply))

      // Many at once, numeric tokens too: each call's progress still comes before its own result on the
      // wire. (Whether an SDK client then sees it is the SDK's business: it dispatches notifications a
      // microtask later than responses, modelcontextprotocol/typescript-sdk#2580.)
      const calls = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          callTool(gateway, "worker__progress", { steps: 4 }, { _meta: { progressToken: i % 2 === 0 ? 1_000 + i : `tok-${i}` } })
        )
      )
      const all = gateway.messages
      calls.forEach((reply, i) => {
        const token = i % 2 === 0 ? 1_000 + i : `tok-${i}`
        const mine = all.filter((m) => m.method === "notifications/progress" && m.params.progressToken === token)
        expect(mine.map((m) => m.params.progress)).toEqual([1, 2, 3, 4])
        for (const m of mine) expect(all.indexOf(m)).toBeLessThan(all.indexOf(reply))
      })

      const failed = await callTool(gateway, "worker__fail")
      expect(failed.error).toBeUndefined()
      expect(failed.result).toEqual({ content: [{ type: "text", text: "this tool always fails" }], isError: true })

      const logged = await callTool(gateway, "worker__log", { message: "hello from the worker" })
      const log = gateway.messages.find((m) => m.method === "notifications/message")
      expect(log.params).toEqual({ level: "info", logger: "worker", data: "hello from the worker" })
      expect(gateway.messages.indexOf(log)).toBeLessThan(gateway.messages.indexOf(logged))
    } finally {
      await shutdown(gateway)
    }
    assertOnlyFrames(gateway.stdout())
  }, 60_000)
})

describe("gateway: tool names", () => {
  it("odd and over-long tool names are listed as valid unique names, and calls reach the right tool", async () => {
    const gateway = await startInitialized({ backends: [fixtureBackend("odd", ["--odd-names"])] })
    try {
      const tools: Array<{ name: string; description: string }> = (await gateway.request("tools/list", {})).result.tools
      const names = tools.map((t) => t.name)
      for (const name of names) expect(name).toMatch(VALID_NAME)
      expect(new Set(names).size).toBe(names.length)

      const long = "x".repeat(70)
      const originals = [
        "files.read",
        "files/read",
        "files read",
        "café_ünïcode",
        "emoji_🚀_launch",
        `very_long_${long}_one`,
        `very_long_${long}_two`
      ]
      const exposedFor = new Map<string, string>()
      for (const original of originals) {
        const tool = tools.find((t) => t.description === `[odd] Odd name ${JSON.stringify(original)}`)
        expect(tool, original).toBeDefined()
        exposedFor.set(original, tool!.name)
      }
      expect(exposedFor.get("files.read")).toBe("odd__files_read")
      expect(exposedFor.get("café_ünïcode")).toBe("odd__caf___n_code")
      expect(exposedFor.get("emoji_🚀_launch")).toBe("odd__emoji___launch")
      for (const original of [`very_long_${long}_one`, `very_long_${long}_two`]) {
        expect(exposedFor.get(original)).toHaveLength(64)
        expect(exposedFor.get(original)).toMatch(/^odd__very_long_x+_[0-9a-f]{6}$/)
      }

      // Each listed name reaches its own tool (the fixture answers "<its name> called").
      for (const [original, name] of exposedFor) {
        const reply = await callTool(gateway, name)
        expect(reply.error, name).toBeUndefined()
        expect(firstText(reply.result)).toBe(`${original} called`)
      }
      // Stable: listed again, the same names.
      expect(await listNames(gateway)).toEqual(names)
    } finally {
      await shutdown(gateway)
    }
    assertOnlyFrames(gateway.stdout())
  }, 60_000)
})
