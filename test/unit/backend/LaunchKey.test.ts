/** What launches a backend, as the key its pins are kept under. */
import { describe, expect, it } from "vitest"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { keyOf, launchOf, resolveCommand } from "../../../src/backend/LaunchKey.js"

describe("a backend's launch key", () => {
  const [a, b] = [mkdtempSync(join(tmpdir(), "launch-a-")), mkdtempSync(join(tmpdir(), "launch-b-"))]
  const path = dirname(process.execPath)

  it("finds a command on PATH as spawning it would; a path is taken from the working directory", () => {
    expect(resolveCommand("node", a, path)).toBe(resolveCommand(process.execPath, a, path))
    expect(resolveCommand("no-such-command-here", a, path)).toBe("no-such-command-here")
    expect(resolveCommand("./server", a, path)).toBe("./server")
  })

  it("counts the directory only where it matters: a configured cwd, or a relative path among the arguments", () => {
    const absolute = { command: process.execPath, args: ["/srv/server.mjs", "--name", "fx"] }
    expect(keyOf(absolute, {}, a)).toBe(keyOf(absolute, {}, b))
    for (const args of [["server.mjs", "."], ["-y", "@scope/server"], ["./server.mjs"]]) {
      expect(keyOf({ command: "node", args }, { PATH: path }, a)).not.toBe(keyOf({ command: "node", args }, { PATH: path }, b))
    }
    expect(keyOf({ ...absolute, cwd: a }, {}, a)).not.toBe(keyOf({ ...absolute, cwd: b }, {}, a))
  })

  it("leaves the environment's values out, and names a remote server by its URL alone", () => {
    const launch = { command: process.execPath, args: ["/srv/server.mjs"] }
    expect(keyOf({ ...launch, env: { TOKEN: "one" } }, {}, a)).toBe(keyOf({ ...launch, env: { TOKEN: "two" } }, {}, a))
    expect(launchOf({ ...launch, env: { TOKEN: "secret-value-123" } }, {}, a)).not.toContain("secret-value-123")
    expect(keyOf({ url: "https://example.com/mcp" }, {}, a)).toBe(keyOf({ url: "https://example.com/mcp" }, {}, b))
    expect(keyOf({ url: "https://example.com/mcp" }, {}, a)).toMatch(/^[0-9a-f]{32}$/)
  })
})
