/**
 * State files are data, never trusted (issue 64): the built CLI over stdio on a state directory
 * prepared as an attacker would.
 *
 * - A remembered list that is a FIFO and pins that are a link to /dev/zero: each is one warning
 *   naming the file, then ignored; `initialize` and `ping` keep answering (the failure is a hang,
 *   bounded here by deadlines generous for a busy machine).
 * - Two backends of one configuration with the same command and another `env` keep pins and
 *   remembered lists of their own: neither's tools are held against, or listed from, the other's.
 */
import { describe, expect, it } from "@effect/vitest"
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs"
import { execFileSync } from "node:child_process"
import { join } from "node:path"
import { cleanEnv, type CliClient, startGateway, tempDir } from "../../support/stdioClient.js"
import { FIXTURE_SERVER, fixtureBackend } from "../../support/mcpFixture.js"
import { until } from "../../support/process.js"
import { keyOf } from "../../../src/backend/LaunchKey.js"

/** Generous for a machine at load 20: a gateway that hangs never answers at all. */
const DEADLINE_MS = 60_000
/** Above the deadlines a test waits on in turn: a hang fails at a deadline, and the gateway is then stopped. */
const TEST_MS = 6 * DEADLINE_MS

const start = (config: unknown, stateDir: string): CliClient => {
  const file = join(tempDir("agentify-state-files-"), "config.json")
  writeFileSync(file, JSON.stringify(config, null, 2))
  return startGateway({ args: ["--config", file], env: cleanEnv({ AGENTIFY_STATE_DIR: stateDir }) })
}

const tools = async (gateway: CliClient): Promise<Array<{ name: string; description?: string }>> =>
  (await gateway.request("tools/list", {}, undefined, DEADLINE_MS)).result.tools

describe("state files", () => {
  it(
    "a FIFO as a remembered list and a link to /dev/zero as pins: one warning each, and the gateway keeps answering",
    async () => {
      const stateDir = tempDir("agentify-state-")
      const backend = fixtureBackend("alpha")
      const name = `launch-${keyOf(backend)}.json`
      mkdirSync(join(stateDir, "known"), { recursive: true, mode: 0o700 })
      mkdirSync(join(stateDir, "pins"), { recursive: true, mode: 0o700 })
      const known = join(stateDir, "known", name)
      const pins = join(stateDir, "pins", name)
      execFileSync("mkfifo", [known])
      symlinkSync("/dev/zero", pins)

      const gateway = start({ backends: [backend] }, stateDir)
      try {
        const init = await gateway.request(
          "initialize",
          { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
          "init",
          DEADLINE_MS
        )
        expect(init.result?.serverInfo?.name).toBe("mcp-agentify")
        gateway.notify("notifications/initialized")
        // The remembered list is read before the backend may wait; the pins once it lists its tools.
        await until(
          "the warning of the remembered list",
          () => gateway.stderr().includes(`state file ${known} is ignored`),
          DEADLINE_MS
        )
        await until("the warning of the pins", () => gateway.stderr().includes(`state file ${pins} is ignored`), DEADLINE_MS)
        expect((await gateway.request("ping", {}, "ping", DEADLINE_MS)).result).toEqual({})
        // Ignored, as if none: the backend started, its tools listed and pinned anew (the link replaced by a file).
        expect((await tools(gateway)).map((t) => t.name)).toContain("alpha__echo")
        // One warning per file, however often it was read.
        expect(gateway.stderr().split(`state file ${pins} is ignored`)).toHaveLength(2)
        expect(gateway.stderr().split(`state file ${known} is ignored`)).toHaveLength(2)
        expect(gateway.stderr()).toMatch(/is ignored: it is a FIFO, not a regular file/)
        expect(gateway.stderr()).toMatch(/is ignored: it is a symbolic link/)
      } finally {
        await gateway.close()
      }
    },
    TEST_MS
  )

  it(
    "two backends with one command and another env keep their own pins and remembered lists",
    async () => {
      const stateDir = tempDir("agentify-state-")
      // One command line, as `ro` and `rw` of one server would be; only `env` tells them apart.
      const shared = { args: [FIXTURE_SERVER, "--name", "shared"] }
      const ro = fixtureBackend("ro", [], { ...shared, env: { FIXTURE_ECHO_DESCRIPTION: "echoes, read-only" } })
      const rw = fixtureBackend("rw", [], { ...shared, env: { FIXTURE_ECHO_DESCRIPTION: "echoes, read-write" } })
      const config = { toolPins: "quarantine", backends: [ro, rw] }

      // First run: both start, each pins its own echo; neither is held against the other's.
      const first = start(config, stateDir)
      try {
        await first.initialize()
        await until(
          "both backends listed",
          async () => {
            const names = (await tools(first)).map((t) => t.name)
            return names.includes("ro__echo") && names.includes("rw__pid")
          },
          DEADLINE_MS,
          200
        )
        const listed = await tools(first)
        // Held back (quarantined) were it held against ro's pin.
        expect(listed.map((t) => t.name)).toContain("rw__echo")
        expect(listed.find((t) => t.name === "rw__echo")?.description).toContain("read-write")
        expect(listed.find((t) => t.name === "ro__echo")?.description).toContain("read-only")
        expect(first.stderr()).not.toMatch(/changed since it was pinned/)
        await until(
          "both lists remembered",
          () => existsSync(join(stateDir, "known")) && readdirSync(join(stateDir, "known")).length === 2,
          DEADLINE_MS
        )
      } finally {
        await first.close()
      }
      expect(readdirSync(join(stateDir, "pins"))).toHaveLength(2)

      // Second run: each lists what it remembered of itself, not the other's.
      const second = start(config, stateDir)
      try {
        await second.initialize()
        const listed = await tools(second)
        expect(listed.find((t) => t.name === "ro__echo")?.description).toContain("read-only")
        expect(listed.find((t) => t.name === "rw__echo")?.description).toContain("read-write")
      } finally {
        await second.close()
      }
    },
    TEST_MS
  )
})
