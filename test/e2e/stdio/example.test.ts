/**
 * The README's complete example, run as it is written: its config is `examples/release-notes`'
 * file, its `check` passes, and its `ask` (the built CLI, the example's servers as installed, the
 * folder's scripted model) prints the README's transcript, timings aside. Without the config's
 * `flow` the request still keeps what it asks to keep (the open items of the file it names), but a
 * request that does not ask to keep them has its second step held: without a terminal `ask` says
 * why and what to declare, and exits 1; in a terminal (a pseudo-terminal through `script`) it asks
 * y/n. And the terminal commands wait for a backend that is slow to start.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, cleanEnv, ROOT, tempDir } from "../../support/stdioClient.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { until } from "../../support/process.js"

const EXAMPLE = join(ROOT, "examples", "release-notes")
const readme = readFileSync(join(ROOT, "README.md"), "utf8")
const section = readme.slice(readme.indexOf("## A complete example"), readme.indexOf("Over MCP, the client calls"))
const blocks = (lang: string) => [...section.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]!)

/** What the README's console block shows the ask command print (the lines after it). */
const transcript = blocks("console")[0]!.split("\n")
const askLine = transcript.findIndex((line) => line.startsWith("$ ") && line.includes(" ask "))
const printed = transcript.slice(askLine + 1).join("\n")
/** The query and the arguments after it, as the README's command gives them. */
const [, query, rest] = /ask "([^"]+)" (.*)$/.exec(transcript[askLine]!)!

/** Timings differ from run to run; the offered line is the ranking's, its figures the ranking's to keep. */
const comparable = (text: string) =>
  text
    .split("\n")
    .filter((line) => !line.startsWith("offered ("))
    .map((line) => line.replace(/\b\d+ ms\b/g, "N ms"))
    .join("\n")
    .trim()

let model: ChildProcess
let modelUrl: string

beforeAll(async () => {
  // The folder's scripted model, on a port of its own.
  model = spawn(process.execPath, [join(EXAMPLE, "model.mjs"), "--port", "0"], { stdio: ["ignore", "ignore", "pipe"] })
  let said = ""
  model.stderr!.on("data", (chunk: Buffer) => (said += chunk.toString("utf8")))
  modelUrl = await until("the scripted model", () => /scripted model at (\S+)/.exec(said)?.[1])
})
afterAll(() => {
  model?.kill()
})

/** The built CLI in the example's folder (or `cwd`), as the README runs it; memory and pins in a folder of the test's own. */
const cli = (args: ReadonlyArray<string>, extra: Record<string, string> = {}, cwd: string = EXAMPLE) => {
  const own = tempDir("agentify-example-")
  const result = spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    env: cleanEnv({ OPENAI_BASE_URL: modelUrl, OPENAI_API_KEY: "fake", PWD: own, ...extra }),
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 60_000
  })
  return { status: result.status, out: result.stdout.toString("utf8"), err: result.stderr.toString("utf8"), own }
}

/** The README's question without "remember it": the scripted model remembers the open items all the same. */
const UNASKED = "what is still open in notes/release.md?"

/** The example's config without `memory`'s flow, in a file of the test's own (its paths still the folder's). */
const withoutFlow = () => {
  const config = JSON.parse(readFileSync(join(EXAMPLE, "agentify.json"), "utf8").replaceAll("${configDir}", EXAMPLE))
  delete config.mcpServers.memory.flow
  const file = join(tempDir("agentify-example-config-"), "agentify.json")
  writeFileSync(file, JSON.stringify(config))
  return file
}

