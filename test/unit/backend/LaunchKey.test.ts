/** What launches a backend, as the key its pins are kept under. */
import { describe, expect, it } from "vitest"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { earlierKeyOf, keyOf, launchOf, resolveCommand } from "../../../src/backend/LaunchKey.js"

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

  it("leaves the environment's values out, and names a remote server by its id and URL alone", () => {
    const launch = { id: "github", command: process.execPath, args: ["/srv/server.mjs"] }
    expect(keyOf({ ...launch, env: { TOKEN: "one" } }, {}, a)).toBe(keyOf({ ...launch, env: { TOKEN: "two" } }, {}, a))
    expect(launchOf({ ...launch, env: { TOKEN: "secret-value-123" } }, {}, a)).not.toContain("secret-value-123")
    const remote = { id: "remote", url: "https://example.com/mcp" }
    expect(keyOf(remote, {}, a)).toBe(keyOf(remote, {}, b))
    expect(keyOf(remote, {}, a)).toMatch(/^[0-9a-f]{32}$/)
  })

  it("tells two backends of one configuration apart: by id, and by the names their env sets", () => {
    const launch = { command: process.execPath, args: ["/srv/server.mjs"] }
    // `ro` and `rw`: one command, another env (even another value only): never one key.
    const ro = { ...launch, id: "ro", env: { MODE: "ro" } }
    const rw = { ...launch, id: "rw", env: { MODE: "rw" } }
    expect(keyOf(ro, {}, a)).not.toBe(keyOf(rw, {}, a))
    expect(keyOf({ id: "one", url: "https://example.com/mcp" }, {}, a)).not.toBe(
      keyOf({ id: "two", url: "https://example.com/mcp" }, {}, a)
    )
    // A variable set, or no longer set, is another server; the order they are written in is not.
    expect(keyOf({ ...ro, env: { MODE: "ro", READ_ONLY: "1" } }, {}, a)).not.toBe(keyOf(ro, {}, a))
    expect(keyOf({ ...ro, env: { A: "1", B: "2" } }, {}, a)).toBe(keyOf({ ...ro, env: { B: "3", A: "4" } }, {}, a))
    // The key an earlier version gave it: without the id and the names, as it was.
    expect(earlierKeyOf(ro, {}, a)).toBe(earlierKeyOf(rw, {}, a))
    expect(earlierKeyOf(ro, {}, a)).not.toBe(keyOf(ro, {}, a))
  })
})
