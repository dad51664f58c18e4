/** Remembered tool lists (see src/backend/Known.ts): what is written is read back; anything else is ignored. */
import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Known from "../../../src/backend/Known.js"
import { fixtureBackend } from "../../support/mcpFixture.js"

const stateDir = () => mkdtempSync(join(tmpdir(), "agentify-known-"))
const tools = [{ name: "echo", description: "Echoes", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } }]
const fileIn = (dir: string) => join(dir, "known", readdirSync(join(dir, "known"))[0]!)

describe("Known", () => {
  it("reads back the tools it wrote, every field kept, for the same launch only", async () => {
    const dir = stateDir()
    const config = fixtureBackend("alpha")
    await Effect.runPromise(Known.write(dir, config, tools, { tools: {}, logging: {} }))
    expect(await Effect.runPromise(Known.read(dir, config))).toEqual({ tools, capabilities: ["tools", "logging"] })
    // Another id, the same launch: the same server.
    expect(await Effect.runPromise(Known.read(dir, { ...config, id: "beta" }))).toBeDefined()
    // Other arguments: another server, nothing known.
    expect(await Effect.runPromise(Known.read(dir, fixtureBackend("alpha", ["--tools", "2"])))).toBeUndefined()
  })

  it("ignores a file that is not JSON, of another launch, malformed, with too many tools, or too large", async () => {
    const dir = stateDir()
    const config = fixtureBackend("alpha")
    await Effect.runPromise(Known.write(dir, config, tools, { tools: {} }))
    const file = fileIn(dir)
    const written = JSON.parse(readFileSync(file, "utf8"))
    const cases = [
      "{not json",
      JSON.stringify({ ...written, key: "0".repeat(32) }),
      JSON.stringify({ ...written, tools: [{ name: 42, inputSchema: {} }] }),
      JSON.stringify({ ...written, tools: [{ name: "x" }] }),
      JSON.stringify({ ...written, capabilities: "tools" }),
      JSON.stringify({
        ...written,
        tools: Array.from({ length: Known.MAX_KNOWN_TOOLS + 1 }, (_, i) => ({ name: `t${i}`, inputSchema: {} }))
      }),
      JSON.stringify({ ...written, tools: [{ ...tools[0], description: "x".repeat(Known.MAX_KNOWN_BYTES) }] })
    ]
    for (const text of cases) {
      writeFileSync(file, text)
      expect(await Effect.runPromise(Known.read(dir, config))).toBeUndefined()
    }
    writeFileSync(file, JSON.stringify(written))
    expect(await Effect.runPromise(Known.read(dir, config))).toBeDefined()
  })

  it("a backend offering resources, prompts or tasks does not wait for its first use", () => {
    expect(Known.mayWait({ tools, capabilities: ["tools", "logging"] })).toBe(true)
    for (const capability of ["resources", "prompts", "tasks"]) {
      expect(Known.mayWait({ tools, capabilities: ["tools", capability] })).toBe(false)
    }
  })
})
