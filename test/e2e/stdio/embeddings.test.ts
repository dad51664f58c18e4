/**
 * `embeddings` seen from the terminal, against a real local embeddings endpoint and a local model:
 * `ask` shows the tools the model was sent (the fusion with the semantic ranking, not the lexical
 * list alone); an endpoint that answers nonsense leaves that offer the lexical one; `check` names
 * the setting (model, origin, whose key) and never the key; the start-up log names it too.
 */
import { spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type EmbeddingsServer, startEmbeddingsServer } from "../../support/embeddingsServer.js"
import { type FakeOpenAI, startFakeOpenAI } from "../../support/fakeOpenAI.js"
import { filesystemBackend, fixtureBackend } from "../../support/mcpFixture.js"
import { BIN, cleanEnv, tempDir } from "../../support/stdioClient.js"

const runAsync = (args: ReadonlyArray<string>, options: { env: NodeJS.ProcessEnv; cwd: string }) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    child.on("exit", (status) => resolve({ status, stdout, stderr }))
  })

const QUERY = "keep a copy of this on disk"
const MODEL_KEY = "sk-embeddings-e2e-0001"

let embeddings: EmbeddingsServer
let model: FakeOpenAI
beforeAll(async () => {
  embeddings = await startEmbeddingsServer()
  model = await startFakeOpenAI({ text: "Nothing to do." })
})
afterAll(async () => {
  await embeddings?.close()
  await model?.close()
})

/** A project whose config has the filesystem and 60 more tools, five offered, with `embeddings` as given. */
const project = (extra: Record<string, unknown>) => {
  const dir = tempDir("agentify-embeddings-")
  const file = join(dir, "agentify.json")
  writeFileSync(
    file,
    JSON.stringify({
      backends: [filesystemBackend("filesystem", dir), fixtureBackend("many", ["--tools", "60"])],
      maxToolsPerRequest: 5,
      ...extra
    })
  )
  return { dir, file }
}

/** `ask`'s offered line, and the tools the model was sent (its own functions left out). */
const ask = async (extra: Record<string, unknown>) => {
  const { dir, file } = project(extra)
  const before = model.requests.length
  const env = cleanEnv({ OPENAI_API_KEY: MODEL_KEY, OPENAI_BASE_URL: model.baseUrl })
  const asked = await runAsync(["ask", QUERY, "--config", file], { env, cwd: dir })
  // The model chooses nothing (the exit status says so): what matters here is what it was offered.
  const line = /^offered \(\d+, in the order the task ranking sent them[^)]*\): (.*)$/m.exec(asked.stdout)?.[1]
  expect(line, `${asked.stdout}\n${asked.stderr.slice(-800)}`).toBeDefined()
  const shown = line!.split(", ").map((t) => t.replace(/ \([\d.]+\)$/, ""))
  const request = model.requests.slice(before).find((r) => Array.isArray(r.body?.tools))
  const sent: Array<string> = (request?.body.tools ?? [])
    .map((t: { function: { name: string } }) => t.function.name)
    .filter((name: string) => !name.startsWith("agentify_"))
  return { shown, sent, stderr: asked.stderr }
}

describe("embeddings from the terminal", () => {
  it("ask shows the tools the model was sent, fused with the semantic ranking; nonsense vectors leave the lexical offer", async () => {
    embeddings.setMode("ok")
    const lexical = await ask({})
    expect(lexical.shown).toEqual(lexical.sent)
    expect(lexical.sent).not.toContain("filesystem__write_file")
    const semantic = await ask({ embeddings: { model: "test-embed", baseUrl: embeddings.baseUrl } })
    expect(semantic.sent).toContain("filesystem__write_file")
    expect(semantic.shown).toEqual(semantic.sent)
    // An endpoint answering vectors of zeros: refused, and the offer is the lexical one.
    embeddings.setMode("zeros")
    const zeros = await ask({ embeddings: { model: "test-embed-zeros", baseUrl: embeddings.baseUrl } })
    expect(zeros.sent).toEqual(lexical.sent)
    expect(zeros.shown).toEqual(lexical.sent)
    expect(zeros.stderr).toContain("answered a vector of zeros")
    embeddings.setMode("ok")
  }, 60_000)

  it("check and the start-up log name the setting (model, origin, whose key), never a key", async () => {
    const env = cleanEnv({ OPENAI_API_KEY: MODEL_KEY, OPENAI_BASE_URL: model.baseUrl })
    const origin = new URL(embeddings.baseUrl).origin
    const foreign = project({ embeddings: { model: "test-embed", baseUrl: embeddings.baseUrl } })
    const checked = await runAsync(["check", "--config", foreign.file], { env, cwd: foreign.dir })
    expect(checked.stdout).toMatch(new RegExp(`^embeddings: test-embed at ${origin}, no key \\(not the model's origin`, "m"))
    const own = project({ embeddings: { model: "test-embed", baseUrl: embeddings.baseUrl, apiKey: "sk-embed-own-0002" } })
    const ownChecked = await runAsync(["check", "--config", own.file], { env, cwd: own.dir })
    expect(ownChecked.stdout).toMatch(new RegExp(`^embeddings: test-embed at ${origin}, key: embeddings.apiKey$`, "m"))
    const off = project({})
    expect((await runAsync(["check", "--config", off.file], { env, cwd: off.dir })).stdout).toMatch(/^embeddings: off/m)
    // The gateway's start says it too (stdin closed at once: it starts, says, and stops).
    const started = await runAsync(["--config", own.file, "--log-level", "info"], { env, cwd: own.dir })
    expect(started.stderr).toContain(`test-embed at ${origin}, key: embeddings.apiKey`)
    for (const out of [checked, ownChecked, started]) {
      expect(out.stdout + out.stderr).not.toContain("sk-embed-own-0002")
      expect(out.stdout + out.stderr).not.toContain(MODEL_KEY)
    }
  }, 60_000)
})
