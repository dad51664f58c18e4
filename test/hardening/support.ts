/**
 * What the hardening tests share beyond test/support: their fixtures, config files, and the end
 * every gateway of theirs must reach (`closeCleanly`). The client, the frame parser and the process
 * helpers are test/support's, re-exported here.
 */
import { writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { BackendConfigInput } from "../../src/config/Config.js"
import { expect } from "vitest"
import { assertOnlyFrames, type CliClient, tempDir } from "../support/stdioClient.js"
import { descendants, untilGone } from "../support/process.js"

// One implementation of each, shared with every other test (test/support).
export { cleanEnv, CliClient as Client, contentLengthFrames, INIT_PARAMS, SCRIPTED_GATEWAY } from "../support/stdioClient.js"
export type { ClientOptions, Id, Reply } from "../support/stdioClient.js"
export { descendants, isAlive, isWatchdog, rssKiB, sleep, until, untilGone } from "../support/process.js"

export const HERE = dirname(fileURLToPath(import.meta.url))
/** A backend that answers tools/call with a result or an error nested 100,000 levels deep. */
export const DEEP_BACKEND = join(HERE, "deep-backend.mjs")
/** An intermediate client: spawns the gateway holding its pipes, so the test can SIGKILL it. */
export const HOLDER = join(HERE, "holder.mjs")
/** A test-only preload: SIGUSR2 forces a GC and writes the heap figures to HEAP_PROBE_FILE. */
export const HEAP_PROBE = join(HERE, "..", "support", "heap-probe.mjs")

// ---------------------------------------------------------------------------------------------
// Config

/** Writes GatewayOptions to a temp file and returns its path. */
export const writeConfig = (options: { backends: ReadonlyArray<BackendConfigInput> } & Record<string, unknown>): string => {
  const file = join(tempDir("agentify-hardening-config-"), "agentify.json")
  writeFileSync(file, JSON.stringify(options))
  return file
}

/**
 * The end every newline-framed gateway of these tests must reach: stdin closed, exit code 0, every
 * process of `tree` (its backends and theirs) gone, and nothing but frames on stdout.
 */
export const closeCleanly = async (client: CliClient, tree: ReadonlyArray<number> = descendants(client.pid)): Promise<void> => {
  const { code } = await client.close()
  expect(code).toBe(0)
  await untilGone(tree)
  assertOnlyFrames(client.stdout())
}
