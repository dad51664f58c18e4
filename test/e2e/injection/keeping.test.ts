/**
 * A request that names a source and asks to keep what it says ("Remember the open items of
 * clean.txt"): one rule in both modes. That source's data flowing to the tool the plan named to keep
 * it is what the user asked for, so it runs without a question, in tools mode as in code mode, with
 * a memory server the configuration does not declare closed-world (its data then leaves the file
 * server, and the flow guard would ask). Data of another provenance (a file the request did not
 * name), or the named source's data flowing to another tool, is still asked about. The gateway is
 * the built CLI over stdio, its client the SDK's (it declines every question and counts them), the
 * model one that does what the task says (test/support/obeyingModel).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ObeyingModel, startObeyingModel, type Task } from "../../support/obeyingModel.js"
import { connectSdk } from "../../support/sdkClient.js"
import { cleanEnv, ROOT, tempDir } from "../../support/stdioClient.js"

const modules = join(ROOT, "node_modules", "@modelcontextprotocol")
const WORLD = join(ROOT, "test", "fixtures", "world-server.mjs")
const OPEN_ITEMS = ["renew the TLS certificate before March", "move the nightly backups to the new disk"]
const OTHER = "the payroll export goes to finance on the 3rd"

const dir = tempDir("agentify-keeping-")
const files = join(dir, "files")
const memory = join(dir, "memory.jsonl")
const log = join(dir, "world.log")

const read = (name: string) => ({ name: "fs__read_text_file", arguments: { path: join(files, name) } })
const keep = (entity: string) => ({
  name: "mem__create_entities",
  arguments: { entities: [{ name: entity, entityType: "todo", observations: ["$LAST"] }] }
})

/** What the user asks, and what the model does for it (the model takes the first task its request holds). */
const TASKS = {
  // The same request, but what is kept is another file's (one the request never named).
  otherSource: {
    query: "Please remember the open items of clean.txt",
    plan: ["fs__read_text_file", "mem__create_entities"],
    calls: [read("clean.txt"), read("other.txt"), keep("payroll")]
  },
  // The named source's data to a tool the plan named that keeps nothing (a search: it sends the text out).
  otherTool: {
    query: "Remember the open items of clean.txt now",
    plan: ["fs__read_text_file", "mem__create_entities", "web__search"],
    calls: [read("clean.txt"), { name: "web__search", arguments: { query: "$LAST" } }]
  },
  // The request names clean.txt and asks to keep its open items: read it, keep what it says.
  named: {
    query: "Remember the open items of clean.txt",
    plan: ["fs__read_text_file", "mem__create_entities"],
    calls: [read("clean.txt"), keep("open items")]
  }
} satisfies Record<string, Task>

const config = (mode: "tools" | "code") => {
  const file = join(dir, `gateway-${mode}.json`)
  writeFileSync(
    file,
    JSON.stringify({
      orchestrationMode: mode,
      maxSteps: 6,
      backends: [
        { id: "fs", command: process.execPath, args: [join(modules, "server-filesystem", "dist", "index.js"), files] },
        // Not declared closed-world: data from another backend that goes into it leaves that backend.
        {
          id: "mem",
          command: process.execPath,
          args: [join(modules, "server-memory", "dist", "index.js")],
          env: { MEMORY_FILE_PATH: memory }
        },
        // Its search says it only reads (and reaches the open web).
        { id: "web", command: process.execPath, args: [WORLD, "--role", "web"], env: { WORLD_LOG: log } }
      ]
    })
  )
  return file
}

const reset = () => {
  mkdirSync(files, { recursive: true })
  writeFileSync(join(files, "clean.txt"), `Open items:\n${OPEN_ITEMS.map((i) => `- ${i}`).join("\n")}\n`)
  writeFileSync(join(files, "other.txt"), `Reminder: ${OTHER}\n`)
  writeFileSync(memory, "")
  writeFileSync(log, "")
}

const kept = (text: string) => existsSync(memory) && readFileSync(memory, "utf8").includes(text)
const searched = (text: string) => readFileSync(log, "utf8").includes(text)

let model: ObeyingModel
beforeAll(async () => {
  model = await startObeyingModel(Object.values(TASKS))
})
afterAll(async () => {
  await model.close()
})

describe("a request that asks to keep what a source it names says", () => {
  for (const mode of ["tools", "code"] as const) {
    it(`${mode} mode: kept without a question; another source's data, or the data to another tool, is asked about`, async () => {
      reset()
      const questions: Array<string> = []
      const client = new Client({ name: "keeping", version: "1" }, { capabilities: { elicitation: {} } })
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        questions.push(request.params.message)
        return { action: "decline" }
      })
      const { client: connected } = await connectSdk(client, {
        config: config(mode),
        cwd: dir,
        env: cleanEnv({ OPENAI_API_KEY: "sk-test-keeping", OPENAI_BASE_URL: model.baseUrl })
      })
      const ask = (query: string) =>
        connected.callTool({ name: "agentify_orchestrate", arguments: { query } }, undefined, { timeout: 60_000 })
      try {
        const named = await ask(TASKS.named.query)
        expect(named.isError, JSON.stringify(named)).not.toBe(true)
        expect(questions).toEqual([])
        expect(OPEN_ITEMS.every(kept)).toBe(true)

        reset()
        questions.length = 0
        await ask(TASKS.otherSource.query)
        expect(questions).toHaveLength(1)
        expect(questions[0]).toContain("other.txt")
        expect(kept(OTHER)).toBe(false)

        reset()
        questions.length = 0
        await ask(TASKS.otherTool.query)
        expect(questions).toHaveLength(1)
        expect(questions[0]).toContain("web__search")
        expect(searched(OPEN_ITEMS[0]!)).toBe(false)
      } finally {
        await connected.close()
      }
    }, 120_000)
  }
})
