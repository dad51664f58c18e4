/**
 * Backend configs for the fixture MCP server (test/fixtures/mcp-server.mjs) and the real
 * server-filesystem, plus process checks for the kill tests.
 */
import { fileURLToPath } from "node:url"
import type { BackendConfig } from "../../src/config/Config.js"
import { serverFilesystemEntry } from "../../src/config/Config.js"
export { eventually, isAlive } from "./process.js"

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

/** The text of a CallToolResult's first text block. */
export const firstText = (result: unknown): string => {
  const content = (result as { content?: Array<{ type?: string; text?: string }> }).content ?? []
  return content.find((block) => block.type === "text")?.text ?? ""
}

/** The `structuredContent` of a CallToolResult (the fixture's tools report there). */
export const structured = (result: unknown): any => (result as { structuredContent?: unknown }).structuredContent

/** How many tools the fixture lists before `--tools N` and `--odd-names` add theirs. */
export const FIXTURE_TOOL_COUNT = 24
