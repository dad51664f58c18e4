/**
 * Runs in every test file's worker. Logs go to stderr, as in the CLI: Effect's default logger (in
 * tests that do not provide the gateway's) prints with console.log, which would otherwise reach
 * the runner's stdout. The temp directories a file made are removed when it ends. Each file has a
 * home of its own (the gateway's state lives under it), and each test a state directory of its own.
 */
import { afterAll, beforeEach } from "vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { removeTempDirs, ROOT } from "./stdioClient.js"

// The gateway keeps state under the user's home (tool pins): tests keep theirs in a home of their own.
const home = mkdtempSync(join(tmpdir(), "agentify-home-"))
process.env.HOME = home
delete process.env.XDG_STATE_HOME
delete process.env.AGENTIFY_STATE_DIR
afterAll(() => rmSync(home, { recursive: true, force: true }))
// And each test a state directory of its own: a gateway a test starts meets its backends for the
// first time (one that knew their tools would start them only on use), whatever ran before it.
beforeEach(() => {
  process.env.XDG_STATE_HOME = mkdtempSync(join(home, "state-"))
})
// Compiled code shared by every gateway the tests start (see src/cli/CodeCache.ts): one warm-up
// for the build, not one for each test's state directory. Kept between runs, as a cache is, in
// this checkout (code loaded from a shared temporary directory could be anyone's).
process.env.NODE_COMPILE_CACHE = join(ROOT, "node_modules", ".cache", "mcp-agentify", "test-compile-cache")

console.log = console.error
console.info = console.error
console.debug = console.error

afterAll(() => removeTempDirs())
