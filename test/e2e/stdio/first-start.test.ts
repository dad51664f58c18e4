/**
 * The first start (issue 64): a client never waits for backends to connect. `initialize` is
 * answered while backends are still starting, even with nothing remembered; a session's first
 * `tools/list` waits for them within `startupTimeoutMs`, so a client that reads the list once gets
 * it whole; `agentify_search_tools` names the backends it could not wait for; the HTTP port
 * listens at once and `/readyz` says when the backends are ready; a backend still starting when a
 * short session ended is remembered on the next start as soon as it is ready.
 */
import { describe, expect, it } from "@effect/vitest"
import { existsSync, readdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { cleanEnv, startGateway, tempDir } from "../../support/stdioClient.js"
import { startHttpGateway } from "../../support/httpClient.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { until } from "../../support/process.js"

const configArgs = (config: unknown): Array<string> => {
  const file = join(tempDir("agentify-first-"), "config.json")
  writeFileSync(file, JSON.stringify(config, null, 2))
  return ["--config", file]
}

/** Whether the gateway said backend `id` was ready. */
const saidReady = (stderr: string, id: string) =>
  stderr.split("\n").some((line) => line.includes("backend ready") && line.includes(`"${id}"`))

describe("the first start", () => {
  it("initialize is answered while a backend is still starting; the first tools/list waits for it", async () => {
    const config = {
      startupTimeoutMs: 60_000,
      backends: [fixtureBackend("fast"), fixtureBackend("slow", ["--startup-delay-ms", "5000"])]
    }
    const gateway = startGateway({ args: configArgs(config), env: cleanEnv({ AGENTIFY_STATE_DIR: tempDir("agentify-state-") }) })
    try {
      const init = await gateway.initialize()
      expect(init.result?.serverInfo?.name).toBe("mcp-agentify")
      // Answered before the slow backend was ready (it answers its own initialize after 5 s).
      expect(saidReady(gateway.stderr(), "slow")).toBe(false)
      const names = (await gateway.request("tools/list", {}, undefined, 60_000)).result.tools.map((t: { name: string }) => t.name)
      expect(names).toContain("fast__echo")
      expect(names).toContain("slow__echo")
    } finally {
      await gateway.close()
    }
  }, 90_000)

  it("agentify_search_tools names the backends it could not wait for", async () => {
    const config = {
      startupTimeoutMs: 1_500,
      maxListedTools: 8,
      backends: [fixtureBackend("fx"), fixtureBackend("never", ["--startup-delay-ms", "600000"])]
    }
    const gateway = startGateway({ args: configArgs(config), env: cleanEnv({ AGENTIFY_STATE_DIR: tempDir("agentify-state-") }) })
    try {
      await gateway.initialize()
      const found = await gateway.callTool("agentify_search_tools", { query: "echo the text back" }, undefined, 30_000)
      expect(found.error).toBeUndefined()
      expect(found.result.structuredContent.tools.map((t: { name: string }) => t.name)).toContain("fx__echo")
      expect(found.result.structuredContent.stillStarting).toEqual(["never"])
      expect(found.result.content[0].text).toContain('"stillStarting"')
    } finally {
      await gateway.close()
    }
  })

  it("a backend still starting when a short session ended is remembered on the next start as soon as it is ready", async () => {
    const stateDir = tempDir("agentify-state-")
    // Slow enough that the short session ends first, even on a busy machine.
    const config = { backends: [fixtureBackend("fast"), fixtureBackend("slow", ["--startup-delay-ms", "8000"])] }
    const env = cleanEnv({ AGENTIFY_STATE_DIR: stateDir })
    const known = () => (existsSync(join(stateDir, "known")) ? readdirSync(join(stateDir, "known")) : [])
    const short = startGateway({ args: configArgs(config), env })
    await short.initialize()
    await until("the fast backend remembered", () => known().length === 1, 30_000)
    await short.close()
    expect(known()).toHaveLength(1)

    // Nothing asked of it: remembered once it is ready, not when a session outlives it.
    const next = startGateway({ args: configArgs(config), env })
    try {
      await next.initialize()
      await until("the slow backend remembered", () => known().length === 2, 60_000)
    } finally {
      await next.close()
    }
  }, 120_000)
})

describe("the first start over HTTP", () => {
  it("the port listens at once: /healthz answers, /readyz is 503 while a backend starts, then 200", async () => {
    const config = {
      startupTimeoutMs: 60_000,
      backends: [fixtureBackend("fast"), fixtureBackend("slow", ["--startup-delay-ms", "5000"])]
    }
    const gateway = await startHttpGateway({ config, env: { AGENTIFY_STATE_DIR: tempDir("agentify-state-") } })
    try {
      expect((await fetch(`${gateway.base}/healthz`)).status).toBe(200)
      const early = await fetch(`${gateway.base}/readyz`)
      expect(early.status).toBe(503)
      const body = (await early.json()) as { backends: Array<{ id: string; state: string }> }
      expect(body.backends.find((b) => b.id === "slow")?.state).toBe("starting")
      await until("/readyz to say ready", async () => (await fetch(`${gateway.base}/readyz`)).status === 200, 60_000, 100)
    } finally {
      await gateway.close()
    }
  }, 90_000)
})
