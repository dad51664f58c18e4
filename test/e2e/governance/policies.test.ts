/**
 * `policies` in Cedar as a team uses them: a gateway over HTTP with `--http-auth oauth` against a
 * real authorization server (oidc-provider; its key signs alice's and bob's tokens, alice in the
 * group "ops"), the built CLI with the project's fixture backend. Allow, deny and visibility by
 * user, group, tool annotations, arguments and how a call was made (a client's own, a script's),
 * the audit line of a refusal, and a changed file reloaded without a restart.
 */
import { execFile } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startAuthServer, type AuthServer } from "../../support/authServer.js"
import { type FakeOpenAI, startFakeOpenAI } from "../../support/fakeOpenAI.js"
import { call, type HttpGateway, initializeParams, postStateless, send, startHttpGateway } from "../../support/httpClient.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { freePort } from "../../bench/httpClient.js"
import { until } from "../../support/process.js"
import { BIN, cleanEnv, ROOT, startGateway, tempDir } from "../../support/stdioClient.js"

const POLICIES = `
// Anyone may call a read-only tool; the group "ops" may do anything.
@id("everyone-reads")
permit (principal, action == Action::"call", resource) when { resource.readOnly };

@id("ops-do-anything")
permit (principal in Group::"ops", action, resource);

// Nobody echoes a secret, whatever else permits it.
@id("no-secrets-echoed")
forbid (principal, action == Action::"call", resource == Tool::"fx__echo")
when { context.arguments has text && context.arguments.text like "*secret*" };

// Analysts may ask the gateway's model (and so read, as anyone may).
@id("analysts-orchestrate")
permit (principal in Group::"analysts", action == Action::"orchestrate", resource);

// Dave, an analyst, may add tools, himself or through the gateway's model.
@id("dave-adds-tools")
permit (principal == User::"dave", action == Action::"call", resource == Tool::"fx__add_tool");

// A script never adds (a client may).
@id("scripts-never-add")
forbid (principal, action == Action::"call", resource == Tool::"fx__add") when { context.via == "script" };
`

let auth: AuthServer
let model: FakeOpenAI
let gateway: HttpGateway
let resource: string
let policyFile: string
let auditFile: string
const now = () => Math.floor(Date.now() / 1000)

/** A session of `sub` (in `groups`) at /mcp of the shared gateway, or of `at`; its requests. */
const sessionOf = async (sub: string, groups: ReadonlyArray<string>, at: Team = { gateway, resource, policyFile, auditFile }) => {
  const token = await auth.sign({
    iss: auth.issuer,
    aud: at.resource,
    sub,
    groups,
    scope: "mcp:tools",
    iat: now(),
    exp: now() + 600
  })
  const authorization = { authorization: `Bearer ${token}` }
  const url = `${at.gateway.base}/mcp`
  const opened = await send(url, {
    body: { jsonrpc: "2.0", id: 0, method: "initialize", params: initializeParams(`${sub}-client`) },
    headers: authorization
  })
  const sessionId = opened.headers.get("mcp-session-id")!
  await send(url, {
    body: { jsonrpc: "2.0", method: "notifications/initialized" },
    headers: { "mcp-session-id": sessionId, ...authorization }
  })
  let id = 1
  const request = async (method: string, params?: unknown) =>
    (await call(url, sessionId, id++, method, params, authorization)).messages[0]
  return {
    request,
    tools: async () => ((await request("tools/list")).result.tools as Array<{ name: string }>).map((t) => t.name),
    callTool: (name: string, args: unknown) => request("tools/call", { name, arguments: args })
  }
}

/** A gateway with its policy file and audit log, in front of a fixture of its own. */
interface Team {
  readonly gateway: HttpGateway
  readonly resource: string
  readonly policyFile: string
  readonly auditFile: string
}

/** A gateway of the team's policies at `port` (the audience of its users' tokens). */
const startTeam = async (port: number): Promise<Team> => {
  const resource = `http://127.0.0.1:${port}/mcp`
  const dir = tempDir()
  const policyFile = join(dir, "team.cedar")
  const auditFile = join(dir, "audit.jsonl")
  writeFileSync(policyFile, POLICIES)
  const gateway = await startHttpGateway({
    address: `127.0.0.1:${port}`,
    args: ["--http-auth", "oauth"],
    env: { OPENAI_API_KEY: "sk-policies-test-123456", OPENAI_BASE_URL: model.baseUrl },
    config: {
      backends: [fixtureBackend("fx")],
      httpAuth: { issuer: auth.issuer, audience: resource, scopes: ["mcp:tools"] },
      policies: policyFile,
      audit: { file: auditFile }
    }
  })
  const team = { gateway, resource, policyFile, auditFile }
  // Its backend may still be starting on a busy machine (initialize waits startupTimeoutMs at most):
  // a list read before it is ready would be missing its tools.
  const ops = await sessionOf("ops-probe", ["ops"], team)
  await until("the team's backend listed", async () => (await ops.tools()).includes("fx__echo"), 60_000, 100)
  return team
}

