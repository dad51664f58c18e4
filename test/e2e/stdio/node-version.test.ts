/**
 * The published binary started by a Node older than the package needs: one line on stderr saying
 * which Node it needs, exit 1, nothing on stdout, no stack. The older Node is this one told it is
 * older (an `--import` that sets `process.versions.node`): a machine need not have an old Node.
 */
import { describe, expect, it } from "vitest"
import { spawn } from "node:child_process"
import { once } from "node:events"
import { BIN, cleanEnv, tempDir } from "../../support/stdioClient.js"

const pretend = (version: string) =>
  `data:text/javascript,${encodeURIComponent(`Object.defineProperty(process.versions, "node", { value: ${JSON.stringify(version)} })`)}`

const run = async (version: string) => {
  const child = spawn(process.execPath, ["--import", pretend(version), BIN, "--version"], {
    cwd: tempDir(),
    env: cleanEnv(),
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  const [code] = (await once(child, "exit")) as [number | null]
  return { code, stdout, stderr }
}

describe("an older Node", () => {
  it("Node 20: one line naming the Node needed, exit 1, stdout empty", async () => {
    const { code, stdout, stderr } = await run("20.20.2")
    expect(code).toBe(1)
    expect(stdout).toBe("")
    expect(stderr.trimEnd().split("\n")).toHaveLength(1)
    expect(stderr).toMatch(/^mcp-agentify needs Node\.js 22\.19 or later; this is Node\.js 20\.20\.2 /)
    expect(stderr).not.toMatch(/\bat .+:\d+:\d+/)
  })

  it("Node 22.19 runs it", async () => {
    const { code, stdout } = await run("22.19.0")
    expect(code).toBe(0)
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/)
  })
})
