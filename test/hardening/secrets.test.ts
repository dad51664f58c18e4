/**
 * Secrets through the whole flow, at log level `trace`: the OpenAI key (env, then
 * initializationOptions), backend `env` values (one of them with a quote and a backslash, which
 * JSON escapes), and values after `--key` / in `--token=...` in a backend's args. The fixture
 * repeats them wherever it can (`--leak-env`: stderr, start-up failure, crash, JSON-RPC errors), the
 * fake LLM endpoint echoes them in 401 and 500 bodies. None may appear on stderr, in any error
 * message or in any `data` on stdout, raw, JSON-escaped or as a distinctive fragment.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type FakeOpenAI, startFakeOpenAI } from "../support/fakeOpenAI.js"
import { fixtureBackend } from "../support/mcpFixture.js"
import { cleanEnv, Client, closeCleanly, descendants, untilGone, writeConfig } from "./support.js"

const KEY = "sk-hardening-secret-9Qm2Xv7Lp4Zt8Rw6"
const INIT_KEY = "sk-from-init-options-3Hn5Bc8Kd1Fg"
const TOKEN = "tok_plain_secret_31415926"
const QUOTED = 'q"uo\\ted-secret-2718281828'
const ARG = "arg-secret-value-5d4c3b2a"
const INLINE = "inline-token-secret-1234"

/** Each secret, as printed raw, inside a JSON string, inside a JSON string in a JSON string, and a fragment. */
const formsOf = (secret: string): Array<string> => {
  const once = JSON.stringify(secret).slice(1, -1)
  const twice = JSON.stringify(once).slice(1, -1)
  // The longest run without characters JSON escapes: found however the secret was escaped.
  const fragment = secret.split(/["\\]/).sort((a, b) => b.length - a.length)[0]!
  return [...new Set([secret, once, twice, fragment.length >= 10 ? fragment : secret])]
}

const expectNoSecret = (where: string, text: string, secrets: ReadonlyArray<string>) => {
  for (const secret of secrets) {
    for (const form of formsOf(secret)) {
      const at = text.indexOf(form)
      if (at >= 0)
        throw new Error(`${where} holds a secret (${JSON.stringify(form)}): ...${text.slice(Math.max(0, at - 300), at + 100)}...`)
    }
  }
}

const leakyBackend = (id: string, extra: ReadonlyArray<string> = [], overrides = {}) =>
  fixtureBackend(id, ["--leak-env", "SECRET_TOKEN,SECRET_QUOTED", "--key", ARG, `--token=${INLINE}`, ...extra], {
    env: { SECRET_TOKEN: TOKEN, SECRET_QUOTED: QUOTED },
    ...overrides
  })

/** Everything on stdout a secret must not be in: error messages and data, and every notification. */
const errorsAndData = (client: Client): string =>
  JSON.stringify(
    client.messages
      .flatMap((m) => (Array.isArray(m) ? m : [m]))
      .map((m) => ({ error: m.error, data: m.result?.structuredContent, method: m.method, params: m.params }))
  )

describe("secrets never leak, at log level trace", () => {
  let fake: FakeOpenAI
  let client: Client
  let tree: Array<number> = []

  beforeAll(async () => {
    fake = await startFakeOpenAI()
    client = new Client({
      args: [
        "--log-level",
        "trace",
        "--config",
        writeConfig({
          startupTimeoutMs: 10_000,
          backends: [leakyBackend("sx"), leakyBackend("sy", ["--exit-during-startup"], { restartOnCrash: false })]
        })
      ],
      env: cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.baseUrl })
    })
    const init = await client.initialize()
    expect(init.result?.serverInfo?.name).toBe("mcp-agentify")
    // initialize does not wait for the backends; a first request does.
    await client.request("tools/list")
    tree = descendants(client.pid)
  })

  afterAll(async () => {
    await fake.close()
  })

  it("a backend's JSON-RPC error, start-up failure and crash; LLM 401 and 500 bodies: all scrubbed", async () => {
    const secrets = [KEY, TOKEN, QUOTED, ARG, INLINE]

    expect((await client.callTool("sx__echo", { text: "hello" })).result?.content?.[0]?.text).toBe('{"text":"hello"}')

    // The backend's own error quotes every secret; the gateway's -32004 masks them.
    const failed = await client.callTool("sx__fail")
    expect(failed.error?.code).toBe(-32004)
    expect(failed.error?.message).toMatch(
      /^Backend 'sx' failed: tools\/call returned error -32000: this tool always fails \[SECRET_TOKEN=<redacted>/
    )
    expect(JSON.stringify(failed.error?.data)).toContain("<redacted>")

    // A backend that died at start-up: its stderr (with the secrets) explains why, masked.
    const dead = await client.callTool("sy__echo", { text: "x" })
    expect(dead.error?.code).toBe(-32004)
    expect(dead.error?.message).toMatch(/^Backend 'sy' failed: .*fail at startup \[SECRET_TOKEN=<redacted>/s)

    // Orchestrated: the model picks the failing tool.
    fake.setReply({ tool: "sx__fail", arguments: {} })
    const orchestrated = await client.request("agentify/orchestrateTask", { query: "make it fail" })
    expect(orchestrated.error?.code).toBe(-32004)
    expect(orchestrated.error?.data?.query).toBe("make it fail")
    const viaTool = await client.callTool("agentify_orchestrate", { query: "make it fail" })
    expect(viaTool.result?.isError).toBe(true)
    expect(viaTool.result?.content?.[0]?.text).toMatch(/^Error -32004: .*<redacted>/)

    // The LLM endpoint rejects the key, quoting it; then fails quoting every secret.
    fake.setReply({ status: 401, message: `Incorrect API key provided: ${KEY}. Also ${TOKEN}` })
    const denied = await client.request("agentify/orchestrateTask", { query: "anything" })
    expect(denied.error?.code).toBe(-32003)
    fake.setReply({
      status: 500,
      message: `upstream said ${KEY} ${TOKEN} ${QUOTED} ${ARG} ${INLINE}`,
      headers: { "retry-after-ms": "0" }
    })
    const broken = await client.request("agentify/orchestrateTask", { query: "anything" }, undefined, 30_000)
    expect(broken.error?.code).toBe(-32003)
    expect(broken.error?.message).toMatch(/server error \(500\): upstream said .*<redacted>/)

    // A crash mid-call, with the secrets on the backend's stderr as it dies.
    const crashed = await client.callTool("sx__crash")
    expect(crashed.error?.code).toBe(-32004)

    await closeCleanly(client, tree)

    // The fixture did print them (so the checks below are not vacuous) ...
    expect(client.stderr()).toContain("<redacted>")
    expect(client.stderr()).toMatch(/\[fixture\] (starting|tools\/call)/)
    // ... and nothing of them reached stderr or any error or data on stdout.
    expectNoSecret("stderr", client.stderr(), secrets)
    expectNoSecret("stdout errors and data", errorsAndData(client), secrets)
    expectNoSecret("stdout", client.stdout().toString("utf8"), secrets)
  }, 60_000)

  it("a key given in initializationOptions (env unset) is scrubbed the same way", async () => {
    const lsp = new Client({ args: ["--log-level", "trace"], env: cleanEnv({ OPENAI_BASE_URL: fake.baseUrl }) })
    try {
      await lsp.initialize({ OPENAI_API_KEY: INIT_KEY, logLevel: "trace", backends: [leakyBackend("sx")] })
      fake.setReply({ status: 401, message: `Incorrect API key provided: ${INIT_KEY}` })
      const denied = await lsp.request("agentify/orchestrateTask", { query: "anything" })
      expect(denied.error?.code).toBe(-32003)
      expect(denied.error?.message).toMatch(/initializationOptions\.OPENAI_API_KEY/)
      fake.setReply({ status: 500, message: `echo ${INIT_KEY}`, headers: { "retry-after-ms": "0" } })
      expect((await lsp.request("agentify/orchestrateTask", { query: "anything" }, undefined, 30_000)).error?.code).toBe(-32003)
      expect(fake.requests[fake.requests.length - 1]!.headers.authorization).toBe(`Bearer ${INIT_KEY}`)
    } finally {
      const tree = descendants(lsp.pid)
      await lsp.close()
      await untilGone(tree)
    }
    expectNoSecret("stderr", lsp.stderr(), [INIT_KEY, TOKEN, QUOTED, ARG, INLINE])
    expectNoSecret("stdout", lsp.stdout().toString("utf8"), [INIT_KEY, TOKEN, QUOTED, ARG, INLINE])
  })
})
