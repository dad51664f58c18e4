/**
 * Backend configs for the fixture MCP server (test/fixtures/mcp-server.mjs) and the real
 * server-filesystem, plus process checks for the kill tests.
 */
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import type { BackendConfig } from "../../src/Config.js"
import { serverFilesystemEntry } from "../../src/Config.js"

export const FIXTURE_SERVER = fileURLToPath(new URL("../fixtures/mcp-server.mjs", import.meta.url))

/** A backend running the fixture server with `flags` (see the server's doc comment). */
export const fixtureBackend = (
  id: string,
  flags: ReadonlyArray<string> = [],
  overrides: Partial<BackendConfig> = {}
): BackendConfig => ({
  id,
  type: "stdio",
  command: process.execPath,
  args: [FIXTURE_SERVER, "--name", id, ...flags],
  env: {},
  enabled: true,
  restartOnCrash: true,
  ...overrides
})

/** The real @modelcontextprotocol/server-filesystem, rooted at `root`. */
export const filesystemBackend = (id: string, root: string): BackendConfig => ({
  id,
  type: "stdio",
  command: process.execPath,
  args: [serverFilesystemEntry(), root],
  env: {},
  enabled: true,
  restartOnCrash: true
})

/**
 * Whether `pid` is a live process. `kill(pid, 0)` alone also reports zombies, which stay around
 * in containers whose init does not reap orphans; a zombie has exited, so it counts as dead.
 */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  if (process.platform !== "linux") return true
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
  } catch {
    return false
  }
}

/** The text of a CallToolResult's first text block. */
export const firstText = (result: unknown): string => {
  const content = (result as { content?: Array<{ type?: string; text?: string }> }).content ?? []
  return content.find((block) => block.type === "text")?.text ?? ""
}

/** The `structuredContent` of a CallToolResult (the fixture's tools report there). */
export const structured = (result: unknown): any => (result as { structuredContent?: unknown }).structuredContent

/** Polls until `check` holds, for at most `ms` (process deaths are seen by the kernel a moment later). */
export const eventually = (check: () => boolean, ms = 2_000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + ms
    while (!check() && Date.now() < deadline) yield* Effect.sleep(20)
    return check()
  })

/** How many tools the fixture lists before `--tools N` and `--odd-names` add theirs. */
export const FIXTURE_TOOL_COUNT = 18
