/** Remembered lists (see src/backend/Known.ts): what is written is read back; anything else is ignored. */
import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Known from "../../../src/backend/Known.js"
import { fixtureBackend } from "../../support/mcpFixture.js"

const stateDir = () => mkdtempSync(join(tmpdir(), "agentify-known-"))
const tools = [{ name: "echo", description: "Echoes", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } }]
const lists = {
  resources: [{ uri: "file:///notes.txt", name: "notes" }],
  resourceTemplates: [{ uriTemplate: "file:///{path}", name: "any file" }],
  prompts: [{ name: "review", description: "Reviews", arguments: [{ name: "code" }] }]
}
const fileIn = (dir: string) => join(dir, "known", readdirSync(join(dir, "known"))[0]!)

describe("Known", () => {
  it("reads back the tools it wrote, every field kept, for the same launch only", async () => {
    const dir = stateDir()
    const config = fixtureBackend("alpha")
    await Effect.runPromise(Known.write(dir, config, { tools, capabilities: { tools: {}, logging: {} } }))
    expect(await Effect.runPromise(Known.read(dir, config))).toEqual({ tools, capabilities: ["tools", "logging"], lists: {} })
    // Another id, the same command: another backend of the configuration, nothing known.
    expect(await Effect.runPromise(Known.read(dir, { ...config, id: "beta" }))).toBeUndefined()
    // Other arguments: another server, nothing known.
    expect(await Effect.runPromise(Known.read(dir, fixtureBackend("alpha", ["--tools", "2"])))).toBeUndefined()
  })

  it("ignores a file that is not JSON, of another launch, malformed, with too many tools, or too large", async () => {
    const dir = stateDir()
    const config = fixtureBackend("alpha")
    await Effect.runPromise(Known.write(dir, config, { tools, capabilities: { tools: {}, resources: {} }, lists }))
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
      JSON.stringify({ ...written, tools: [{ ...tools[0], description: "x".repeat(Known.MAX_KNOWN_BYTES) }] }),
      // An earlier version's file, lists that are not lists, items without what names them, too many.
      JSON.stringify({ ...written, version: 1 }),
      JSON.stringify({ ...written, lists: [] }),
      JSON.stringify({ ...written, lists: { resources: "file:///a" } }),
      JSON.stringify({ ...written, lists: { resources: [{ name: "no uri" }] } }),
      JSON.stringify({ ...written, lists: { prompts: [{ name: 7 }] } }),
      JSON.stringify({
        ...written,
        lists: { resources: Array.from({ length: Known.MAX_KNOWN_ITEMS + 1 }, (_, i) => ({ uri: `file:///${i}` })) }
      })
    ]
    for (const text of cases) {
      writeFileSync(file, text)
      expect(await Effect.runPromise(Known.read(dir, config))).toBeUndefined()
    }
    writeFileSync(file, JSON.stringify(written))
    expect(await Effect.runPromise(Known.read(dir, config))).toBeDefined()
  })

  it("keeps two backends of one configuration apart: one command, another env, their own lists", async () => {
    const dir = stateDir()
    const ro = fixtureBackend("ro", [], { args: ["/srv/shared.mjs"], env: { MODE: "ro" } })
    const rw = fixtureBackend("rw", [], { args: ["/srv/shared.mjs"], env: { MODE: "rw" } })
    const writes = [{ name: "delete_repo", description: "Deletes", inputSchema: { type: "object" } }]
    await Effect.runPromise(Known.write(dir, rw, { tools: writes, capabilities: { tools: {} } }))
    // `ro` never ran: nothing of `rw`'s is its.
    expect(await Effect.runPromise(Known.read(dir, ro))).toBeUndefined()
    await Effect.runPromise(Known.write(dir, ro, { tools, capabilities: { tools: {} } }))
    expect((await Effect.runPromise(Known.read(dir, ro)))?.tools).toEqual(tools)
    expect((await Effect.runPromise(Known.read(dir, rw)))?.tools).toEqual(writes)
    // A rotated value in env is the same backend: what it listed is still known.
    expect((await Effect.runPromise(Known.read(dir, { ...rw, env: { MODE: "rotated" } })))?.tools).toEqual(writes)
  })

  it("reads back the resources, templates and prompts it wrote, and tells the team's mirror what it wrote", async () => {
    const dir = stateDir()
    const config = fixtureBackend("alpha")
    const told: Array<[string, string]> = []
    const known = { tools, capabilities: { tools: {}, resources: {}, prompts: {} }, lists }
    await Effect.runPromise(Known.write(dir, config, known, (kind, name) => told.push([kind, name])))
    expect(await Effect.runPromise(Known.read(dir, config))).toEqual({
      tools,
      capabilities: ["tools", "resources", "prompts"],
      lists
    })
    expect(told).toEqual([["known", readdirSync(join(dir, "known"))[0]!.replace(/\.json$/, "")]])
    // The same again: nothing written, nobody told.
    await Effect.runPromise(Known.write(dir, config, known, (kind, name) => told.push([kind, name])))
    expect(told).toHaveLength(1)
  })

  it("a backend waits for its first use only when every list a client asks for at the start is remembered, and none that runs tasks", () => {
    expect(Known.mayWait({ tools, capabilities: ["tools", "logging"] })).toBe(true)
    expect(Known.mayWait({ tools, capabilities: ["tools", "resources", "prompts"], lists })).toBe(true)
    expect(Known.mayWait({ tools, capabilities: ["tools", "resources"], lists: { resources: lists.resources } })).toBe(false)
    expect(Known.mayWait({ tools, capabilities: ["tools", "prompts"], lists: {} })).toBe(false)
    expect(Known.mayWait({ tools, capabilities: ["tools", "tasks"], lists })).toBe(false)
    // Once started, one a client may hold something of stays.
    for (const capability of ["resources", "prompts", "tasks"]) expect(Known.staysOnceStarted(["tools", capability])).toBe(true)
    expect(Known.staysOnceStarted(["tools", "logging"])).toBe(false)
  })
})