beforeAll(async () => {
  const port = await freePort()
  auth = await startAuthServer({ resources: [`http://127.0.0.1:${port}/mcp`], scopes: ["mcp:tools"] })
  model = await startFakeOpenAI({ text: "Nothing to do." })
  ;({ gateway, resource, policyFile, auditFile } = await startTeam(port))
}, 90_000)
afterAll(async () => {
  await gateway?.close()
  await auth?.close()
  await model?.close()
})

describe("policies (Cedar)", () => {
  it("lists each user what they may ever call: bob the read-only tools, alice (ops) everything", async () => {
    const alice = await sessionOf("alice", ["ops"])
    const bob = await sessionOf("bob", [])
    const aliceTools = await alice.tools()
    const bobTools = await bob.tools()
    expect(aliceTools).toEqual(expect.arrayContaining(["agentify_orchestrate", "agentify_run_code", "fx__echo", "fx__add_tool"]))
    // fx__add_tool changes the server's state (not read-only): nothing permits it to bob.
    expect(bobTools).toEqual(expect.arrayContaining(["fx__echo", "fx__add"]))
    for (const hidden of ["agentify_orchestrate", "agentify_run_code", "fx__add_tool", "fx__forget_session"]) {
      expect(bobTools).not.toContain(hidden)
    }
    // fx__echo is listed to both: whether it runs depends on its arguments.
    expect(bobTools.length).toBeLessThan(aliceTools.length)
  })

  it("refuses a call no policy permits, and one a forbid matches by its arguments, naming the policy", async () => {
    const alice = await sessionOf("alice", ["ops"])
    const bob = await sessionOf("bob", [])
    const denied = await bob.callTool("fx__add_tool", { name: "x" })
    expect(denied.error).toMatchObject({ code: -32602, data: { stage: "decide", rule: "policies", policies: [] } })
    expect(denied.error.message).toBe('fx__add_tool refused by policies: no policy permits call on Tool::"fx__add_tool"')
    expect((await bob.callTool("fx__echo", { text: "hello" })).result.content[0].text).toContain("hello")
    const secret = await alice.callTool("fx__echo", { text: "the secret plan" })
    expect(secret.error.message).toBe('fx__echo refused by policies: forbidden by policy "no-secrets-echoed"')
    expect(secret.error.data.policies).toEqual(["no-secrets-echoed"])
    expect((await alice.callTool("fx__echo", { text: "the public plan" })).result.isError).not.toBe(true)
    // The gateway's own tools: an action of their own, refused before anything runs.
    const script = await bob.callTool("agentify_run_code", { code: "return 1" })
    expect(script.error.message).toMatch(/^run_code of agentify_run_code refused by policies: no policy permits run_code/)
    expect(script.error.data).toEqual({ rule: "policies", policies: [] })
  })

  it("judges a script's calls as the script's (context.via): alice's script may not add, alice may", async () => {
    const alice = await sessionOf("alice", ["ops"])
    expect((await alice.callTool("fx__add", { a: 2, b: 3 })).result.structuredContent).toEqual({ sum: 5 })
    const run = await alice.callTool("agentify_run_code", { code: "return await tools.fx.add({ a: 2, b: 3 })" })
    expect(run.result.isError).toBe(true)
    expect(JSON.stringify(run.result.content)).toContain('forbidden by policy \\"scripts-never-add\\"')
  })

  it("offers the gateway's model only the tools its user may call", async () => {
    // Its own model script: an earlier test's steps may still be set.
    model.setReply({ text: "Nothing to do." })
    const carol = await sessionOf("carol", ["analysts"])
    const listed = await carol.tools()
    expect(listed).toContain("agentify_orchestrate")
    expect(listed).not.toContain("agentify_run_code")
    const answer = await carol.callTool("agentify_orchestrate", { query: "add a tool named x" })
    expect(answer.result.content[0].text).toContain("Nothing to do.")
    const offered = model.requests.at(-1)!.body.tools.map((t: { function: { name: string } }) => t.function.name) as Array<string>
    expect(offered).toContain("fx__echo")
    expect(offered).not.toContain("fx__add_tool")
    expect(offered).not.toContain("fx__forget_session")
  })

  it("judges an orchestration's steps as its user's, asked by the method as by the tool (and audits them so)", async () => {
    const dave = await sessionOf("dave", ["analysts"])
    const stepsOf = () =>
      (existsSync(auditFile) ? readFileSync(auditFile, "utf8").trim().split("\n") : [])
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l))
        .filter((l) => l.type === "call" && l.tool?.exposed === "fx__add_tool" && l.via === "orchestration")
    // Only this test's steps: the other tests (in any order) orchestrate as dave too.
    const before = stepsOf().length
    for (const [n, ask] of [
      [1, () => dave.request("agentify/orchestrateTask", { query: "add a tool named dave_one", maxSteps: 1 })],
      [2, () => dave.callTool("agentify_orchestrate", { query: "add a tool named dave_two", maxSteps: 1 })]
    ] as const) {
      model.setSteps([{ tool: "fx__add_tool", arguments: { name: `dave_${n === 1 ? "one" : "two"}` } }])
      const reply = await ask()
      // As User::"local" (the road that dropped its caller) no policy permits it.
      expect(JSON.stringify(reply)).not.toContain("refused by policies")
      expect(JSON.stringify(reply.result)).toContain(`dave_${n === 1 ? "one" : "two"}`)
    }
    const steps = await until("the steps' audit lines", () => {
      const mine = stepsOf().slice(before)
      return mine.length >= 2 && mine
    })
    expect(steps.map((l) => [l.subject, l.outcome])).toEqual([
      ["dave", "ok"],
      ["dave", "ok"]
    ])
    expect(steps.every((l) => l.session !== "embedded")).toBe(true)
  })

  it("runs a 2026-07-28 task (the tasks extension) as the user who asked: dave's orchestration adds a tool as dave, audited so", async () => {
    const token = await auth.sign({
      iss: auth.issuer,
      aud: resource,
      sub: "dave",
      groups: ["analysts"],
      scope: "mcp:tools",
      iat: now(),
      exp: now() + 600
    })
    const post = (method: string, params: Record<string, unknown>) =>
      postStateless(
        `${gateway.base}/mcp`,
        method,
        params,
        { extensions: { "io.modelcontextprotocol/tasks": {} } },
        { authorization: `Bearer ${token}` }
      )
    const auditLines = () =>
      (existsSync(auditFile) ? readFileSync(auditFile, "utf8") : "")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l))
    const from = auditLines().length
    // Only dave may add tools: as anyone else (the gateway's User::"local") no policy permits it.
    model.setSteps([{ tool: "fx__add_tool", arguments: { name: "dave_task" } }])
    const created = (
      await post("tools/call", { name: "agentify_orchestrate", arguments: { query: "add a tool named dave_task", maxSteps: 1 } })
    ).body.result
    expect(created?.resultType).toBe("task")
    const done = await until("dave's task done", async () => {
      const got = (await post("tasks/get", { taskId: created.taskId })).body.result
      return got?.status === "completed" || got?.status === "failed" ? got : undefined
    })
    expect(done.status).toBe("completed")
    expect(JSON.stringify(done.result)).not.toContain("refused by policies")
    expect(JSON.stringify(done.result)).toContain("dave_task")
    const step = await until("the step's audit line", () =>
      auditLines()
        .slice(from)
        .find((l) => l.type === "call" && l.tool?.exposed === "fx__add_tool" && l.via === "orchestration")
    )
    expect([step.subject, step.outcome]).toEqual(["dave", "ok"])
  })

  it("writes an audit line for a refused call naming the stage and the rule", async () => {
    const bob = await sessionOf("bob", [])
    await bob.callTool("fx__forget_session", {})
    // The file is made by its first line: this test may be the first to write one (any order).
    const line = await until("the refusal's audit line", () =>
      (existsSync(auditFile) ? readFileSync(auditFile, "utf8") : "")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l))
        .find((l) => l.tool?.exposed === "fx__forget_session" && l.subject === "bob")
    )
    expect(line).toMatchObject({ via: "client", outcome: -32602, refusedBy: "decide", heldBy: ["policies"], backend: "fx" })
  })

  it("reads the file again when it changes: bob gets the write tools without a restart", async () => {
    // A gateway and file of its own: the other tests keep the team's policies, whatever ran before.
    const own = await startTeam(await freePort())
    try {
      const bob = await sessionOf("bob", [], own)
      expect(await bob.tools()).not.toContain("fx__add_tool")
      writeFileSync(
        own.policyFile,
        `${POLICIES}\n@id("bob-too") permit (principal == User::"bob", action == Action::"call", resource);\n`
      )
      await until("bob to be listed fx__add_tool", async () => (await bob.tools()).includes("fx__add_tool"), 10_000, 100)
      expect((await bob.callTool("fx__add_tool", { name: "bobs" })).result.isError).not.toBe(true)
      // A broken edit is refused: the policies that loaded stay.
      writeFileSync(own.policyFile, "permit (principal, action, resource) when {")
      await until(
        "the refused edit to be logged",
        () => /cannot be used; the policies that loaded stay/.test(own.gateway.stderr()),
        10_000,
        50
      )
      expect((await bob.callTool("fx__add_tool", { name: "bobs2" })).result.isError).not.toBe(true)
      expect((await bob.callTool("fx__forget_session", {})).error).toBeUndefined()
    } finally {
      await own.gateway.close()
    }
  }, 90_000)
})

