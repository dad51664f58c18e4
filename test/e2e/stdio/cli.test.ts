/**
 * End to end: the built CLI, spawned as an MCP client and an LSP-style client would spawn it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { spawn, spawnSync } from "node:child_process"
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs"
import { join, relative } from "node:path"
import * as rpc from "vscode-jsonrpc/node.js"
import {
  assertOnlyFrames,
  BIN,
  cleanEnv,
  FIXTURE_SERVER,
  ROOT,
  contentLengthFrames,
  startGateway,
  tempDir
} from "../../support/stdioClient.js"
import { startFakeOpenAI } from "../../support/fakeOpenAI.js"
import { descendants, isAlive, until } from "../../support/process.js"

const run = (input: string, options: { args?: Array<string>; env?: NodeJS.ProcessEnv; cwd?: string } = {}) =>
  spawnSync(process.execPath, [BIN, ...(options.args ?? [])], {
    input,
    cwd: options.cwd ?? tempDir(),
    env: options.env ?? cleanEnv(),
    timeout: 20_000
  })

describe("CLI over stdio", () => {
  it("answers a piped ping with exactly one frame and exits 0", () => {
    const result = run('{"jsonrpc":"2.0","id":"a","method":"ping"}\n')
    expect(result.stdout.toString("utf8")).toBe('{"jsonrpc":"2.0","id":"a","result":{}}\n')
    expect(result.status).toBe(0)
  })

  it("answers a bad line with -32700 and the next request as usual", () => {
    const result = run('{bad\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
    const frames = assertOnlyFrames(result.stdout)
    expect(frames).toHaveLength(2)
    expect(frames[0]).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } })
    expect(frames[1]).toEqual({ jsonrpc: "2.0", id: 2, result: {} })
    expect(result.status).toBe(0)
  })

  it("refuses requests before initialize with -32001 and unknown methods with -32601", () => {
    const result = run(
      [
        { jsonrpc: "2.0", id: 1, method: "tools/list" },
        { jsonrpc: "2.0", id: 2, method: "agentify/orchestrateTask", params: { query: "x" } },
        {
          jsonrpc: "2.0",
          id: 3,
          method: "initialize",
          params: {
            protocolVersion: "2025-06-18",
            capabilities: {},
            clientInfo: { name: "t", version: "1" },
            initializationOptions: { backends: [{ id: "echo", command: process.execPath, args: [FIXTURE_SERVER] }] }
          }
        }
      ]
        .map((m) => JSON.stringify(m))
        .join("\n") + "\n"
    )
    const frames = assertOnlyFrames(result.stdout)
    const byId = new Map(frames.map((f) => [f.id, f]))
    expect(byId.get(1).error).toEqual({
      code: -32001,
      message:
        "Gateway not fully initialized: send initialize and wait for its reply before tools/list (only ping and shutdown may come earlier)",
      data: { method: "tools/list" }
    })
    expect(byId.get(2).error.code).toBe(-32001)
    expect(byId.get(3).result.protocolVersion).toBe("2025-06-18")
  })

  it("after initialize: unknown methods get -32601, ping and tools/list work, notifications get no reply", async () => {
    const gateway = startGateway()
    try {
      await gateway.request("initialize", {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "t", version: "1" }
      })
      gateway.send({ jsonrpc: "2.0", method: "notifications/initialized" })
      expect((await gateway.request("no/such/method", {})).error).toEqual({
        code: -32601,
        message: "Method not found: no/such/method"
      })
      expect((await gateway.request("ping")).result).toEqual({})
      expect((await gateway.request("tools/list", {})).result.tools.length).toBeGreaterThan(1)
    } finally {
      await gateway.close()
    }
    const frames = assertOnlyFrames(gateway.stdout())
    // initialize, the -32601, ping and tools/list: nothing for the notification.
    expect(frames.filter((f) => "id" in f)).toHaveLength(4)
  })

  it("the MCP TypeScript SDK client connects, lists and calls tools of the embedded default", async () => {
    const cwd = tempDir()
    writeFileSync(join(cwd, "notes.txt"), "hello from notes\n")
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN],
      cwd,
      env: cleanEnv() as Record<string, string>,
      stderr: "pipe"
    })
    const client = new Client({ name: "sdk-test", version: "1.0.0" })
    await client.connect(transport)
    try {
      expect(client.getServerVersion()?.name).toBe("mcp-agentify")
      expect(client.getServerCapabilities()?.tools?.listChanged).toBe(true)
      const { tools } = await client.listTools()
      const names = tools.map((t) => t.name)
      expect(names[0]).toBe("agentify_orchestrate")
      expect(names).toContain("filesystem__read_text_file")
      const read = tools.find((t) => t.name === "filesystem__read_text_file")!
      expect(read.description).toMatch(/^\[filesystem\] /)
      const result = await client.callTool({ name: "filesystem__read_text_file", arguments: { path: join(cwd, "notes.txt") } })
      expect(result.isError).not.toBe(true)
      expect((result.content as Array<{ text: string }>)[0]!.text).toContain("hello from notes")
      // No key: the orchestrate tool answers with an isError result naming -32002.
      const orchestrated = await client.callTool({ name: "agentify_orchestrate", arguments: { query: "show notes.txt" } })
      expect(orchestrated.isError).toBe(true)
      expect((orchestrated.content as Array<{ text: string }>)[0]!.text).toMatch(/-32002.*OPENAI_API_KEY/)
    } finally {
      await client.close()
    }
  })

  it("a vscode-jsonrpc client with Content-Length framing and initializationOptions connects", async () => {
    const child = spawn(process.execPath, [BIN], { cwd: tempDir(), env: cleanEnv(), stdio: ["pipe", "pipe", "pipe"] })
    const raw: Array<Buffer> = []
    child.stdout.on("data", (chunk: Buffer) => raw.push(chunk))
    const connection = rpc.createMessageConnection(
      new rpc.StreamMessageReader(child.stdout),
      new rpc.StreamMessageWriter(child.stdin)
    )
    connection.listen()
    try {
      const result: any = await connection.sendRequest("initialize", {
        processId: process.pid,
        rootUri: null,
        capabilities: {},
        initializationOptions: {
          OPENAI_API_KEY: "sk-lsp-client-000000",
          logLevel: "debug",
          backends: [{ id: "echo", command: process.execPath, args: [FIXTURE_SERVER, "--name", "echo"] }]
        }
      })
      expect(result.serverInfo.name).toBe("mcp-agentify")
      expect(result.capabilities.tools.listChanged).toBe(true)
      const tools: any = await connection.sendRequest("tools/list", {})
      expect(tools.tools.map((t: any) => t.name)).toContain("echo__echo")
      const echoed: any = await connection.sendRequest("tools/call", { name: "echo__echo", arguments: { text: "hi" } })
      expect(JSON.stringify(echoed.content)).toContain("hi")
      await expect(
        connection.sendRequest("initialize", { processId: null, rootUri: null, capabilities: {} })
      ).rejects.toMatchObject({ code: -32600 })
      await connection.sendRequest("shutdown")
      connection.sendNotification("exit")
      const [code] = (await new Promise((resolve) => child.once("exit", (...args) => resolve(args)))) as unknown as [number]
      expect(code).toBe(0)
      const frames = contentLengthFrames(Buffer.concat(raw))
      expect(frames.length).toBeGreaterThanOrEqual(4)
    } finally {
      connection.dispose()
      child.kill("SIGKILL")
    }
  })

  it("invalid initializationOptions get -32602 naming each problem, and initialize can be retried", async () => {
    const gateway = startGateway()
    try {
      const bad = await gateway.request("initialize", {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "t", version: "1" },
        initializationOptions: { backends: [{ id: "no spaces allowed", command: "x" }], routing: "random" }
      })
      expect(bad.error!.code).toBe(-32602)
      expect(bad.error!.message).toContain("backends[0].id: must match ^[a-zA-Z0-9_-]{1,64}$")
      expect(bad.error!.data.issues.some((i: string) => i.startsWith("routing: "))).toBe(true)
      const good = await gateway.request("initialize", {
        protocolVersion: "1999-01-01",
        capabilities: {},
        clientInfo: { name: "t", version: "1" },
        initializationOptions: { backends: [{ id: "echo", command: process.execPath, args: [FIXTURE_SERVER] }] }
      })
      expect(good.result.protocolVersion).toBe("2025-11-25")
    } finally {
      const { code } = await gateway.close()
      expect(code).toBe(0)
      assertOnlyFrames(gateway.stdout())
    }
  })

  it("an invalid config file: a clear message on stderr, exit code 2, no stack trace", () => {
    const dir = tempDir()
    const file = join(dir, "config.json")
    writeFileSync(file, JSON.stringify({ backends: [{ id: "a b", command: "" }] }))
    const result = run("", { args: ["--config", file] })
    expect(result.status).toBe(2)
    expect(result.stdout.length).toBe(0)
    const stderr = result.stderr.toString("utf8")
    expect(stderr).toContain("backends[0].id: must match ^[a-zA-Z0-9_-]{1,64}$")
    expect(stderr).toContain("backends[0].command: must be a non-empty string")
    expect(stderr).not.toMatch(/\bat .*\.js:\d+/)
    const viaEnv = run("", { env: cleanEnv({ AGENTIFY_CONFIG: join(dir, "missing.json") }) })
    expect(viaEnv.status).toBe(2)
    expect(viaEnv.stderr.toString("utf8")).toMatch(/missing\.json.*no such file/)
  })

  it("unknown arguments get one line naming them and pointing at --help, and exit 2", () => {
    const result = run("", { args: ["--bogus"] })
    expect(result.status).toBe(2)
    expect(result.stderr.toString("utf8")).toBe("mcp-agentify: unknown option '--bogus'; mcp-agentify --help shows the usage\n")
    expect(result.stdout.length).toBe(0)
  })

  it("--help prints the usage on stdout (so that `--help | less` shows it) and exits 0, as --version does", () => {
    const help = run("", { args: ["--help"] })
    expect(help.status).toBe(0)
    expect(help.stdout.toString("utf8")).toContain("Usage: mcp-agentify")
    expect(help.stderr.toString("utf8")).toBe("")
    const version = run("", { args: ["--version"] })
    expect(version.status).toBe(0)
    expect(version.stdout.toString("utf8")).toMatch(/^\d+\.\d+\.\d+/)
  })

  it("logs go to stderr as JSON lines; stdout holds frames only, even at trace level", async () => {
    const gateway = startGateway({ args: ["--log-level", "trace"] })
    await gateway.request("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "t", version: "1" }
    })
    await gateway.request("tools/list", {})
    gateway.sendRaw("not json at all\n")
    await gateway.waitFor((m) => m.error?.code === -32700)
    const { code } = await gateway.close()
    expect(code).toBe(0)
    assertOnlyFrames(gateway.stdout())
    const lines = gateway.stderr().trim().split("\n")
    expect(lines.length).toBeGreaterThan(2)
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow()
  })

  it.each(["SIGTERM", "SIGINT"] as const)("%s stops the backends and exits 0", async (signal) => {
    const gateway = startGateway()
    await gateway.request("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "t", version: "1" }
    })
    // initialize is answered while the backends start: their processes appear after it.
    const tree = await until("the backend's process", () => {
      const found = descendants(gateway.pid)
      return found.length >= 1 ? found : undefined
    })
    gateway.child.kill(signal)
    const { code } = await gateway.exited
    expect(code).toBe(0)
    // Stopped by the gateway before it exited (not only announced), and nothing left running.
    expect(gateway.stderr()).toMatch(/"msg":"backend stopped","backend":"filesystem"/)
    expect(tree.filter(isAlive)).toEqual([])
  })
})

describe("mcp-agentify check", () => {
  const configIn = (dir: string, config: unknown) => {
    const file = join(dir, "gateway.json")
    writeFileSync(file, JSON.stringify(config))
    return file
  }

  it("a good configuration: every backend's state, protocol and offer in a table, exit 0", () => {
    const dir = tempDir()
    const file = configIn(dir, {
      backends: [
        { id: "fx", command: process.execPath, args: [FIXTURE_SERVER] },
        { id: "off", command: "whatever", enabled: false }
      ]
    })
    const result = run("", { args: ["check", "--config", file, "--log-level", "silent"], cwd: dir })
    const out = result.stdout.toString("utf8")
    expect(result.status).toBe(0)
    expect(out).toMatch(/^backend\s+transport\s+state\s+protocol\s+tools\s+resources\s+prompts\s+start-up$/m)
    expect(out).toMatch(/^fx\s+stdio\s+ready\s+2025-11-25\s+\d+\s+-\s+-\s+\d+ ms$/m)
    expect(out).toMatch(/^off\s+stdio\s+stopped/m)
    expect(out).toContain("every enabled backend is ready")
    expect(out).toContain("OpenAI key: not set")
  })

  it("a broken one: each problem with its fix, exit 1; a bad file is exit 2; check serves nothing", () => {
    const dir = tempDir()
    const file = configIn(dir, {
      backends: [
        { id: "ghost", command: "no-such-mcp-server-anywhere" },
        { id: "nowhere", command: process.execPath, args: [FIXTURE_SERVER], cwd: join(dir, "missing") }
      ]
    })
    const result = run("", { args: ["check", "--config", file, "--log-level", "silent"], cwd: dir })
    const out = result.stdout.toString("utf8")
    expect(result.status).toBe(1)
    expect(out).toContain("- ghost: failed: command not found: no-such-mcp-server-anywhere")
    expect(out).toContain("fix: install the command or give its absolute path in `command`")
    expect(out).toContain("fix: create the directory or fix `cwd`")
    writeFileSync(join(dir, "bad.json"), "{ not json")
    expect(run("", { args: ["check", "--config", join(dir, "bad.json")], cwd: dir }).status).toBe(2)
    expect(run("", { args: ["check", "--http", "0"], cwd: dir }).status).toBe(2)
    expect(run("", { args: ["serve-please"], cwd: dir }).status).toBe(2)
  })

  it("tools without annotations: a count per backend and what they are taken for; --verbose names each", () => {
    const dir = tempDir()
    const file = configIn(dir, {
      backends: [
        { id: "many", command: process.execPath, args: [FIXTURE_SERVER, "--unannotated", "--tools", "40"] },
        { id: "said", command: process.execPath, args: [FIXTURE_SERVER] }
      ]
    })
    const brief = run("", { args: ["check", "--config", file, "--log-level", "silent"], cwd: dir })
    const out = brief.stdout.toString("utf8")
    expect(brief.status).toBe(0)
    expect(out).toContain(
      "tools without annotations, taken for (declare better in a backend's flow.tools; --verbose names each):"
    )
    expect(out).toMatch(/^ {2}many: (\d+) of \1 tools \(\1 destructive, open-world\)$/m)
    expect(out).not.toMatch(/^ {2}said: /m)
    expect(out).not.toContain("many__tool_0")
    const verbose = run("", { args: ["check", "--config", file, "--log-level", "silent", "--verbose"], cwd: dir })
    const detail = verbose.stdout.toString("utf8")
    expect(detail).toMatch(/^ {2}many__tool_0: destructive, open-world$/m)
    expect(detail).toMatch(/^ {2}many__tool_39: destructive, open-world$/m)
    expect(run("", { args: ["tools", "--verbose"], cwd: dir }).status).toBe(2)
  })

  it("a backend that fails to start: the first line of its error, not only the stack after it, with its fix", () => {
    const dir = tempDir()
    const file = configIn(dir, {
      backends: [{ id: "lost", command: process.execPath, args: ["${configDir}/lost/index.js"], restartOnCrash: false }]
    })
    const result = run("", { args: ["check", "--config", file, "--log-level", "silent"], cwd: tempDir() })
    const out = result.stdout.toString("utf8")
    expect(result.status).toBe(1)
    // Node prints the error, then its stack, the error's fields and its version: the line that says why comes first.
    expect(out).toContain(
      `- lost: failed: the process exited with code 1 during server/discover: Error: Cannot find module '${join(dir, "lost", "index.js")}'`
    )
    expect(out).toContain("fix: a file it names does not exist")
  })

  it("remote backends: a refused token and an address nobody answers, each with its fix", () => {
    const dir = tempDir()
    const file = configIn(dir, {
      mcpServers: {
        closed: { url: "http://127.0.0.1:1/mcp" },
        secret: { url: "http://127.0.0.1:1/mcp", headers: { Authorization: "Bearer ${env:NOT_SET_TOKEN}" } }
      }
    })
    const result = run("", { args: ["check", "--config", file, "--log-level", "silent"], cwd: dir })
    const out = result.stdout.toString("utf8")
    expect(result.status).toBe(1)
    expect(out).toMatch(/^closed\s+http\s+(failed|restarting)/m)
    expect(out).toContain("fix: check that the server is running and that `url` (host, port, http/https) is right")
    expect(out).toContain("- secret: failed: backend 'secret' refers to ${env:NOT_SET_TOKEN}")
    expect(out).toContain("fix: set that variable in the environment the gateway runs in")
  })
})

describe("--servers-dir", () => {
  const SERVERS = new URL("../../fixtures/servers/", import.meta.url).pathname

  it("check: a Node and a Python server detected and started, config.json applied, a folder without a server named", () => {
    const result = run("", { args: ["check", "--servers-dir", SERVERS, "--log-level", "silent"] })
    const out = result.stdout.toString("utf8")
    expect(result.status).toBe(0)
    expect(out).toContain(`configuration: servers directory:${SERVERS.replace(/\/$/, "")}\n`)
    expect(out).toContain("found in ")
    expect(out).toMatch(/node-echo: package\.json bin \(node server\.mjs\)/)
    expect(out).toMatch(/py-echo: pyproject\.toml \[project\.scripts\] py-echo \((uv run|python3, py_echo\.server:main)\)/)
    expect(out).toContain("not a server in")
    expect(out).toContain("notes: no package.json, pyproject.toml, go.mod or Cargo.toml")
    expect(out).toMatch(/^node-echo\s+stdio\s+ready\s+2025-11-25\s+1\s/m)
    expect(out).toMatch(/^py-echo\s+stdio\s+ready\s+2025-11-25\s+1\s/m)
  })

  it("follows linked folders (no loops, no twins) and names every entry it does not use, with why", () => {
    const dir = tempDir()
    symlinkSync(join(SERVERS, "node-echo"), join(dir, "linked-echo"))
    symlinkSync(join(SERVERS, "node-echo"), join(dir, "twin-echo"))
    symlinkSync(dir, join(dir, "loop"))
    symlinkSync(join(dir, "nowhere"), join(dir, "dangling"))
    symlinkSync(join(dir, "self-a"), join(dir, "self-b"))
    symlinkSync(join(dir, "self-b"), join(dir, "self-a"))
    mkdirSync(join(dir, ".git"))
    writeFileSync(join(dir, "README.md"), "servers")
    const result = run("", { args: ["check", "--servers-dir", dir, "--log-level", "silent"] })
    const out = result.stdout.toString("utf8")
    expect(result.status).toBe(0)
    expect(out).toMatch(/linked-echo: package\.json bin \(node server\.mjs\)/)
    expect(out).toMatch(/^linked-echo\s+stdio\s+ready/m)
    for (const reason of [
      ".git: hidden",
      "README.md: a file, not a folder",
      "dangling: a link to nothing (ENOENT)",
      "loop: links back to the servers directory or a folder above it",
      "self-a: a link that loops",
      "twin-echo: the same folder as linked-echo"
    ]) {
      expect(out).toContain(reason)
    }
    expect(out).not.toMatch(/^twin-echo\s+stdio/m)
  })

  it("serves the servers it found beside --config's, under their folder names", async () => {
    const dir = tempDir()
    const file = join(dir, "gateway.json")
    writeFileSync(file, JSON.stringify({ backends: [{ id: "fx", command: process.execPath, args: [FIXTURE_SERVER] }] }))
    const gateway = startGateway({ args: ["--config", file, "--servers-dir", SERVERS], cwd: dir })
    try {
      await gateway.initialize()
      const names = (await gateway.request("tools/list")).result.tools.map((t: { name: string }) => t.name)
      expect(names).toEqual(expect.arrayContaining(["fx__echo", "node-echo__echo", "py-echo__echo"]))
      const node = await gateway.callTool("node-echo__echo", { text: "a" })
      expect(node.result.content[0].text).toBe("node hi from config.json: a")
      const python = await gateway.callTool("py-echo__echo", { text: "b" })
      expect(python.result.content[0].text).toBe("python: b")
    } finally {
      await gateway.close()
    }
    // The same id in both is refused, naming both places.
    writeFileSync(file, JSON.stringify({ backends: [{ id: "py-echo", command: "x" }] }))
    const clash = run("", { args: ["--config", file, "--servers-dir", SERVERS] })
    expect(clash.status).toBe(2)
    expect(clash.stderr.toString()).toContain("the server 'py-echo' is both in")
    expect(run("", { args: ["--servers-dir", join(dir, "nope")] }).status).toBe(2)
  }, 30_000)
})

describe("subcommands for a person in a terminal", () => {
  /** The CLI run to its end without blocking this process (the fake model answers from here). */
  const runAsync = (args: ReadonlyArray<string>, options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [BIN, ...args], {
        cwd: options.cwd ?? tempDir(),
        env: options.env ?? cleanEnv(),
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stdout = ""
      let stderr = ""
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
      child.on("exit", (status) => resolve({ status, stdout, stderr }))
    })

  const project = () => {
    const dir = tempDir()
    writeFileSync(join(dir, "notes.txt"), "pelican notes\n")
    return dir
  }

  it("tools: every tool with its backend and one line of description, on the embedded default", () => {
    const result = run("", { args: ["tools"], cwd: project() })
    const out = result.stdout.toString("utf8")
    expect(result.status).toBe(0)
    expect(out).toMatch(/^tool\s+backend\s+description$/m)
    expect(out).toMatch(/^agentify_orchestrate\s+gateway\s+\S/m)
    expect(out).toMatch(/^filesystem__read_text_file\s+filesystem\s+Read the complete contents/m)
    expect(out).toMatch(/^agentify_run_code\s+gateway\s+Runs a JavaScript script/m)
    expect(out).toMatch(/^16 tools$/m)
    // A person gets the answer, not the start-up log.
    expect(result.stderr.toString("utf8")).not.toContain("backend ready")
  })

  it("call: prints the result; an isError result, an unknown tool or bad JSON exit non-zero", () => {
    const dir = project()
    const ok = run("", { args: ["call", "filesystem__read_text_file", '{"path": "notes.txt"}'], cwd: dir })
    expect(ok.stdout.toString("utf8")).toBe("pelican notes\n\n")
    expect(ok.status).toBe(0)
    const failed = run("", { args: ["call", "filesystem__read_text_file", '{"path": "/etc/passwd"}'], cwd: dir })
    expect(failed.status).toBe(1)
    expect(failed.stdout.toString("utf8")).toContain("Access denied")
    const unknown = run("", { args: ["call", "filesystem__nope"], cwd: dir })
    expect(unknown.status).toBe(1)
    expect(unknown.stdout.toString("utf8")).toMatch(/^error -32602: .*filesystem__nope/)
    const bad = run("", { args: ["call", "filesystem__read_text_file", "{path: x}"], cwd: dir })
    expect(bad.status).toBe(2)
    expect(bad.stderr.toString("utf8")).toContain("call: the arguments are not JSON")
  })

  it("ask: the tools offered, the model's choice, the plan and the result, against a Chat Completions server", async () => {
    const dir = project()
    const model = await startFakeOpenAI({ tool: "filesystem__read_text_file", arguments: { path: join(dir, "notes.txt") } })
    try {
      const env = cleanEnv({ OPENAI_API_KEY: "sk-test-terminal-123456", OPENAI_BASE_URL: model.baseUrl })
      const asked = await runAsync(["ask", "show me the pelican notes", "--cwd", dir], { env, cwd: dir })
      expect(asked.status, `${asked.stdout}\n${asked.stderr.slice(-800)}`).toBe(0)
      expect(asked.stdout).toMatch(
        /^offered \(\d+, in the order the task ranking sent them; in brackets each one's word-match score alone, one input of that ranking\): filesystem__/m
      )
      expect(asked.stdout).toContain(`choice: filesystem__read_text_file {"path":"${join(dir, "notes.txt")}"}`)
      expect(asked.stdout).toMatch(/^plan: tools\/call on filesystem /m)
      expect(asked.stdout).toMatch(/^result:\npelican notes$/m)
      // The model heard the query and the working directory.
      expect(JSON.stringify(model.requests[0]?.body)).toContain(dir)
      // No key: the error says what is missing, and the exit status says it failed.
      const nokey = await runAsync(["ask", "anything"], { cwd: dir })
      expect(nokey.status).toBe(1)
      expect(nokey.stdout).toContain("error -32002: No OpenAI API key is configured")
      // ...and how to use a local model instead.
      expect(nokey.stdout).toContain("set OPENAI_BASE_URL")
      expect(nokey.stdout).toContain("examples/fake-model.mjs")
    } finally {
      await model.close()
    }
  }, 30_000)

  it("ask with the example fake model (examples/fake-model.mjs): an orchestration without a key, in both modes", async () => {
    const dir = tempDir("agentify-fake-model-")
    writeFileSync(join(dir, "README.md"), "# demo\nhello from the example\n")
    const fake = spawn(process.execPath, [join(ROOT, "examples", "fake-model.mjs"), "--port", "0"], {
      stdio: ["ignore", "ignore", "pipe"]
    })
    try {
      let said = ""
      fake.stderr.on("data", (chunk: Buffer) => (said += chunk.toString("utf8")))
      const base = await until("the fake model's address", () => /fake model at (\S+)/.exec(said)?.[1])
      const env = cleanEnv({ OPENAI_API_KEY: "fake", OPENAI_BASE_URL: base })
      const tools = await runAsync(["ask", "read README.md", "--cwd", dir], { env, cwd: dir })
      expect(tools.status, tools.stderr.slice(-800)).toBe(0)
      expect(tools.stdout).toMatch(/^choice: filesystem__read(_text)?_file \{"path":"README\.md"\}$/m)
      expect(tools.stdout).toContain("hello from the example")
      const code = await runAsync(["ask", "list the directory", "--cwd", dir, "--mode", "code"], { env, cwd: dir })
      expect(code.status, code.stderr.slice(-800)).toBe(0)
      expect(code.stdout).toMatch(/^script:\nreturn await tools\.filesystem\.list_directory/m)
      expect(code.stdout).toContain("[FILE] README.md")
    } finally {
      fake.kill()
    }
  }, 30_000)

  it("tools: a backend that cannot start is named and the exit status is 1, as check's", () => {
    const dir = project()
    const file = join(dir, "agentify.json")
    writeFileSync(
      file,
      JSON.stringify({
        backends: [
          { id: "fx", type: "stdio", command: process.execPath, args: [FIXTURE_SERVER] },
          { id: "broken", type: "stdio", command: process.execPath, args: ["-e", "process.exit(3)"], restartOnCrash: false }
        ]
      })
    )
    const result = run("", { args: ["tools", "--config", file], cwd: dir })
    const out = result.stdout.toString("utf8")
    expect(out).toMatch(/^fx__echo\s+fx\s/m)
    expect(out).toMatch(/^backend broken failed: /m)
    expect(result.status).toBe(1)
  })

  it("tools: the whole catalog however large (a terminal is not a model's context); tools QUERY: its matches, best first", () => {
    const dir = project()
    const file = join(dir, "agentify.json")
    // 120 tools and more: past maxListedTools (64), where a client's tools/list holds the search tools.
    writeFileSync(
      file,
      JSON.stringify({ backends: [{ id: "fx", command: process.execPath, args: [FIXTURE_SERVER, "--tools", "120"] }] })
    )
    const all = run("", { args: ["tools", "--config", file], cwd: dir })
    const out = all.stdout.toString("utf8")
    expect(all.status).toBe(0)
    expect(out).toMatch(/^fx__tool_0\s+fx\s+Generated tool number 0$/m)
    expect(out).toMatch(/^fx__tool_119\s+fx\s+Generated tool number 119$/m)
    expect(out).toMatch(/^fx__echo\s+fx\s+Echoes its arguments/m)
    const listed = out.split("\n").filter((line) => /^fx__\S+\s+fx\s/.test(line)).length
    expect(listed).toBeGreaterThan(120)
    expect(out).toContain(`\n${listed + 2} tools\n`)
    expect(out).not.toMatch(/^agentify_search_tools\s/m)
    const searched = run("", { args: ["tools", "echoes its arguments", "--config", file], cwd: dir })
    const found = searched.stdout.toString("utf8").split("\n")
    expect(searched.status).toBe(0)
    expect(found[0]).toMatch(/^tool\s+backend\s+description$/)
    expect(found[1]).toMatch(/^fx__echo\s+fx\s+Echoes its arguments/)
    expect(found.find((line) => / tools? for /.test(line))).toMatch(/^\d+ tools? for "echoes its arguments", best first/)
    expect(run("", { args: ["tools", "a", "b"], cwd: dir }).status).toBe(2)
  })

  it("call: a mistyped tool name gets the closest one", () => {
    const unknown = run("", { args: ["call", "filesystem__read_txt_file", '{"path": "notes.txt"}'], cwd: project() })
    expect(unknown.status).toBe(1)
    expect(unknown.stdout.toString("utf8")).toContain("(did you mean 'filesystem__read_text_file'?)")
  })

  it("check is quiet by default: its report, and no log lines, on a stderr that is not a terminal", () => {
    const result = run("", { args: ["check"], cwd: project() })
    expect(result.status).toBe(0)
    expect(result.stdout.toString("utf8")).toMatch(/^filesystem \(Filesystem\)\s+stdio\s+ready/m)
    expect(result.stderr.toString("utf8")).not.toContain('"level":"info"')
  })

  it("ask: each step of a two-step task with its time and outcome, then the result and the model's answer", async () => {
    const dir = project()
    const model = await startFakeOpenAI()
    model.setSteps([
      { tool: "filesystem__list_directory", arguments: { path: dir } },
      { tool: "filesystem__read_text_file", arguments: { path: join(dir, "notes.txt") } },
      { text: "notes.txt holds the pelican notes." }
    ])
    try {
      const env = cleanEnv({ OPENAI_API_KEY: "sk-test-terminal-123456", OPENAI_BASE_URL: model.baseUrl })
      const asked = await runAsync(["ask", "find the pelican notes and show them", "--cwd", dir], { env, cwd: dir })
      expect(asked.status, asked.stderr.slice(-800)).toBe(0)
      expect(asked.stdout).toMatch(
        /^step 1: filesystem__list_directory, \d+ ms, ok\nstep 2: filesystem__read_text_file, \d+ ms, ok$/m
      )
      expect(asked.stdout).toMatch(/^result:\npelican notes\n/m)
      expect(asked.stdout).toMatch(/^answer:\nnotes.txt holds the pelican notes.$/m)
    } finally {
      await model.close()
    }
  }, 30_000)

  it("ask --mode code: the model's script is printed, then the result of its run", async () => {
    const dir = project()
    const model = await startFakeOpenAI()
    const code = `const file = await tools.filesystem.read_text_file({ path: ${JSON.stringify(join(dir, "notes.txt"))} })\nreturn String(file.content ?? file).toUpperCase()`
    model.setSteps([{ tool: "run_code", arguments: { code } }, { text: "Shouted." }])
    try {
      const env = cleanEnv({ OPENAI_API_KEY: "sk-test-terminal-123456", OPENAI_BASE_URL: model.baseUrl })
      const asked = await runAsync(["ask", "shout the notes", "--cwd", dir, "--mode", "code"], { env, cwd: dir })
      expect(asked.status, asked.stderr.slice(-800)).toBe(0)
      expect(asked.stdout).toContain(`script:\n${code}\n`)
      expect(asked.stdout).toMatch(/^step 1: filesystem__read_text_file, \d+ ms, ok$/m)
      expect(asked.stdout).toMatch(/^result:\nPELICAN NOTES\n/m)
      expect(model.requests[0]!.body.tools.map((t: any) => t.function.name)).toEqual(["run_code"])
      expect(run("", { args: ["ask", "x", "--mode", "scripts"] }).stderr.toString("utf8")).toContain("--mode is tools or code")
    } finally {
      await model.close()
    }
  }, 30_000)

  it("in a terminal, the stdio server's hint names a command that runs here", async () => {
    // `script` gives the gateway a terminal for its stdin; a clone has no mcp-agentify on PATH.
    const dir = tempDir()
    const result = spawnSync("script", ["-qec", `${process.execPath} ${BIN} --log-level silent`, "/dev/null"], {
      cwd: dir,
      env: cleanEnv({ PATH: "/usr/bin:/bin" }),
      input: "",
      timeout: 10_000
    })
    const said = result.stdout.toString("utf8")
    expect(said).toContain(`in a terminal try: node ${relative(dir, BIN)} tools`)
  })

  it("each warning is said once, however often the configuration is read (start-up, initialize, backend start)", async () => {
    const dir = tempDir()
    writeFileSync(join(dir, ".env"), "AGENTIFY_HTTP=9999\nFOO=1\n")
    writeFileSync(
      join(dir, "mcp.json"),
      JSON.stringify({ servers: { secret: { type: "stdio", command: "node", env: { TOKEN: "${input:tok}" } } } })
    )
    const gateway = startGateway({ args: ["--config", "mcp.json"], cwd: dir })
    try {
      await gateway.initialize()
      await gateway.request("tools/list")
    } finally {
      await gateway.close()
    }
    const count = (pattern: RegExp) =>
      gateway
        .stderr()
        .split("\n")
        .filter((line) => pattern.test(line)).length
    expect(count(/ignoring variables in \.env/)).toBe(1)
    expect(count(/uses VS Code's \$\{input:tok\} in env TOKEN/)).toBe(1)
  }, 30_000)

  it("mistakes get one line with a suggestion, not the whole usage", () => {
    const option = run("", { args: ["--conifg", "x.json"] })
    expect(option.status).toBe(2)
    expect(option.stderr.toString("utf8")).toBe(
      "mcp-agentify: unknown option '--conifg' (did you mean --config?); mcp-agentify --help shows the usage\n"
    )
    const command = run("", { args: ["tols"] })
    expect(command.status).toBe(2)
    expect(command.stderr.toString("utf8")).toBe(
      "mcp-agentify: unknown command 'tols' (did you mean tools?); mcp-agentify --help shows the usage\n"
    )
    expect(run("", { args: ["ask"] }).stderr.toString("utf8")).toContain("ask needs a question")
  })
})
