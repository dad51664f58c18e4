/**
 * Whoever asks is whom every road's backend calls are made for (the caller carried by the context:
 * gateway/pipeline/Caller). A gateway over HTTP with `--http-auth oauth` (oidc-provider signs dave's
 * and erin's tokens), the fixture backend, the audit log on, a local Chat Completions model, and
 * Cedar policies that let anyone ask the gateway's model or run a script, and anyone call a tool
 * with public words but only dave with any other (so the tool is listed to both, and only the
 * call's user tells them apart). Each road (a client's call, `agentify/orchestrateTask`,
 * `agentify_orchestrate`, a script, a task, `/servers/<id>/mcp`, a 2026-07-28 request) runs dave's
 * call and refuses erin's, and every audit line names the user whose call it was. A second gateway
 * with `routing: "backend"` (server-everything) shows the model's reads and prompts judged as theirs.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../../bench/httpClient.js"
import { startAuthServer, type AuthServer } from "../../support/authServer.js"
import { type FakeOpenAI, startFakeOpenAI } from "../../support/fakeOpenAI.js"
import { call, type HttpGateway, openSession, postStateless, startHttpGateway } from "../../support/httpClient.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { until } from "../../support/process.js"
import { ROOT, tempDir } from "../../support/stdioClient.js"

const POLICIES = `
@id("anyone-asks") permit (principal, action in [Action::"orchestrate", Action::"run_code"], resource);
@id("dave-or-public") permit (principal, action == Action::"call", resource)
when { principal == User::"dave" || (context.arguments has text && context.arguments.text like "public*") };
`

let auth: AuthServer
let model: FakeOpenAI
let gateway: HttpGateway
let resource: string
/** A second gateway, whose model picks a backend and any request of an allow-list (`routing: "backend"`). */
let byBackend: HttpGateway
let byBackendResource: string
let auditFile: string
/** The second gateway's audit log. */
let byBackendAudit: string
const now = () => Math.floor(Date.now() / 1000)

const tokenOf = (sub: string, audience = resource) =>
  auth.sign({ iss: auth.issuer, aud: audience, sub, scope: "mcp:tools", iat: now(), exp: now() + 600 })

/** A session of `sub` at `path` (the aggregate's /mcp, or a backend's own endpoint): its requests. */
const sessionOf = async (sub: string, path = "/mcp", at = () => ({ gateway, resource })) => {
  const authorization = { authorization: `Bearer ${await tokenOf(sub, at().resource)}` }
  const url = `${at().gateway.base}${path}`
  const { sessionId } = await openSession(url, {}, authorization)
  let id = 1
  return async (method: string, params?: unknown) => (await call(url, sessionId, id++, method, params, authorization)).messages[0]
}

/** The audit log's tool-call lines for an echo of `text`. */
const linesFor = (text: string) =>
  readFileSync(auditFile, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line))
    .filter((line) => line.tool?.own === "echo" && line.arguments?.text === text)