describe("policies over stdio and at the command line", () => {
  const dir = tempDir()
  const file = join(dir, "local.cedar")
  const config = join(dir, "gateway.json")
  writeFileSync(config, JSON.stringify({ backends: [fixtureBackend("fx")], policies: file }))
  /** The CLI run to its end, without blocking this worker meanwhile (a busy machine takes its time). */
  const cli = (args: Array<string>) =>
    new Promise<{ status: number | null; out: string; err: string }>((resolve) => {
      execFile(
        process.execPath,
        [BIN, ...args, "--config", config],
        { cwd: dir, env: cleanEnv(), timeout: 120_000 },
        (error, out, err) =>
          resolve({ status: error === null ? 0 : typeof error.code === "number" ? error.code : null, out, err })
      )
    })

  it('the stdio client is User::"local"; a file that cannot be used refuses every call, saying why', async () => {
    writeFileSync(
      file,
      '@id("local-reads") permit (principal == User::"local", action == Action::"call", resource) when { resource.readOnly };'
    )
    const client = startGateway({ args: ["--config", config] })
    try {
      await client.initialize()
      expect((await client.callTool("fx__echo", { text: "hi" })).result?.isError).not.toBe(true)
      const refused = await client.callTool("fx__add_tool", { name: "x" })
      expect(refused.error?.message).toBe('fx__add_tool refused by policies: no policy permits call on Tool::"fx__add_tool"')
    } finally {
      await client.close()
    }
    writeFileSync(file, "permit (principal, action, resource) when { nonsense };")
    const broken = startGateway({ args: ["--config", config] })
    try {
      await broken.initialize()
      const refused = await broken.callTool("fx__echo", { text: "hi" })
      expect(refused.error?.message).toMatch(
        /^fx__echo refused by policies: the policies in .*local\.cedar cannot be used: invalid variable: nonsense/
      )
      expect(broken.stderr()).toContain("every call is refused until it is fixed")
    } finally {
      await broken.close()
    }
    // Two gateways started one after the other.
  }, 90_000)

  it("lists the resources and prompts a user may read or get, and refuses the others (server-everything)", async () => {
    const dirOf = tempDir()
    const everything = join(ROOT, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
    const configFile = join(dirOf, "gateway.json")
    const cedar = join(dirOf, "reads.cedar")
    writeFileSync(
      configFile,
      JSON.stringify({
        backends: [{ id: "everything", command: process.execPath, args: [everything, "stdio"] }],
        policies: cedar
      })
    )
    writeFileSync(
      cedar,
      `@id("first-resource-only")
permit (principal, action == Action::"read", resource in Backend::"everything") when { resource.name like "*/features.md" };
@id("simple-prompt-only")
permit (principal, action == Action::"get", resource == Prompt::"everything__simple-prompt");`
    )
    const client = startGateway({ args: ["--config", configFile] })
    try {
      await client.initialize()
      // Listed once the backend is ready (it may still be starting after initialize on a busy machine).
      const resources = await until(
        "the resources listed",
        async () => {
          const listed = (await client.request("resources/list")).result.resources as Array<{ uri: string }>
          return listed.length > 0 && listed
        },
        60_000,
        100
      )
      expect(resources.map((r) => r.uri)).toEqual(["demo://resource/static/document/features.md"])
      const prompts = (await client.request("prompts/list")).result.prompts as Array<{ name: string }>
      expect(prompts.map((p) => p.name)).toEqual(["everything__simple-prompt"])
      expect((await client.request("resources/read", { uri: resources[0]!.uri })).result.contents).toBeDefined()
      const unread = await client.request("resources/read", { uri: "demo://resource/static/document/architecture.md" })
      expect(unread.error?.message).toMatch(
        /^read of resource demo:\/\/resource\/static\/document\/architecture\.md refused by policies/
      )
      const refused = await client.request("prompts/get", { name: "everything__args-prompt", arguments: { city: "Paris" } })
      expect(refused.error?.message).toBe(
        'get of prompt everything__args-prompt refused by policies: no policy permits get on Prompt::"everything__args-prompt"'
      )
    } finally {
      await client.close()
    }
  }, 90_000)

  it('routing "backend": the model reads and gets only what the policies let the client read and get', async () => {
    const dirOf = tempDir()
    const everything = join(ROOT, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
    const configFile = join(dirOf, "gateway.json")
    const cedar = join(dirOf, "reads.cedar")
    const secretUri = "demo://resource/static/document/architecture.md"
    writeFileSync(
      configFile,
      JSON.stringify({
        backends: [{ id: "everything", command: process.execPath, args: [everything, "stdio"] }],
        routing: "backend",
        confirmTools: "never",
        policies: cedar
      })
    )
    writeFileSync(
      cedar,
      `@id("all") permit (principal, action, resource);
@id("no-architecture") forbid (principal, action == Action::"read", resource) when { resource.name like "*/architecture.md" };
@id("no-simple-prompt") forbid (principal, action == Action::"get", resource == Prompt::"everything__simple-prompt");`
    )
    const client = startGateway({
      args: ["--config", configFile],
      env: { OPENAI_API_KEY: "sk-policies-test-123456", OPENAI_BASE_URL: model.baseUrl }
    })
    try {
      await client.initialize()
      // The backend ready first (it may still be starting after initialize on a busy machine).
      await until(
        "the backend's resources listed",
        async () => ((await client.request("resources/list")).result.resources as Array<unknown>).length > 0,
        60_000,
        100
      )
      const asked = async (mcp_method: string, mcp_params: Record<string, unknown>) => {
        model.setSteps([{ tool: "everything", arguments: { mcp_method, mcp_params } }, { text: "Done." }])
        return JSON.stringify(await client.request("agentify/orchestrateTask", { query: `${mcp_method} please`, maxSteps: 2 }))
      }
      // The client itself is refused both.
      expect((await client.request("resources/read", { uri: secretUri })).error?.message).toMatch(/refused by policies/)
      const read = await asked("resources/read", { uri: secretUri })
      expect(read).toContain('forbidden by policy \\"no-architecture\\"')
      expect(read).not.toContain("text/markdown")
      const prompt = await asked("prompts/get", { name: "simple-prompt" })
      expect(prompt).toContain('forbidden by policy \\"no-simple-prompt\\"')
      expect(prompt).not.toContain("This is a simple prompt")
      // What they permit still runs; a method outside the allow-list reaches no backend.
      expect(await asked("resources/read", { uri: "demo://resource/static/document/features.md" })).toContain("text/markdown")
      expect(await asked("logging/setLevel", { level: "debug" })).toContain("no usable mcp_method")
    } finally {
      await client.close()
    }
  }, 90_000)

  it("`policy schema` prints the Cedar schema of the listed tools; `check` validates the file against it", async () => {
    const schema = await cli(["policy", "schema"])
    expect(schema.status).toBe(0)
    expect(schema.out).toContain("entity User in [Group] {")
    // The fixture's arguments, typed: fx__add's a and b are numbers, fx__echo's text a string.
    expect(schema.out).toMatch(/^ {2}"a"\?: Long,$/m)
    expect(schema.out).toMatch(/^ {2}"text"\?: String,$/m)
    expect(schema.out).toContain('action "call", "orchestrate", "run_code" appliesTo')

    // An attribute no tool has is an error; a condition that can never hold is a warning.
    writeFileSync(
      file,
      '@id("typo") permit (principal, action == Action::"call", resource) when { context.arguments.txt == "x" };\n' +
        '@id("never") permit (principal, action == Action::"call", resource) when { context.arguments has txt };'
    )
    const checked = await cli(["check"])
    expect(checked.status).toBe(1)
    expect(checked.out).toContain(`policies: 2 in ${file} (typo, never)`)
    expect(checked.out).toMatch(
      /problems:[^]*- policies .*local\.cedar: policy "typo": .*attribute `arguments\.txt` .* not found/
    )
    expect(checked.out).toMatch(/warnings:[^]*- policies .*local\.cedar: policy "never" \(warning\): .*impossible/)

    writeFileSync(file, '@id("fine") permit (principal, action == Action::"call", resource) when { context.arguments has text };')
    expect((await cli(["check"])).status).toBe(0)
    // Three runs of the CLI, each starting the backend.
  }, 240_000)
})
