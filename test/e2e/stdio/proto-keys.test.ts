/**
 * `__proto__` (and its neighbours) in every file the gateway reads, through the CLI: such a key is
 * refused by name with exit 2, never dropped (a dropped one used to start the default backend over
 * the working directory instead of the file's own).
 */
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { cpSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { BIN, cleanEnv, tempDir } from "../../support/stdioClient.js"
import { FIXTURE_SERVER } from "../../support/mcpFixture.js"

const check = (args: ReadonlyArray<string>, cwd = tempDir()) => {
  const result = spawnSync(process.execPath, [BIN, "check", ...args, "--log-level", "silent"], {
    cwd,
    env: cleanEnv(),
    timeout: 20_000
  })
  return { status: result.status, out: result.stdout.toString("utf8"), err: result.stderr.toString("utf8") }
}

const server = { command: process.execPath, args: [FIXTURE_SERVER] }

/** A JSONC file (a comment and a trailing comma, as editors write them) holding `body`. */
const jsoncFile = (body: string) => {
  const file = join(tempDir(), "agentify.jsonc")
  writeFileSync(file, `// written by hand\n${body}\n`)
  return file
}

describe("__proto__ keys in config files are refused by name, never dropped", () => {
  it("backends under a top-level __proto__: exit 2 naming the key, and no default backend", () => {
    const file = jsoncFile(
      `{"__proto__": {"backends": [{"id": "mine", "command": ${JSON.stringify(process.execPath)}, "args": [${JSON.stringify(FIXTURE_SERVER)}]}]},}`
    )
    const result = check(["--config", file])
    expect(result.status).toBe(2)
    expect(result.err).toContain("the key '__proto__' is not allowed")
    expect(result.out).not.toContain("filesystem")
  })

  it("an mcpServers entry named __proto__ is refused by its name, beside a neighbour named constructor", () => {
    const file = jsoncFile(`{"mcpServers": {"__proto__": ${JSON.stringify(server)}, "constructor": ${JSON.stringify(server)},}}`)
    const result = check(["--config", file])
    expect(result.status).toBe(2)
    expect(result.err).toContain("mcpServers: the server name '__proto__' is not allowed")
    expect(result.err).toContain("mcpServers: the server name 'constructor' is not allowed")
  })

  it("env: {__proto__: ...} in a JSONC file is refused", () => {
    const file = jsoncFile(
      `{"mcpServers": {"echo": {"command": ${JSON.stringify(process.execPath)}, "env": {"__proto__": {"A": "1"}},}}}`
    )
    const result = check(["--config", file])
    expect(result.status).toBe(2)
    expect(result.err).toContain("mcpServers.echo.env: the key '__proto__' is not allowed")
  })

  it("the seed's MCPConfig shape with serverName __proto__ is refused by name", () => {
    const file = jsoncFile(JSON.stringify({ serverName: "__proto__", transport: "stdio", connection: server }))
    const result = check(["--config", file])
    expect(result.status).toBe(2)
    expect(result.err).toContain("the server name '__proto__' is not allowed")
  })

  it("--servers-dir: a config.json entry named __proto__ is refused by name", () => {
    const dir = tempDir()
    cpSync(new URL("../../fixtures/servers/node-echo", import.meta.url).pathname, join(dir, "node-echo"), { recursive: true })
    writeFileSync(join(dir, "config.json"), `{"servers": {"__proto__": ${JSON.stringify(server)}}}`)
    const result = check(["--servers-dir", dir])
    expect(result.status).toBe(2)
    expect(result.err).toContain("the server name '__proto__' is not allowed")
  })

  it(".env: a __proto__ line is named among the names a .env may not set", () => {
    const cwd = tempDir()
    writeFileSync(join(cwd, ".env"), "__proto__=x\nLOG_LEVEL=info\n")
    const file = jsoncFile(JSON.stringify({ mcpServers: { echo: server } }))
    // The gateway itself, stdin at its end at once: it warns of what it ignores in .env as it starts.
    const result = spawnSync(process.execPath, [BIN, "--config", file], { cwd, env: cleanEnv(), input: "", timeout: 20_000 })
    expect(result.status).toBe(0)
    expect(result.stderr.toString("utf8")).toContain(
      "ignoring variables in .env that only the real environment may set: __proto__"
    )
  })
})