beforeAll(async () => {
  const [port, otherPort] = [await freePort(), await freePort()]
  resource = `http://127.0.0.1:${port}/mcp`
  byBackendResource = `http://127.0.0.1:${otherPort}/mcp`
  auth = await startAuthServer({ resources: [resource, byBackendResource], scopes: ["mcp:tools"] })
  model = await startFakeOpenAI({ text: "Done." })
  const dir = tempDir()
  const policyFile = join(dir, "team.cedar")
  auditFile = join(dir, "audit.jsonl")
  byBackendAudit = join(dir, "by-backend-audit.jsonl")
  writeFileSync(policyFile, POLICIES)
  gateway = await startHttpGateway({
    address: `127.0.0.1:${port}`,
    args: ["--http-auth", "oauth"],
    env: { OPENAI_API_KEY: "sk-caller-test-123456", OPENAI_BASE_URL: model.baseUrl },
    config: {
      backends: [fixtureBackend("fx")],
      httpAuth: { issuer: auth.issuer, audience: resource, scopes: ["mcp:tools"] },
      policies: policyFile,
      audit: { file: auditFile, arguments: "full" },
      confirmTools: "never"
    }
  })
  const readsFile = join(dir, "reads.cedar")
  writeFileSync(
    readsFile,
    `@id("anyone-asks") permit (principal, action == Action::"orchestrate", resource);
@id("dave-reads") permit (principal == User::"dave", action in [Action::"read", Action::"get"], resource);`
  )
  const everything = join(ROOT, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
  byBackend = await startHttpGateway({
    address: `127.0.0.1:${otherPort}`,
    args: ["--http-auth", "oauth"],
    env: { OPENAI_API_KEY: "sk-caller-test-123456", OPENAI_BASE_URL: model.baseUrl },
    config: {
      backends: [{ id: "everything", command: process.execPath, args: [everything, "stdio"] }],
      routing: "backend",
      confirmTools: "never",
      httpAuth: { issuer: auth.issuer, audience: byBackendResource, scopes: ["mcp:tools"] },
      policies: readsFile,
      audit: { file: byBackendAudit, arguments: "full" },
      // The model's requests count against their asker's limits like any call.
      limits: { subject: { callsPerMinute: 2 } }
    }
  })
}, 60_000)

afterAll(async () => {
  await byBackend?.close()
  await gateway?.close()
  await auth?.close()
  await model?.close()
})

/** `road` run by dave and by erin with an echo of a text of their own; each one's audit lines. */
const bothRun = async (road: (sub: string, text: string) => Promise<unknown>) => {
  const texts = { dave: `dave ${Math.random()}`, erin: `erin ${Math.random()}` }
  const replies = { dave: JSON.stringify(await road("dave", texts.dave)), erin: JSON.stringify(await road("erin", texts.erin)) }
  const lines = {
    dave: await until("dave's audit line", () => (linesFor(texts.dave).length > 0 ? linesFor(texts.dave) : undefined)),
    erin: await until("erin's audit line", () => (linesFor(texts.erin).length > 0 ? linesFor(texts.erin) : undefined))
  }
  return { texts, replies, lines }
}

/** Dave's echo ran as his (the policy let him); erin's was refused as hers. */
const expectEachAsThemselves = (
  outcome: Awaited<ReturnType<typeof bothRun>>,
  via: string,
  expected: { readonly daveSees?: boolean } = {}
) => {
  expect(outcome.lines.dave.map((l: any) => [l.via, l.subject, l.outcome])).toEqual([[via, "dave", "ok"]])
  expect(outcome.lines.erin.map((l: any) => [l.via, l.subject, l.refusedBy])).toEqual([[via, "erin", "decide"]])
  const echoed = (text: string) => JSON.stringify(JSON.stringify({ text })).slice(1, -1)
  if (expected.daveSees !== false) expect(outcome.replies.dave).toContain(echoed(outcome.texts.dave))
  expect(outcome.replies.erin).not.toContain(echoed(outcome.texts.erin))
}

describe("the caller reaches the policies and the audit log on every road", () => {
  it("a client's own tools/call", async () => {
    const outcome = await bothRun(async (sub, text) =>
      (await sessionOf(sub))("tools/call", { name: "fx__echo", arguments: { text } })
    )
    expectEachAsThemselves(outcome, "client")
  }, 30_000)

  it("agentify/orchestrateTask and the agentify_orchestrate tool: the model's steps are the asker's", async () => {
    const byMethod = await bothRun(async (sub, text) => {
      model.setSteps([{ tool: "fx__echo", arguments: { text } }, { text: "Done." }])
      return (await sessionOf(sub))("agentify/orchestrateTask", { query: `echo ${text}`, maxSteps: 2 })
    })
    expectEachAsThemselves(byMethod, "orchestration")
    const byTool = await bothRun(async (sub, text) => {
      model.setSteps([{ tool: "fx__echo", arguments: { text } }, { text: "Done." }])
      return (await sessionOf(sub))("tools/call", {
        name: "agentify_orchestrate",
        arguments: { query: `echo ${text}`, maxSteps: 2 }
      })
    })
    expectEachAsThemselves(byTool, "orchestration")
  }, 60_000)

  it("agentify_run_code: a script's calls are its user's", async () => {
    const outcome = await bothRun(async (sub, text) =>
      (await sessionOf(sub))("tools/call", {
        name: "agentify_run_code",
        arguments: { code: `return await tools.fx.echo({ text: ${JSON.stringify(text)} })` }
      })
    )
    expectEachAsThemselves(outcome, "script")
  }, 30_000)

  it("a task: an orchestration run as a task, after its request was answered, is still its user's", async () => {
    const outcome = await bothRun(async (sub, text) => {
      model.setSteps([{ tool: "fx__echo", arguments: { text } }, { text: "Done." }])
      const request = await sessionOf(sub)
      const created = await request("tools/call", {
        name: "agentify_orchestrate",
        arguments: { query: `echo ${text}`, maxSteps: 2 },
        task: { ttl: 60_000 }
      })
      const taskId = created.result?.task?.taskId
      expect(typeof taskId, JSON.stringify(created)).toBe("string")
      return request("tasks/result", { taskId })
    })
    expectEachAsThemselves(outcome, "orchestration")
  }, 60_000)

  it("a backend's own endpoint, /servers/<id>/mcp", async () => {
    const outcome = await bothRun(async (sub, text) =>
      (await sessionOf(sub, "/servers/fx/mcp"))("tools/call", { name: "echo", arguments: { text } })
    )
    expectEachAsThemselves(outcome, "backend-endpoint")
  }, 30_000)

  it("routing \"backend\": the model's reads and prompts are its asker's", async () => {
    const at = () => ({ gateway: byBackend, resource: byBackendResource })
    const asked = async (sub: string, mcp_method: string, mcp_params: Record<string, unknown>) => {
      model.setSteps([{ tool: "everything", arguments: { mcp_method, mcp_params } }, { text: "Done." }])
      const request = await sessionOf(sub, "/mcp", at)
      return JSON.stringify(await request("agentify/orchestrateTask", { query: `${mcp_method} please`, maxSteps: 2 }))
    }
    const read = { uri: "demo://resource/static/document/features.md" }
    expect(await asked("dave", "resources/read", read)).toContain("text/markdown")
    const erinRead = await asked("erin", "resources/read", read)
    expect(erinRead).toContain("refused by policies")
    expect(erinRead).not.toContain("text/markdown")
    expect(await asked("dave", "prompts/get", { name: "simple-prompt" })).toContain("This is a simple prompt")
    const erinPrompt = await asked("erin", "prompts/get", { name: "simple-prompt" })
    expect(erinPrompt).toContain("refused by policies")
    expect(erinPrompt).not.toContain("This is a simple prompt")
    // Each request took the pipeline: recorded as its asker's, and counted against their limits.
    const lines = () =>
      readFileSync(byBackendAudit, "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line))
        .filter((line) => line.backend === "everything")
        .map((line) => [line.subject, line.tool?.own, line.outcome, line.refusedBy ?? null])
    const expected = [
      ["dave", read.uri, "ok", null],
      ["erin", read.uri, -32602, "decide"],
      ["dave", "simple-prompt", "ok", null],
      ["erin", "simple-prompt", -32602, "decide"]
    ]
    await until("the model's requests in the audit log", () => (lines().length >= expected.length ? true : undefined))
    expect(lines()).toEqual(expected)
    // Dave's two requests used his two calls a minute (erin's refused ones counted none).
    expect(await asked("dave", "resources/read", read)).toContain("limits.subject")
    expect(await asked("erin", "resources/read", read)).toContain("refused by policies")
  }, 60_000)

  it("a 2026-07-28 request, with no session", async () => {
    const outcome = await bothRun(
      async (sub, text) =>
        (
          await postStateless(
            `${gateway.base}/mcp`,
            "tools/call",
            { name: "fx__echo", arguments: { text } },
            {},
            { authorization: `Bearer ${await tokenOf(sub)}` }
          )
        ).body
    )
    expectEachAsThemselves(outcome, "client")
  }, 30_000)
})
