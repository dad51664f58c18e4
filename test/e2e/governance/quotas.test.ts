/**
 * `limits` through the built CLI over stdio, with a real backend: a tool's calls per minute, and
 * the subject's, counted for a client's own calls and a script's alike; past them -32029 (or the
 * script's error) names the limit and when to retry, and other tools still run.
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { type CliClient, startGateway, tempDir } from "../../support/stdioClient.js"

describe("quotas (limits) over stdio", () => {
  let client: CliClient
  beforeAll(async () => {
    const config = join(tempDir(), "gateway.json")
    writeFileSync(
      config,
      JSON.stringify({
        backends: [fixtureBackend("fx")],
        limits: { subject: { callsPerMinute: 5 }, tools: { fx__add: { callsPerMinute: 2 } } }
      })
    )
    client = startGateway({ args: ["--config", config] })
    await client.initialize()
  })
  afterAll(async () => {
    await client.close()
  })

  it("a tool past its calls per minute is refused naming the limit and when to retry; the subject's count goes on", async () => {
    expect((await client.callTool("fx__add", { a: 1, b: 2 })).result?.isError).not.toBe(true)
    expect((await client.callTool("fx__add", { a: 1, b: 2 })).result?.isError).not.toBe(true)
    const refused = await client.callTool("fx__add", { a: 1, b: 2 })
    expect(refused.error?.code).toBe(-32029)
    expect(refused.error?.message).toMatch(
      /^Too many calls: fx__add is past limits\.tools\["fx__add"\] \(2 calls per minute\); retry in \d+ s$/
    )
    expect(refused.error?.data).toMatchObject({ limit: 'limits.tools["fx__add"]' })
    // Another tool runs: the subject has used 3 of its 5 (the refused call took none).
    expect((await client.callTool("fx__echo", { text: "a" })).result?.isError).not.toBe(true)
    // A script's calls count against the same subject: its third call is the subject's sixth.
    const script = await client.callTool("agentify_run_code", {
      code: 'await tools.fx.echo({ text: "b" }); await tools.fx.echo({ text: "c" }); return await tools.fx.echo({ text: "d" })'
    })
    expect(script.result?.isError).toBe(true)
    expect(JSON.stringify(script.result?.content)).toContain("past limits.subject (5 calls per minute)")
  }, 30_000)
})