describe("the README's complete example", () => {
  it("shows the example's config, and its check passes", () => {
    expect(JSON.parse(blocks("json")[0]!)).toEqual(JSON.parse(readFileSync(join(EXAMPLE, "agentify.json"), "utf8")))
    expect(existsSync(join(EXAMPLE, "notes", "release.md"))).toBe(true)
    const command = blocks("sh")[0]!
      .split("\n")
      .find((line) => line.includes(" check "))!
    const checked = cli(command.split(" ").slice(2))
    expect(checked.err).toBe("")
    expect(checked.out).toContain("every enabled backend is ready")
    expect(checked.status).toBe(0)
  })

  it("checks from another folder too: its paths are the config's folder's (${configDir}), not the current directory's", () => {
    const elsewhere = tempDir("agentify-example-elsewhere-")
    const checked = cli(["check", "--config", join(EXAMPLE, "agentify.json")], {}, elsewhere)
    expect(checked.out).toMatch(/^files\s+stdio\s+ready/m)
    expect(checked.out).toMatch(/^memory\s+stdio\s+ready/m)
    expect(checked.out).toContain("every enabled backend is ready")
    expect(checked.status).toBe(0)
  })

  it("asks as the README shows: the same steps, result and answer, exit 0", () => {
    const run = cli(["ask", query!, ...rest!.split(" ")])
    expect(comparable(run.out)).toBe(comparable(printed))
    expect(run.status).toBe(0)
    // What it remembered is in the memory file the config names.
    expect(readFileSync(join(run.own, "memory.jsonl"), "utf8")).toContain("bump the version to 0.2.0")
  })

  it("without the config's flow: what the request asks to keep is kept; asked nothing, with no terminal, the held step says why and what to declare, and ask exits 1", () => {
    const config = withoutFlow()
    const kept = cli(["ask", query!, "--config", config])
    expect(kept.out).toMatch(/step 2: memory__create_entities, \d+ ms, ok/)
    expect(kept.status).toBe(0)
    const run = cli(["ask", UNASKED, "--config", config])
    expect(run.out).toContain("step 2: memory__create_entities, 0 ms, held, not run")
    expect(run.out).toContain("why: Not run: memory__create_entities was held by private-data-out")
    expect(run.out).toContain('"flow": {"tools": {"create_entities": {"openWorld": false}}} on backend memory')
    expect(run.status).toBe(1)
  })

  const hasScript = spawnSync("script", ["--version"]).status === 0
  it.skipIf(!hasScript)("in a terminal, ask asks y/n for the held step: yes runs it (exit 0), no declines it (exit 1)", () => {
    const config = withoutFlow()
    const inTerminal = (answer: string) => {
      const own = tempDir("agentify-example-tty-")
      const quoted = (text: string) => `'${text.replace(/'/g, "'\\''")}'`
      const question = join(own, "question")
      // The CLI in a pseudo-terminal (`script`), its questions on stderr kept in a file; the answer
      // is typed once the question is there.
      const runner = join(own, "ask.sh")
      writeFileSync(
        runner,
        // PWD as the test's own (the shell sets it to the folder): the config keeps memory there.
        `PWD=${quoted(own)} exec ${[process.execPath, BIN, "ask", UNASKED, "--config", config].map(quoted).join(" ")} 2>${quoted(question)}\n`
      )
      const result = spawnSync(
        "sh",
        [
          "-c",
          `(i=0; until grep -q "Run it?" ${quoted(question)} 2>/dev/null || [ $i -ge 500 ]; do sleep 0.1; i=$((i+1)); done; sleep 0.2; printf '${answer}\\n') | script -qec ${quoted(`sh ${runner}`)} /dev/null`
        ],
        {
          cwd: EXAMPLE,
          env: cleanEnv({ OPENAI_BASE_URL: modelUrl, OPENAI_API_KEY: "fake", PWD: own }),
          timeout: 60_000
        }
      )
      return { status: result.status, out: result.stdout.toString("utf8"), question: readFileSync(question, "utf8") }
    }
    const yes = inTerminal("y")
    expect(yes.question).toContain("Allow memory__create_entities to run with these arguments?")
    expect(yes.question).toContain('"flow": {"tools": {"create_entities": {"openWorld": false}}} on backend memory')
    expect(yes.out).toMatch(/step 2: memory__create_entities, \d+ ms, ok/)
    expect(yes.out).toContain("bump the version to 0.2.0")
    expect(yes.status).toBe(0)
    const no = inTerminal("n")
    expect(no.out).toMatch(/step 2: memory__create_entities, \d+ ms, declined, not run/)
    expect(no.status).toBe(1)
  })
})

describe("the terminal commands and a backend slow to start", () => {
  it("tools waits for it past startupTimeoutMs, saying so, and lists its tools", () => {
    const config = join(tempDir("agentify-slow-"), "agentify.json")
    writeFileSync(
      config,
      JSON.stringify({ backends: [fixtureBackend("slow", ["--startup-delay-ms", "3000"])], startupTimeoutMs: 500 })
    )
    const result = spawnSync(process.execPath, [BIN, "tools", "--config", config], { env: cleanEnv(), timeout: 60_000 })
    const out = result.stdout.toString("utf8")
    expect(out).toContain("slow__echo")
    expect(result.stderr.toString("utf8")).toContain("mcp-agentify: waiting for slow to start (at most 30 s)")
    expect(result.status).toBe(0)
  })

  it("call waits for its tool's backend, not for the others", () => {
    const config = join(tempDir("agentify-slow-"), "agentify.json")
    writeFileSync(
      config,
      JSON.stringify({
        backends: [
          fixtureBackend("slow", ["--startup-delay-ms", "3000"]),
          fixtureBackend("other", ["--startup-delay-ms", "3000"])
        ],
        startupTimeoutMs: 500
      })
    )
    const result = spawnSync(process.execPath, [BIN, "call", "slow__echo", '{"text": "kiwi"}', "--config", config], {
      env: cleanEnv(),
      timeout: 60_000
    })
    expect(result.stdout.toString("utf8")).toContain("kiwi")
    expect(result.stderr.toString("utf8")).toContain("mcp-agentify: waiting for slow to start")
    expect(result.stderr.toString("utf8")).not.toMatch(/waiting for [^\n]*other/)
    expect(result.status).toBe(0)
  })
})
