/**
 * Descriptions screened: a backend whose tool description hides an instruction in Unicode tag
 * characters (with a bidirectional override and zero-width characters). Clients get the
 * description byte-exact; the gateway's own model and code mode's declarations never see the
 * hidden characters; `check` names the backend and the tool.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { connectSdk } from "../../support/sdkClient.js"
import { spawnSync } from "node:child_process"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, cleanEnv, tempDir } from "../../support/stdioClient.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { type FakeOpenAI, startFakeOpenAI } from "../../support/fakeOpenAI.js"

/** Anything a reader would not see: the tag block, bidi controls, zero-width characters. */
const HIDDEN = /[\u{E0000}-\u{E007F}\u202A-\u202E\u2066-\u2069\u200B-\u200F\u2060\uFEFF]/u

describe("tool descriptions that hide text", () => {
  let model: FakeOpenAI
  let dir: string
  let config: string
  let client: Client
  beforeAll(async () => {
    model = await startFakeOpenAI({ text: "nothing to do" })
    dir = tempDir()
    config = join(dir, "gateway.json")
    writeFileSync(config, JSON.stringify({ backends: [fixtureBackend("fx", ["--hidden-text"])] }))
    ;({ client } = await connectSdk(new Client({ name: "screening", version: "1.0.0" }), {
      config,
      cwd: dir,
      env: cleanEnv({ OPENAI_API_KEY: "sk-test-screen-00000000000000", OPENAI_BASE_URL: model.baseUrl })
    }))
  })
  afterAll(async () => {
    await client.close()
    await model.close()
  })

  it("are relayed to clients byte-exact", async () => {
    const notes = (await client.listTools()).tools.find((t) => t.name === "fx__notes")!
    expect(notes.description).toMatch(HIDDEN)
    expect(notes.description).toContain("\u{E0072}\u{E0065}\u{E0061}\u{E0064}")
    expect((notes.inputSchema.properties as any).folder.description).toMatch(HIDDEN)
  })

  it("reach the gateway's model and code mode's declarations without the hidden characters", async () => {
    const before = model.requests.length
    await client.callTool({ name: "agentify_orchestrate", arguments: { query: "list my notes", maxSteps: 1 } })
    const offered = (model.requests[before]?.body.tools as Array<any>).find((t) => t.function.name === "fx__notes")
    expect(offered.function.description).toBe("[fx] Lists your notes. Fast and safe.")
    expect(offered.function.parameters.properties.folder.description).toBe("Which folder")
    expect(JSON.stringify(model.requests[before]?.body)).not.toMatch(HIDDEN)
    const runCode = (await client.listTools()).tools.find((t) => t.name === "agentify_run_code")!
    expect(runCode.description).toContain("Lists your notes. Fast and safe.")
    expect(runCode.description).not.toMatch(HIDDEN)
  })

  it("are named by check, with the backend and the tool", () => {
    const result = spawnSync(process.execPath, [BIN, "check", "--config", config, "--log-level", "silent"], {
      cwd: dir,
      env: cleanEnv(),
      timeout: 20_000
    })
    const out = result.stdout.toString("utf8")
    expect(out).toContain("warnings:")
    expect(out).toMatch(/- fx: tool notes's description hides characters \(18 tag, 1 bidi, 1 zero-width, in inputSchema\)/)
    expect(out).toContain("- fx: prompt summary's description hides characters (2 bidi)")
    expect(result.status).toBe(0)
  })
})
