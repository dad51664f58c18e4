import { describe, expect, it } from "@effect/vitest"
import { Effect, Result, Exit, Option, Redacted } from "effect"
import { execFileSync } from "node:child_process"
import { writeFileSync } from "node:fs"
import { tempDir } from "../../support/stdioClient.js"
import { join } from "node:path"
import {
  decodeOptions,
  DEFAULT_MAX_TOOLS,
  describeBackend,
  embeddedDefault,
  backendEnv,
  GatewayConfig,
  load,
  MAX_CONFIG_FILE_BYTES,
  readConfigFile,
  readDotEnv,
  resolve,
  rootsOf,
  transportOf
} from "../../../src/config/Config.js"
import type { BackendConfig } from "../../../src/config/Config.js"
import { InvalidParams } from "../../../src/protocol/Errors.js"
import * as Secrets from "../../../src/observability/Secrets.js"

const tmp = () => tempDir("agentify-config-")

const issuesOf = (input: unknown) =>
  Result.match(decodeOptions(input, "initializationOptions"), {
    onFailure: (e) => e.issues,
    onSuccess: () => [] as ReadonlyArray<string>
  })

describe("GatewayOptions decoding", () => {
  it("applies BackendConfig defaults", () => {
    const options = Result.getOrThrow(decodeOptions({ backends: [{ id: "fs", command: "node" }] }, "x"))
    expect(options.backends).toEqual([{ id: "fs", command: "node", args: [], env: {}, enabled: true, restartOnCrash: true }])
  })

  it("names every problem with its path", () => {
    const issues = issuesOf({
      backends: [
        { id: "bad id!", command: "" },
        { id: "ok", command: "x", args: "nope" }
      ],
      maxToolsPerRequest: 0,
      routing: "magic"
    })
    expect(issues).toContain("backends[0].id: must match ^[a-zA-Z0-9_-]{1,64}$")
    expect(issues).toContain("backends[0].command: must be a non-empty string")
    expect(issues.some((i) => i.startsWith("backends[1].args: "))).toBe(true)
    expect(issues).toContain("maxToolsPerRequest: must be a whole number of tools from 1 to 128")
    expect(issues.some((i) => i.startsWith("routing: "))).toBe(true)
  })

  it("a backend's roots: absolute paths and file:// URIs become MCP roots; anything else is refused with its path", () => {
    const options = Result.getOrThrow(
      decodeOptions(
        {
          backends: [
            {
              id: "fs",
              command: "node",
              roots: ["/home/me/project", "file:///srv/data", { uri: "file:///tmp/x", name: "scratch" }]
            }
          ]
        },
        "x"
      )
    )
    expect(rootsOf(options.backends![0]!)).toEqual([
      { uri: "file:///home/me/project", name: "project" },
      { uri: "file:///srv/data" },
      { uri: "file:///tmp/x", name: "scratch" }
    ])
    expect(rootsOf({})).toEqual([])
    const issues = issuesOf({ backends: [{ id: "fs", command: "node", roots: ["relative/dir", { uri: "https://x" }] }] })
    expect(
      issues.some((i) => i.startsWith("backends[0].roots[0]") && i.includes("must be an absolute path or a file:// URI"))
    ).toBe(true)
    expect(issues.some((i) => i.startsWith("backends[0].roots[1]") && i.includes("must be a file:// URI"))).toBe(true)
  })

  it("says when a required field is missing", () => {
    expect(issuesOf({ backends: [{ id: "a" }] })).toEqual([
      "backends[0].command: is required (or give a url for a remote server)"
    ])
    expect(issuesOf({ backends: [{ id: "a", type: "sse" }] })).toEqual(["backends[0].url: is required for a sse backend"])
  })

  it("rejects duplicate backend ids and an empty backend list", () => {
    expect(
      issuesOf({
        backends: [
          { id: "a", command: "x" },
          { id: "a", command: "y" }
        ]
      })
    ).toEqual(["backends[1].id: duplicate backend id 'a'"])
    expect(issuesOf({ backends: [] })).toEqual(["backends: must list at least one backend"])
  })

  it("turns the Claude Desktop / Cursor mcpServers shape into stdio backends", () => {
    const options = Result.getOrThrow(
      decodeOptions(
        {
          mcpServers: {
            filesystem: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], env: {} },
            memory: {
              command: "npx",
              args: ["-y", "@modelcontextprotocol/server-memory"],
              disabled: true,
              requestTimeoutMs: 5000,
              restartOnCrash: false
            }
          }
        },
        "config file"
      )
    )
    expect(options.backends?.map((b) => [b.id, b.command, b.args.length, b.enabled])).toEqual([
      ["filesystem", "npx", 3, true],
      ["memory", "npx", 2, false]
    ])
    expect(options.backends?.[1]).toMatchObject({ requestTimeoutMs: 5000, restartOnCrash: false })
    expect(options.backends?.[0]).toMatchObject({ restartOnCrash: true })
  })

  it("client files as they are: names with spaces or dots become ids (kept for display), remote entries, VS Code's servers", () => {
    const options = Result.getOrThrow(
      decodeOptions(
        {
          mcpServers: {
            "my server": { command: "node", args: ["a.js"] },
            "my.server": { command: "node" },
            files: { command: "node", displayName: "Files" },
            hosted: { url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer abc" } },
            legacy: { type: "sse", url: "https://old.example.com/sse" }
          }
        },
        "config file"
      )
    )
    expect(options.backends?.map((b) => [b.id, b.displayName])).toEqual([
      ["my_server", "my server"],
      ["my_server_2", "my.server"],
      ["files", "Files"],
      ["hosted", undefined],
      ["legacy", undefined]
    ])
    expect(options.backends?.every((b) => b.refused === undefined)).toBe(true)
    expect(options.backends?.[3]).toMatchObject({ url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer abc" } })
    expect(options.backends?.map(transportOf)).toEqual(["stdio", "stdio", "stdio", "http", "sse"])
    expect(describeBackend(options.backends![3]!)).toEqual({
      id: "hosted",
      transport: "http",
      url: "https://mcp.example.com/mcp",
      headerNames: ["Authorization"],
      args: [],
      envKeys: [],
      enabled: true
    })

    const vscode = Result.getOrThrow(
      decodeOptions({ inputs: [], servers: { "fs tools": { type: "stdio", command: "node", args: ["x"] } } }, "config file")
    )
    expect(vscode.backends?.map((b) => [b.id, b.displayName, b.command])).toEqual([["fs_tools", "fs tools", "node"]])
    expect(issuesOf({ servers: { a: { command: "x" } }, mcpServers: { b: { command: "y" } } })).toEqual([
      "servers: give one of backends, mcpServers or servers, not mcpServers and servers"
    ])
    expect(issuesOf({ servers: { a: { type: "websocket", command: "x" } } })).toEqual([
      "servers.a.url: is required for a websocket backend"
    ])
    expect(issuesOf({ servers: { a: { type: "ftp", url: "ftp://x" } } })).toEqual([
      "servers.a.type: must be stdio, http, streamable-http, sse or websocket",
      "servers.a.url: must be an http://, https://, ws:// or wss:// URL"
    ])
    expect(issuesOf({ servers: { a: { type: "sse", url: "ws://x/sse" } } })).toEqual([
      "servers.a.url: must be an http:// or https:// URL"
    ])
  })

  it("${env:NAME} and ${NAME} in args, env and cwd come from the gateway's environment; an unset one refuses the backend", () => {
    const file = {
      path: "/etc/agentify.json",
      options: Result.getOrThrow(
        decodeOptions(
          {
            backends: [
              { id: "gh", command: "gh-mcp", args: ["--repo", "${env:REPO}", "${GH_TOKEN_X}"], env: { HOME_DIR: "${HOME}" } },
              { id: "broken", command: "x", args: ["${env:NOT_SET_ANYWHERE}"] }
            ]
          },
          "config file"
        )
      )
    }
    const config = resolve({ env: { REPO: "me/repo", GH_TOKEN_X: "ghp-from-env-123456", HOME: "/home/me" }, cwd: "/tmp", file })
    expect(config.backends[0]).toMatchObject({
      args: ["--repo", "me/repo", "ghp-from-env-123456"],
      env: { HOME_DIR: "/home/me" }
    })
    expect(config.backends[0]!.refused).toBeUndefined()
    expect(Secrets.scrub("token ghp-from-env-123456")).not.toContain("ghp-from-env-123456")
    expect(config.backends[1]!.refused).toBe(
      "backend 'broken' refers to ${env:NOT_SET_ANYWHERE} in args[0], which is not set in the gateway's environment"
    )
  })

  it("${configDir} is the config file's folder in command, args, cwd and env; the current directory for initializationOptions", () => {
    const backends = [
      {
        id: "beside",
        command: "${configDir}/bin/server",
        args: ["${configDir}/node_modules/x/index.js", "--root=${configDir}"],
        cwd: "${configDir}/work",
        env: { DATA: "${configDir}/data.jsonl" }
      },
      // `${env:configDir}` is a variable of the environment, as any `${env:NAME}`.
      { id: "envvar", command: "x", args: ["${env:configDir}"] }
    ]
    const options = Result.getOrThrow(decodeOptions({ backends }, "config file"))
    const config = resolve({
      env: { configDir: "from-env" },
      cwd: "/started/here",
      file: { path: "/proj/conf/agentify.json", options }
    })
    expect(config.backends[0]).toMatchObject({
      command: "/proj/conf/bin/server",
      args: ["/proj/conf/node_modules/x/index.js", "--root=/proj/conf"],
      cwd: "/proj/conf/work",
      env: { DATA: "/proj/conf/data.jsonl" }
    })
    expect(config.backends[1]!.args).toEqual(["from-env"])
    // initializationOptions (and the embedded default) have no file: the directory the gateway runs in.
    const init = Result.getOrThrow(decodeOptions({ backends }, "initializationOptions"))
    const fromClient = resolve({ env: {}, cwd: "/started/here", file: { path: "/proj/conf/agentify.json", options } }, init)
    expect(fromClient.backends[0]).toMatchObject({ command: "/started/here/bin/server", cwd: "/started/here/work" })
  })

  it("an unset variable is named with the key that uses it, and the message survives the scrubber (names are not secrets)", () => {
    const file = {
      path: "/etc/agentify.json",
      options: Result.getOrThrow(
        decodeOptions(
          {
            backends: [
              {
                id: "a",
                command: "x",
                env: { MEMORY_FILE_PATH: "${env:MY_MEMORY_PATH}", OTHER: "lit-secret-${env:MY_MEMORY_PATH}" }
              },
              { id: "b", command: "x", env: { TOKEN: "${input:tok}" } }
            ]
          },
          "config file"
        )
      )
    }
    const [a, b] = resolve({ env: {}, cwd: "/tmp", file }).backends
    const expected =
      "backend 'a' refers to ${env:MY_MEMORY_PATH} in env MEMORY_FILE_PATH, env OTHER, which is not set in the gateway's environment"
    expect(a!.refused).toBe(expected)
    expect(Secrets.scrub(a!.refused!)).toBe(expected)
    // The literal part of a value that also holds a reference is still a secret.
    expect(Secrets.scrub("saw lit-secret-")).toBe("saw <redacted>")
    expect(Secrets.scrub(b!.refused!)).toContain("uses VS Code's ${input:tok} in env TOKEN")
  })

  it("reports mcpServers problems with their path too", () => {
    expect(issuesOf({ mcpServers: { fs: { command: "" } } })).toEqual(["mcpServers.fs.command: must be a non-empty string"])
    expect(issuesOf({ mcpServers: { fs: { args: ["x"] } } })).toEqual([
      "mcpServers.fs.command: is required (or give a url for a remote server)"
    ])
  })

  it("is not an object: one clear issue", () => {
    expect(issuesOf("nope")).toEqual(["initializationOptions: must be an object"])
  })
})

describe("every client's config file, as its documentation shows it", () => {
  const CONFIGS = new URL("../../fixtures/configs/", import.meta.url).pathname
  const load = (name: string, env: Record<string, string> = {}) => {
    const file = Result.getOrThrow(readConfigFile(join(CONFIGS, name)))
    return resolve({ env, cwd: "/tmp", file }).backends
  }
  const summary = (backends: ReadonlyArray<BackendConfig>) =>
    backends.map((b) => ({ id: b.id, transport: transportOf(b), where: b.url ?? b.command, refused: b.refused }))

  it("JSONC everywhere: comments and trailing commas accepted; a broken file named at file:line:column", () => {
    const dir = tmp()
    const file = join(dir, "broken.json")
    writeFileSync(file, '{\n  // a comment\n  "mcpServers": {\n    "fs": { "command": "node" "args": [] }\n  }\n}\n')
    const read = readConfigFile(file)
    expect(Result.isFailure(read) && read.failure.message).toBe(`Config file is not valid JSON: ${file}:4:31: ',' was expected`)
    // Two problems: both named, each where it is.
    writeFileSync(file, '{"backends": [ {"id": "a" "command": "x"}, {"id": }] }')
    const two = readConfigFile(file)
    expect(Result.isFailure(two) && two.failure.message).toBe(
      `Config file is not valid JSON: ${file}:1:27: ',' was expected; ${file}:1:51: a value was expected`
    )
  })

  it("Claude Desktop", () => {
    expect(summary(load("claude-desktop.json"))).toEqual([
      { id: "filesystem", transport: "stdio", where: "npx", refused: undefined }
    ])
  })

  it("Cursor: a stdio server and a remote one with headers", () => {
    const backends = load("cursor.json")
    expect(summary(backends)).toEqual([
      { id: "server-name", transport: "stdio", where: "npx", refused: undefined },
      { id: "remote-server", transport: "http", where: "http://localhost:3000/mcp", refused: undefined }
    ])
    expect(backends[1]!.headers).toEqual({ API_KEY: "value" })
  })

  it("VS Code: servers with types, inputs ignored, ${input:} refused with the way out, ${env:} resolved", () => {
    const backends = load("vscode-mcp.json", { GITHUB_TOKEN: "ghp-vscode-token-777" })
    expect(summary(backends)).toEqual([
      {
        id: "Perplexity",
        transport: "stdio",
        where: "npx",
        refused:
          "backend 'Perplexity' uses VS Code's ${input:perplexity-key} in env PERPLEXITY_API_KEY, which only VS Code can prompt for: " +
          "put the value in the gateway's environment and refer to it as ${env:NAME}"
      },
      { id: "fetch", transport: "stdio", where: "uvx", refused: undefined },
      { id: "github", transport: "http", where: "https://api.githubcopilot.com/mcp/", refused: undefined },
      { id: "legacy-sse", transport: "sse", where: "http://localhost:3001/sse", refused: undefined }
    ])
    expect(backends[2]!.headers).toEqual({ Authorization: "Bearer ghp-vscode-token-777" })
    expect(Secrets.scrub("saw ghp-vscode-token-777")).toBe("saw <redacted>")
  })

  it("Claude Code: ${VAR:-default} in a url, ${VAR} in headers", () => {
    expect(summary(load("claude-code.mcp.json", { API_KEY: "cc-key-123456" }))).toEqual([
      { id: "api-server", transport: "http", where: "https://api.example.com/mcp", refused: undefined },
      { id: "local-tools", transport: "stdio", where: "/path/to/server", refused: undefined }
    ])
    const custom = load("claude-code.mcp.json", { API_KEY: "cc-key-123456", API_BASE_URL: "http://127.0.0.1:8080" })
    expect(custom[0]!.url).toBe("http://127.0.0.1:8080/mcp")
    expect(load("claude-code.mcp.json")[0]!.refused).toBe(
      "backend 'api-server' refers to ${env:API_KEY} in header Authorization, which is not set in the gateway's environment"
    )
  })

  it("Cline: streamableHttp and transportType, its timeout in seconds ignored", () => {
    const backends = load("cline.json")
    expect(summary(backends)).toEqual([
      { id: "local-server", transport: "stdio", where: "node", refused: undefined },
      { id: "remote-server", transport: "streamable-http", where: "https://your-server-url.com/mcp", refused: undefined },
      { id: "legacy-server", transport: "sse", where: "https://legacy.example.com/sse", refused: undefined }
    ])
    expect(backends[1]!.requestTimeoutMs).toBeUndefined()
  })

  it("seed 002: an array of MCPConfig, a bearer auth becoming a secret Authorization header", () => {
    const backends = load("seed-002.json", { GITHUB_TOKEN: "ghp-seed-002-token" })
    expect(summary(backends)).toEqual([
      { id: "filesystem", transport: "stdio", where: "npx", refused: undefined },
      { id: "github", transport: "streamable-http", where: "https://mcp.example.com/github/mcp", refused: undefined },
      { id: "browser", transport: "websocket", where: "ws://127.0.0.1:9222/mcp", refused: undefined },
      { id: "events", transport: "sse", where: "https://mcp.example.com/events/sse", refused: undefined }
    ])
    expect(backends[1]!.headers).toEqual({ Authorization: "Bearer ghp-seed-002-token" })
    expect(Secrets.scrub("plain-token-123456 and ghp-seed-002-token")).toBe("<redacted> and <redacted>")
    // One MCPConfig alone is a file too; a bad auth is named.
    expect(
      Result.getOrThrow(decodeOptions({ serverName: "one", transport: "sse", connection: { url: "http://h/sse" } }, "x")).backends
    ).toMatchObject([{ id: "one", type: "sse", url: "http://h/sse" }])
    expect(issuesOf({ serverName: "one", connection: { url: "http://h/mcp" }, auth: { type: "oauth" } })).toEqual([
      "one.auth.type: must be bearer or none"
    ])
  })

  it("seed 004: servers over defaults, in milliseconds, with its per-server quirks", () => {
    const backends = load("seed-004.json")
    expect(
      backends.map((b) => [
        b.id,
        b.enabled,
        b.requestTimeoutMs,
        b.startupDelayMs,
        b.maxInstances,
        b.requiresStatefulConnection,
        b.protocolVersion,
        b.restartOnCrash
      ])
    ).toEqual([
      ["memory", true, 30_000, 250, 1, undefined, undefined, true],
      ["calculator", true, 5_000, 250, 4, false, undefined, true],
      ["legacy-tool", true, 30_000, 2_000, undefined, undefined, "2024-11-05", true],
      ["experimental", false, 30_000, 250, undefined, undefined, undefined, true]
    ])
    expect(issuesOf({ servers: { a: { command: "x", maxInstances: 3 } } })).toEqual([
      "servers.a.maxInstances: needs requiresStatefulConnection: false (a server that keeps state per connection must be one process)"
    ])
    expect(issuesOf({ servers: { a: { command: "x", protocolVersion: "2023-01-01" } } })[0]).toMatch(
      /^servers\.a\.protocolVersion: must be one of 2026-07-28, 2025-11-25/
    )
    expect(issuesOf({ defaults: { startupDelay: 5, restartOnCrsh: true }, servers: { a: { command: "x" } } })).toEqual([
      "defaults: unknown key 'restartOnCrsh' (did you mean 'restartOnCrash'?)"
    ])
    // A command or an address is each server's own.
    expect(issuesOf({ defaults: { command: "x" }, servers: { a: { command: "x" } } })).toEqual([
      "defaults: unknown key 'command'"
    ])
    expect(issuesOf({ defaults: { timeout: 5 }, backends: [{ id: "a", command: "x" }] })).toEqual([
      "defaults: applies to the entries of mcpServers or servers, and there are none"
    ])
  })
})

describe("precedence", () => {
  const fileOptions = Result.getOrThrow(
    decodeOptions(
      { OPENAI_API_KEY: "sk-file-0000", model: "file-model", logLevel: "warn", backends: [{ id: "file", command: "x" }] },
      "config file"
    )
  )

  it("embedded default when nothing is configured: filesystem over the given directory, run by this node", () => {
    const config = resolve({ env: {}, cwd: "/some/dir" })
    expect(config.backendsSource).toBe("default")
    expect(config.backends).toHaveLength(1)
    expect(config.backends[0]!.id).toBe("filesystem")
    expect(config.backends[0]!.command).toBe(process.execPath)
    expect(config.backends[0]!.args[0]).toMatch(/server-filesystem[\\/]dist[\\/]index\.js$/)
    expect(config.backends[0]!.args[1]).toBe("/some/dir")
    expect(config.maxToolsPerRequest).toBe(DEFAULT_MAX_TOOLS)
    expect(Option.isNone(config.openaiApiKey)).toBe(true)
  })

  it("initializationOptions > file > env > default, but the env key beats both", () => {
    const env = { OPENAI_API_KEY: "sk-env-1111", OPENAI_MODEL: "env-model", LOG_LEVEL: "debug" }
    const init = Result.getOrThrow(
      decodeOptions({ OPENAI_API_KEY: "sk-init-2222", model: "init-model", backends: [{ id: "init", command: "y" }] }, "x")
    )
    const fromAll = resolve({ env, file: { path: "/f.json", options: fileOptions } }, init)
    expect(fromAll.model).toBe("init-model")
    expect(fromAll.backends.map((b) => b.id)).toEqual(["init"])
    expect(fromAll.logLevel).toBe("warn")
    expect(Redacted.value(Option.getOrThrow(fromAll.openaiApiKey))).toBe("sk-env-1111")
    expect(fromAll.openaiApiKeySource).toBe("env")

    const noEnvKey = resolve({ env: { OPENAI_MODEL: "env-model" }, file: { path: "/f.json", options: fileOptions } }, init)
    expect(Redacted.value(Option.getOrThrow(noEnvKey.openaiApiKey))).toBe("sk-init-2222")

    const fileOnly = resolve({ env: { OPENAI_MODEL: "env-model" }, file: { path: "/f.json", options: fileOptions } })
    expect(fileOnly.model).toBe("file-model")
    expect(fileOnly.backendsSource).toBe("file:/f.json")
    expect(Redacted.value(Option.getOrThrow(fileOnly.openaiApiKey))).toBe("sk-file-0000")

    const envOnly = resolve({ env })
    expect(envOnly.model).toBe("env-model")
    expect(envOnly.logLevel).toBe("debug")
  })

  it("--log-level beats every other source", () => {
    expect(resolve({ env: { LOG_LEVEL: "debug" }, cliLogLevel: "error" }).logLevel).toBe("error")
  })

  it("the key is held as Redacted and registered with the scrubber", () => {
    const config = resolve({ env: { OPENAI_API_KEY: "sk-precedence-secret-42" } })
    expect(String(Option.getOrThrow(config.openaiApiKey))).toBe("<redacted>")
    expect(JSON.stringify(config)).not.toContain("sk-precedence-secret-42")
    expect(Secrets.scrub("key=sk-precedence-secret-42")).toBe("key=<redacted>")
  })

  it("backend env values and --token arguments never print", () => {
    const init = Result.getOrThrow(
      decodeOptions(
        {
          backends: [{ id: "gh", command: "srv", args: ["--token", "tok-abcdef-123"], env: { GITHUB_TOKEN: "ghp-env-value-77" } }]
        },
        "x"
      )
    )
    const config = resolve({ env: {} }, init)
    const printed = JSON.stringify(describeBackend(config.backends[0]!))
    expect(printed).not.toContain("tok-abcdef-123")
    expect(printed).not.toContain("ghp-env-value-77")
    expect(printed).toContain("GITHUB_TOKEN")
    expect(Secrets.scrub("failed with ghp-env-value-77 and tok-abcdef-123")).toBe("failed with <redacted> and <redacted>")
  })
})

describe("GatewayConfig service", () => {
  it.effect("applies valid initializationOptions and rejects invalid ones with -32602", () =>
    Effect.gen(function* () {
      const service = yield* GatewayConfig
      expect((yield* service.current).backendsSource).toBe("default")
      const failed = yield* Effect.exit(service.applyInitializationOptions({ backends: [{ id: "x y", command: "c" }] }))
      expect(Exit.isFailure(failed)).toBe(true)
      const error = yield* Effect.flip(service.applyInitializationOptions({ backends: [{ id: "x y", command: "c" }] }))
      expect(error).toBeInstanceOf(InvalidParams)
      expect(error.code).toBe(-32602)
      expect(error.message).toContain("backends[0].id: must match ^[a-zA-Z0-9_-]{1,64}$")
      // A rejected update leaves the configuration as it was.
      expect((yield* service.current).backendsSource).toBe("default")
      const applied = yield* service.applyInitializationOptions({
        backends: [{ id: "echo", command: "node" }],
        routing: "backend"
      })
      expect(applied.routing).toBe("backend")
      expect((yield* service.current).backends.map((b) => b.id)).toEqual(["echo"])
      // Read without an effect (the hot paths), the same configuration, at once.
      expect(service.now()).toBe(applied)
    }).pipe(Effect.provide(GatewayConfig.layer({ env: {}, cwd: "/tmp" })))
  )
})

describe("start-up sources", () => {
  it(".env supplies the documented settings only, never overriding the environment", () => {
    const dir = tmp()
    writeFileSync(
      join(dir, ".env"),
      "OPENAI_MODEL=from-file\nLOG_LEVEL=debug\n# comment\nAGENTIFY_CONFIG=./evil.json\nNODE_OPTIONS=--require ./x.cjs\nPATH=/evil\n"
    )
    const dotEnv = readDotEnv(dir)
    expect(dotEnv.settings).toEqual({ OPENAI_MODEL: "from-file", LOG_LEVEL: "debug" })
    expect([...dotEnv.refused].sort()).toEqual(["AGENTIFY_CONFIG", "NODE_OPTIONS", "PATH"])
    expect(readDotEnv(tmp())).toEqual({ settings: {}, refused: [] })
    const config = resolve({ env: { OPENAI_MODEL: "from-env" }, dotEnv: dotEnv.settings, cwd: "/tmp" })
    expect(config.model).toBe("from-env")
    expect(config.logLevel).toBe("debug")
  })

  it("a base URL from .env is never combined with a key from a more trusted source", () => {
    const dotEnv = { OPENAI_BASE_URL: "http://attacker.example/v1" }
    const withEnvKey = resolve({ env: { OPENAI_API_KEY: "sk-real-key-from-env-123" }, dotEnv, cwd: "/tmp" })
    expect(withEnvKey.openaiBaseUrl).toEqual(Option.none())
    expect(withEnvKey.notes.map((n) => n.message).join("\n")).toMatch(/ignoring OPENAI_BASE_URL from \.env/)
    const fileKey = resolve({
      env: {},
      dotEnv,
      cwd: "/tmp",
      file: { path: "/f.json", options: { OPENAI_API_KEY: "sk-key-from-the-file-1" } }
    })
    expect(fileKey.openaiBaseUrl).toEqual(Option.none())
    // Its own key may go to its own server; the environment's base URL always applies.
    const ownKey = resolve({ env: {}, dotEnv: { ...dotEnv, OPENAI_API_KEY: "sk-dotenv-key-12345" }, cwd: "/tmp" })
    expect(ownKey.openaiBaseUrl).toEqual(Option.some("http://attacker.example/v1"))
    expect(ownKey.openaiApiKeySource).toBe("dotenv")
    const envUrl = resolve({
      env: { OPENAI_API_KEY: "sk-real-key-from-env-123", OPENAI_BASE_URL: "http://127.0.0.1:1/v1" },
      cwd: "/tmp"
    })
    expect(envUrl.openaiBaseUrl).toEqual(Option.some("http://127.0.0.1:1/v1"))
  })

  it("backends inherit the environment minus the gateway's settings and secrets, plus their env", () => {
    const env = {
      PATH: "/bin",
      HOME: "/home/u",
      OPENAI_API_KEY: "sk-x",
      OPENAI_BASE_URL: "u",
      AGENTIFY_CONFIG: "c",
      LOG_LEVEL: "debug"
    }
    expect(backendEnv({ env: { EXTRA: "1", PATH: "/custom" } }, env)).toEqual({ PATH: "/custom", HOME: "/home/u", EXTRA: "1" })
    expect(backendEnv({ env: {}, inheritEnv: ["OPENAI_API_KEY"] }, env)).toEqual({
      PATH: "/bin",
      HOME: "/home/u",
      OPENAI_API_KEY: "sk-x"
    })
  })

  it("refuses a config path that is not a regular file, or too large, without blocking", () => {
    const dir = tmp()
    const fifo = join(dir, "fifo")
    execFileSync("mkfifo", [fifo])
    expect(Result.getFailure(readConfigFile(fifo)).pipe(Option.getOrThrow).message).toMatch(/not a regular file/)
    expect(Result.getFailure(readConfigFile("/dev/zero")).pipe(Option.getOrThrow).message).toMatch(/not a regular file/)
    expect(Result.getFailure(readConfigFile(dir)).pipe(Option.getOrThrow).message).toMatch(/is a directory/)
    const big = join(dir, "big.json")
    writeFileSync(big, " ".repeat(MAX_CONFIG_FILE_BYTES + 1))
    expect(Result.getFailure(readConfigFile(big)).pipe(Option.getOrThrow).message).toMatch(/more than the \d+ allowed/)
  })

  it("reads a config file in either shape", () => {
    const dir = tmp()
    const file = join(dir, "c.json")
    writeFileSync(file, JSON.stringify({ mcpServers: { memory: { command: "npx", args: ["-y", "m"] } } }))
    const read = Result.getOrThrow(readConfigFile(file))
    expect(read.options.backends?.[0]?.id).toBe("memory")
  })

  it("explains an unreadable, non-JSON or invalid config file", () => {
    const dir = tmp()
    expect(Result.getFailure(readConfigFile(join(dir, "missing.json"))).pipe(Option.getOrThrow).message).toMatch(/no such file/)
    writeFileSync(join(dir, "bad.json"), "{ nope")
    expect(Result.getFailure(readConfigFile(join(dir, "bad.json"))).pipe(Option.getOrThrow).message).toMatch(/not valid JSON/)
    writeFileSync(join(dir, "invalid.json"), JSON.stringify({ backends: [{ id: "a" }, { id: "a", command: "x" }] }))
    const message = Result.getFailure(readConfigFile(join(dir, "invalid.json"))).pipe(Option.getOrThrow).message
    expect(message).toContain("backends[0].command: is required")
  })

  it("embeddedDefault points at an existing server-filesystem entry", async () => {
    const { existsSync } = await import("node:fs")
    expect(existsSync(embeddedDefault("/x")[0]!.args[0]!)).toBe(true)
  })

  it("the embedded default refuses the filesystem root and the home directory, not a project", () => {
    expect(embeddedDefault("/", "/home/u")[0]!.refused).toMatch(/refuses to serve the filesystem root \(\/\)/)
    expect(embeddedDefault("/home/u/", "/home/u")[0]!.refused).toMatch(/refuses to serve the home directory/)
    expect(embeddedDefault("/home/u/project", "/home/u")[0]!.refused).toBeUndefined()
    const config = resolve({ env: {}, cwd: "/", home: "/home/u" })
    expect(config.notes).toEqual([{ level: "warn", message: config.backends[0]!.refused }])
  })
})

describe("hostile and careless config documents", () => {
  it("unknown keys are errors, with the closest known key", () => {
    expect(issuesOf({ backend: [{ id: "a", command: "x" }] })).toEqual(["unknown key 'backend' (did you mean 'backends'?)"])
    expect(issuesOf({ mcpServer: {} })).toEqual(["unknown key 'mcpServer' (did you mean 'mcpServers'?)"])
    expect(issuesOf({ backends: [{ id: "a", command: "x", arg: ["y"] }] })).toEqual([
      "backends[0]: unknown key 'arg' (did you mean 'args'?)"
    ])
    expect(issuesOf({ mcpServers: { m: { command: "x", enviroment: {} } } })).toEqual(["mcpServers.m: unknown key 'enviroment'"])
  })

  it("every problem of a document at once: unknown keys and wrong values together", () => {
    expect(
      issuesOf({
        backends: [
          { id: "files", comand: "node" },
          { id: "bad id!", command: "node" }
        ],
        maxSteps: "six"
      })
    ).toEqual([
      "backends[0]: unknown key 'comand' (did you mean 'command'?)",
      'maxSteps: Expected number, actual "six"',
      "backends[0].command: is required (or give a url for a remote server)",
      "backends[1].id: must match ^[a-zA-Z0-9_-]{1,64}$"
    ])
  })

  it("__proto__ anywhere the gateway reads keys is an error, never silently dropped", () => {
    expect(issuesOf(JSON.parse('{"mcpServers": {"__proto__": {"command": "x"}}}'))).toEqual([
      "mcpServers: the server name '__proto__' is not allowed"
    ])
    expect(issuesOf(JSON.parse('{"__proto__": {"backends": [{"id": "a", "command": "x"}]}}'))).toEqual([
      "the key '__proto__' is not allowed"
    ])
    expect(issuesOf(JSON.parse('{"backends": [{"id": "a", "command": "x", "env": {"__proto__": {}}}]}'))).toEqual([
      "backends[0].env: the key '__proto__' is not allowed"
    ])
  })

  it("keys other MCP clients write are accepted and reported as ignored", () => {
    const options = Result.getOrThrow(
      decodeOptions(
        { mcpServers: { m: { command: "x", autoApprove: ["a"], alwaysAllow: [], timeout: 5, disabled: false } } },
        "x"
      )
    )
    expect(options.backends?.[0]?.id).toBe("m")
    expect(options.ignoredKeys).toEqual(["mcpServers.m.autoApprove", "mcpServers.m.alwaysAllow", "mcpServers.m.timeout"])
  })

  it("reads other clients' tool filters (includeTools, excludeTools, disabledTools) as allowTools and denyTools", () => {
    const options = Result.getOrThrow(
      decodeOptions(
        {
          mcpServers: {
            g: { command: "x", includeTools: ["read_file", "list_directory"], excludeTools: ["write_file"] },
            c: { command: "x", disabledTools: ["delete_entities"], denyTools: ["delete_*"] }
          }
        },
        "x"
      )
    )
    expect(options.backends?.[0]).toMatchObject({ allowTools: ["read_file", "list_directory"], denyTools: ["write_file"] })
    expect(options.backends?.[1]).toMatchObject({ denyTools: ["delete_*", "delete_entities"] })
    expect(options.backends?.[1]?.allowTools).toBeUndefined()
    expect(options.ignoredKeys).toBeUndefined()
  })

  it("every duration and size is bounded, with the bound in the error", () => {
    expect(issuesOf({ requestTimeoutMs: 3_000_000_000 })).toEqual([
      "requestTimeoutMs: must be a whole number of milliseconds from 1 to 86400000"
    ])
    expect(issuesOf({ backends: [{ id: "a", command: "x", requestTimeoutMs: 2 ** 31 }] })).toEqual([
      "backends[0].requestTimeoutMs: must be a whole number of milliseconds from 1 to 86400000"
    ])
    expect(issuesOf({ startupTimeoutMs: 0, maxToolsPerRequest: 1000, maxFrameBytes: 2 ** 40 })).toEqual([
      "maxToolsPerRequest: must be a whole number of tools from 1 to 128",
      "startupTimeoutMs: must be a whole number of milliseconds from 1 to 86400000",
      "maxFrameBytes: must be a whole number of bytes from 1 to 1073741824"
    ])
  })

  it("a mistyped secret is never echoed in the error", () => {
    const issues = issuesOf({
      OPENAI_API_KEY: 123456789123,
      backends: [{ id: "a", command: "x", env: { TOKEN: 987654321987 }, args: [555444333222] }]
    })
    expect(issues.join("\n")).not.toMatch(/123456789123|987654321987|555444333222/)
    expect(issues).toContain("backends[0].env.TOKEN: must be a string (value not shown)")
    expect(issues).toContain("OPENAI_API_KEY: must be a string (value not shown)")
  })
})

describe("exposure and profiles in the configuration", () => {
  it("accepts the exposure keys on backends and server-map entries, and profiles", () => {
    const options = Result.getOrThrow(
      decodeOptions(
        {
          mcpServers: { files: { command: "node", allowTools: ["read_*"], namespace: false } },
          defaults: { denyTools: ["delete_*"] },
          profiles: { readers: { backends: ["files"], denyTools: ["*write*"] } }
        },
        "x"
      )
    )
    expect(options.backends?.[0]).toMatchObject({
      id: "files",
      allowTools: ["read_*"],
      denyTools: ["delete_*"],
      namespace: false
    })
    expect(options.profiles).toEqual({ readers: { backends: ["files"], denyTools: ["*write*"] } })
  })

  it("names what is wrong with a namespace, an override, a profile", () => {
    expect(
      issuesOf({
        backends: [
          { id: "a", command: "x", namespace: "has space", toolOverrides: { t: { name: "bad name!" } } },
          { id: "b", command: "x", namespace: true, allowTools: [""] }
        ],
        profiles: { "bad name": {}, ok: { backends: ["has space"] } }
      })
    ).toEqual([
      "profiles.ok.backends[0]: must match ^[a-zA-Z0-9_-]{1,64}$",
      "backends[0].toolOverrides.t.name: must match ^[a-zA-Z0-9_-]{1,64}$",
      "backends[0].namespace: must be false or match ^[a-zA-Z0-9_-]{1,64}$",
      "backends[1].allowTools[0]: must be a pattern of 1 to 512 characters",
      "backends[1].namespace: must be false or match ^[a-zA-Z0-9_-]{1,64}$"
    ])
    expect(issuesOf({ profiles: { "bad name": {} } })).toEqual([
      "profiles.bad name: a profile's name must match ^[a-zA-Z0-9_-]{1,64}$"
    ])
  })

  it("takes a shared store's URL (redis:// or rediss://), never showing it when it is wrong", () => {
    expect(issuesOf({ state: { url: "redis://:pw@redis.internal:6379/0", leaseMs: 5000 } })).toEqual([])
    const wrong = issuesOf({ state: { url: "http://user:hunter2-secret@redis.internal", address: "10.0.0.5", leaseMs: 5 } })
    expect(wrong).toEqual([
      "state.url: must be a redis:// or rediss:// URL (value not shown)",
      "state.address: must be an http:// or https:// URL",
      "state.leaseMs: must be a whole number of milliseconds from 100 to 3600000"
    ])
    expect(JSON.stringify(wrong)).not.toContain("hunter2")
  })

  it("takes auth on Streamable HTTP backends only", () => {
    expect(issuesOf({ backends: [{ id: "a", url: "https://mcp.example.com/mcp", auth: "oauth" }] })).toEqual([])
    expect(issuesOf({ backends: [{ id: "a", url: "https://mcp.example.com/sse", type: "sse", auth: "oauth" }] })).toEqual([
      "backends[0].auth: is spoken over Streamable HTTP (type http or streamable-http); over sse, give a token in headers"
    ])
    expect(issuesOf({ backends: [{ id: "a", command: "node", auth: "oauth" }] })).toEqual([
      "backends[0].auth: is for remote servers (a url): a process is not signed in to"
    ])
    expect(
      issuesOf({ backends: [{ id: "a", url: "https://x.example/mcp", auth: { type: "oauth", grant: "password" } }] })
    ).toEqual([
      'backends[0].auth: must be "oauth" or {"type": "oauth", clientId?, clientSecret?, scopes?, grant?, clientMetadataUrl?, perUser?}'
    ])
    // Each user as themselves: with their own sign-in, never the gateway's machine identity.
    const perUser = (auth: object) =>
      issuesOf({ backends: [{ id: "a", url: "https://x.example/mcp", auth: { type: "oauth", ...auth } }] })
    expect(perUser({ perUser: true, scopes: ["crm:read"] })).toEqual([])
    expect(
      perUser({ perUser: true, grant: "client_credentials", clientId: "c", clientSecret: "a-long-enough-client-secret" })
    ).toEqual(["backends[0].auth: perUser: the \"client_credentials\" grant is the gateway's own identity, never a user's"])
  })

  it("refuses two overrides giving one name in one namespace, naming both", () => {
    expect(
      issuesOf({
        backends: [
          { id: "a", command: "x", toolOverrides: { one: { name: "same" }, two: { name: "same" } } },
          { id: "b", command: "x", namespace: "a", toolOverrides: { three: { name: "other" } } }
        ]
      })
    ).toEqual([
      "backends[0].toolOverrides.two.name: 'same' is also the name given to a's 'one' in the same namespace: the names would collide"
    ])
  })

  it("refuses a profile that names a backend the configuration does not have, at start-up and in initializationOptions", () => {
    const dir = tmp()
    const file = join(dir, "c.json")
    writeFileSync(file, JSON.stringify({ backends: [{ id: "fs", command: "x" }], profiles: { p: { backends: ["fs", "nope"] } } }))
    const loaded = load({ configPath: file }, {})
    expect(Result.isFailure(loaded) && loaded.failure).toContain("profiles.p.backends: no backend 'nope' (there are: fs)")
    const refused = Effect.runSync(
      Effect.flip(
        Effect.flatMap(GatewayConfig, (c) =>
          c.applyInitializationOptions({ backends: [{ id: "fs", command: "x" }], profiles: { p: { backends: ["gone"] } } })
        ).pipe(Effect.provide(GatewayConfig.layer({ env: {} })))
      )
    )
    expect(refused.message).toContain("profiles.p.backends: no backend 'gone' (there are: fs)")
  })

  it("reads the disk again for a candidate, without putting it in force until replaced", () => {
    const dir = tmp()
    const file = join(dir, "c.json")
    writeFileSync(file, JSON.stringify({ backends: [{ id: "one", command: "x" }] }))
    const sources = { env: {}, file: Result.getOrThrow(readConfigFile(file)), disk: { configPath: file } }
    const ids = Effect.runSync(
      Effect.gen(function* () {
        const config = yield* GatewayConfig
        writeFileSync(file, JSON.stringify({ backends: [{ id: "two", command: "x" }] }))
        const candidate = Result.getOrThrow(yield* config.candidate)
        const before = (yield* config.current).backends.map((b) => b.id)
        yield* config.replace(candidate)
        const after = (yield* config.current).backends.map((b) => b.id)
        writeFileSync(file, "{ broken")
        const refused = yield* config.candidate
        return { before, after, refused: Result.isFailure(refused) ? refused.failure : "" }
      }).pipe(Effect.provide(GatewayConfig.layer(sources)))
    )
    expect(ids.before).toEqual(["one"])
    expect(ids.after).toEqual(["two"])
    expect(ids.refused).toContain("is not valid JSON")
  })
})
