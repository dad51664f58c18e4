/**
 * Tasks of the session era (SEP-1686) through the aggregate at /mcp: the SDK's experimental tasks
 * client against a backend on the SDK's experimental tasks server (test/fixtures/tasks-server.mjs),
 * beside a backend without tasks. Two sessions of one shared gateway: a task is its creator's.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  TaskStatusNotificationSchema
} from "@modelcontextprotocol/sdk/types.js"
import { existsSync, readFileSync } from "node:fs"
import { serverFilesystemEntry } from "../../src/config/Config.js"
import { type FakeOpenAI, startFakeOpenAI } from "../support/fakeOpenAI.js"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, tempDir } from "../support/stdioClient.js"
import { fixtureBackend } from "../support/mcpFixture.js"
import { type HttpGateway, postStateless, startHttpGateway } from "../support/httpClient.js"
import { until } from "../support/process.js"

const TASKS = join(ROOT, "test", "fixtures", "tasks-server.mjs")
/** What the gateway gives clients: the backend's id, then 128 random bits. */
const GATEWAY_TASK_ID = /^jobs\.[A-Za-z0-9_-]{22}$/

describe("session-era tasks through /mcp", () => {
  let gateway: HttpGateway
  let a: Client
  let b: Client
  const statuses: Record<string, Array<{ taskId: string; status: string }>> = { a: [], b: [] }
  const connect = async (name: "a" | "b") => {
    const client = new Client({ name, version: "1.0.0" })
    client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
      statuses[name]!.push({ taskId: n.params.taskId, status: n.params.status })
    })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp`)))
    return client
  }
  const slow = (client: Client, ms: number, text: string) =>
    client.request(
      { method: "tools/call", params: { name: "jobs__slow", arguments: { ms, text }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema
    )

  beforeAll(async () => {
    gateway = await startHttpGateway({
      config: { backends: [{ id: "jobs", command: process.execPath, args: [TASKS] }, fixtureBackend("fx")] }
    })
    a = await connect("a")
    b = await connect("b")
    await until("the tasks backend listed", async () => (await a.listTools()).tools.some((t) => t.name === "jobs__slow"))
  })
  afterAll(async () => {
    await a?.close()
    await b?.close()
    await gateway?.close()
  })

  it("declares that it routes tasks, and shows each tool's task support where its backend has tasks", async () => {
    expect(a.getServerCapabilities()?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } })
    const { tools } = await a.listTools()
    expect(tools.find((t) => t.name === "jobs__slow")?.execution).toEqual({ taskSupport: "optional" })
  })

  it("gives the task an id of its own, routes get, list and result to the backend, and swaps the ids back", async () => {
    const created = await slow(a, 100, "done")
    const id = created.task.taskId
    expect(id).toMatch(GATEWAY_TASK_ID)
    expect(created.task.status).toBe("working")

    const got = await a.experimental.tasks.getTask(id)
    expect(got.taskId).toBe(id)
    const listed = await a.experimental.tasks.listTasks()
    expect(listed.tasks.map((t) => t.taskId)).toContain(id)

    const result = await a.experimental.tasks.getTaskResult(id, CallToolResultSchema)
    expect(result.content).toEqual([{ type: "text", text: "done" }])
    expect(result._meta?.["io.modelcontextprotocol/related-task"]).toEqual({ taskId: id })
    expect((await a.experimental.tasks.getTask(id)).status).toBe("completed")
    // The backend's status notification reaches the task's session only, by the id it knows.
    await until("the status notification", () => statuses.a!.some((s) => s.taskId === id))
    expect(statuses.a).toContainEqual({ taskId: id, status: "completed" })
    expect(statuses.b).toEqual([])
  })

  it("cancels a task at its backend", async () => {
    const created = await slow(a, 60_000, "never")
    const cancelled = await a.experimental.tasks.cancelTask(created.task.taskId)
    expect(cancelled).toMatchObject({ taskId: created.task.taskId, status: "cancelled" })
    expect((await a.experimental.tasks.getTask(created.task.taskId)).status).toBe("cancelled")
  })

  it("keeps a task to its session: another one cannot get, cancel or list it", async () => {
    const created = await slow(a, 60_000, "mine")
    const id = created.task.taskId
    await expect(b.experimental.tasks.getTask(id)).rejects.toMatchObject({ code: -32602 })
    await expect(b.experimental.tasks.cancelTask(id)).rejects.toMatchObject({ code: -32602 })
    await expect(b.experimental.tasks.getTaskResult(id, CallToolResultSchema)).rejects.toMatchObject({ code: -32602 })
    expect((await b.experimental.tasks.listTasks()).tasks).toEqual([])
    // Nor a guess: the backend's own id, or the gateway's prefix with other bits.
    await expect(a.experimental.tasks.getTask(`jobs.${"A".repeat(22)}`)).rejects.toMatchObject({ code: -32602 })
    expect((await a.experimental.tasks.getTask(id)).status).toBe("working")
    await a.experimental.tasks.cancelTask(id)
  })

  it("/servers/<id>/mcp keeps tasks to their session too: ids of the gateway's, nothing of /mcp's", async () => {
    const mine = await slow(a, 100, "from the aggregate")
    const own = new Client({ name: "own", version: "1.0.0" })
    await own.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/servers/jobs/mcp`)))
    const other = new Client({ name: "other", version: "1.0.0" })
    await other.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/servers/jobs/mcp`)))
    try {
      // The aggregate's task is neither listed nor readable there, by the gateway's id or the backend's.
      expect((await own.experimental.tasks.listTasks()).tasks).toEqual([])
      await expect(own.experimental.tasks.getTaskResult(mine.task.taskId, CallToolResultSchema)).rejects.toMatchObject({
        code: -32602
      })
      // A task made at the backend's endpoint: an id of the gateway's, routed there and back, its own session's alone.
      const created = await own.request(
        { method: "tools/call", params: { name: "slow", arguments: { ms: 100, text: "endpoint" }, task: { ttl: 60_000 } } },
        CreateTaskResultSchema
      )
      expect(created.task.taskId).toMatch(GATEWAY_TASK_ID)
      expect((await own.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([created.task.taskId])
      const result = await own.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema)
      expect(result.content).toEqual([{ type: "text", text: "endpoint" }])
      expect((await other.experimental.tasks.listTasks()).tasks).toEqual([])
      await expect(other.experimental.tasks.getTask(created.task.taskId)).rejects.toMatchObject({ code: -32602 })
      await expect(a.experimental.tasks.getTask(created.task.taskId)).rejects.toMatchObject({ code: -32602 })
    } finally {
      await own.close()
      await other.close()
    }
    await a.experimental.tasks.getTaskResult(mine.task.taskId, CallToolResultSchema)
  })

  it("a session's tasks are cancelled at their backend when it ends: nobody could read them again", async () => {
    const c = new Client({ name: "c", version: "1.0.0" })
    const transport = new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp`))
    await c.connect(transport)
    const created = await slow(c, 60_000, "orphan")
    const cancelledAtBackend = async () =>
      JSON.parse(((await a.callTool({ name: "jobs__cancelled", arguments: {} })) as any).content[0].text) as Array<string>
    expect(await cancelledAtBackend()).not.toContain("orphan")
    // The session ends (DELETE), as a client that is done says so.
    await transport.terminateSession()
    await c.close()
    // The backend saw the cancel: the fixture's `cancelled` names the task's text.
    await until("the backend cancelled the orphan", async () => (await cancelledAtBackend()).includes("orphan"))
    expect(created.task.taskId).toMatch(GATEWAY_TASK_ID)
  })

  it("runs a call synchronously on a backend without tasks: the task param is not sent there", async () => {
    const result = await a.request(
      { method: "tools/call", params: { name: "fx__meta", arguments: {}, task: { ttl: 1_000 } } },
      CallToolResultSchema
    )
    expect(result.structuredContent?.params).toEqual(["name", "arguments"])
  })

  it("shows a 2026-07-28 client no SEP-1686 task support, and runs its call synchronously", async () => {
    const post = async (method: string, params: Record<string, unknown>) =>
      (await postStateless(`${gateway.base}/mcp`, method, params)).body.result
    const { tools } = await post("tools/list", {})
    expect(tools.find((t: any) => t.name === "jobs__slow")).not.toHaveProperty("execution")
    const result = await post("tools/call", { name: "jobs__slow", arguments: { ms: 1, text: "now" }, task: { ttl: 1_000 } })
    expect(result.content).toEqual([{ type: "text", text: "now" }])
  })
})

describe("2026-07-28 tasks (the io.modelcontextprotocol/tasks extension) through /mcp", () => {
  const STATELESS_TASKS = join(ROOT, "test", "fixtures", "stateless-tasks-server.mjs")
  const EXT = "io.modelcontextprotocol/tasks"
  let gateway: HttpGateway
  beforeAll(async () => {
    gateway = await startHttpGateway({
      config: { backends: [{ id: "tasks", command: process.execPath, args: [STATELESS_TASKS] }] }
    })
  })
  afterAll(async () => {
    await gateway?.close()
  })
  const post = (method: string, params: Record<string, unknown> = {}, extensions: Record<string, unknown> = { [EXT]: {} }) =>
    postStateless(`${gateway.base}/mcp`, method, params, { elicitation: {}, extensions })
  const call = (name: string, args: Record<string, unknown> = {}, extensions?: Record<string, unknown>) =>
    post("tools/call", { name: `tasks__${name}`, arguments: args }, extensions)

  it("advertises the extension, and gives the backend's task an id of its own that routes get, update and cancel", async () => {
    await until("the backend's tools", async () => (await post("tools/list")).body.result?.tools.length > 0)
    expect((await post("server/discover")).body.result.capabilities.extensions).toEqual({ [EXT]: {} })

    const created = (await call("confirm_delete")).body.result
    expect(created).toMatchObject({ resultType: "task", status: "input_required" })
    expect(created.taskId).toMatch(/^tasks\.[A-Za-z0-9_-]{22}$/)
    const asked = (await post("tasks/get", { taskId: created.taskId })).body.result
    expect(asked).toMatchObject({ taskId: created.taskId, status: "input_required" })
    expect(Object.keys(asked.inputRequests)).toEqual(["confirm"])
    expect(
      (await post("tasks/update", { taskId: created.taskId, inputResponses: { confirm: { action: "accept" } } })).body.result
    ).toEqual({ resultType: "complete" })
    const done = (await post("tasks/get", { taskId: created.taskId })).body.result
    expect(done).toMatchObject({
      taskId: created.taskId,
      status: "completed",
      result: { content: [{ type: "text", text: "deleted" }] }
    })

    const slow = (await call("slow_compute", { seconds: 30, label: "x" })).body.result
    expect((await post("tasks/cancel", { taskId: slow.taskId })).body.result).toEqual({ resultType: "complete" })
    expect((await post("tasks/get", { taskId: slow.taskId })).body.result.status).toBe("cancelled")
    // The backend's own id is nobody's at the gateway.
    expect((await post("tasks/get", { taskId: `tasks.${"B".repeat(22)}` })).body.error.code).toBe(-32602)
    // SEP-1686's methods are not the extension's.
    expect((await post("tasks/result", { taskId: slow.taskId })).body.error.code).toBe(-32601)
  })

  it("answers hostile task ids with -32602 and stays up: Object's own names, a long id, not a string", async () => {
    for (const taskId of ["__proto__", "constructor", "toString", "agentify.__proto__", `tasks.${"x".repeat(8_000)}`]) {
      const reply = await post("tasks/get", { taskId })
      expect([reply.status, reply.body.error?.code]).toEqual([200, -32602])
    }
    const notString = await post("tasks/get", { taskId: { toString: "tasks.x" } })
    expect(notString.body.error.code).toBe(-32602)
    expect((await post("server/discover")).status).toBe(200)
  })

  it("without the extension: the task methods are -32021, calls run synchronously, and a required task's -32021 passes through", async () => {
    const sync = (await call("slow_compute", { seconds: 0.01, label: "now" }, {})).body.result
    expect(sync).toMatchObject({ resultType: "complete", content: [{ type: "text", text: "computed now" }] })
    const created = (await call("slow_compute", { seconds: 30, label: "x" })).body.result
    const refused = await post("tasks/get", { taskId: created.taskId }, {})
    expect(refused.body.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { [EXT]: {} } } } })
    const required = await call("failing_job", {}, {})
    expect(required.status).toBe(400)
    expect(required.body.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { [EXT]: {} } } } })
  })
})

describe("an orchestration as a session-era task (tools/call with task)", () => {
  const root = tempDir("agentify-task-orchestration-")
  let fake: FakeOpenAI
  let gateway: HttpGateway
  let client: Client
  const confirmations: Array<{ message: string; related: unknown }> = []
  let answer: (action: "accept" | "decline") => void = () => {}
  beforeAll(async () => {
    fake = await startFakeOpenAI()
    gateway = await startHttpGateway({
      config: { mcpServers: { filesystem: { command: process.execPath, args: [serverFilesystemEntry(), root] } } },
      env: { OPENAI_API_KEY: "sk-task-orchestration-0000", OPENAI_BASE_URL: fake.baseUrl }
    })
    client = new Client({ name: "tasks-host", version: "1.0.0" }, { capabilities: { elicitation: {} } })
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      confirmations.push({
        message: request.params.message,
        related: request.params._meta?.["io.modelcontextprotocol/related-task"]
      })
      return new Promise((resolve) => {
        answer = (action) => resolve({ action })
      })
    })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp`)))
    await until("the filesystem backend", async () =>
      (await client.listTools()).tools.some((t) => t.name === "filesystem__write_file")
    )
  })
  afterAll(async () => {
    await client?.close()
    await gateway?.close()
    await fake?.close()
  })
  const orchestrate = (query: string) =>
    client.request(
      { method: "tools/call", params: { name: "agentify_orchestrate", arguments: { query }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema
    )

  it("lists the gateway's own tools as able to run as tasks", async () => {
    const own = (await client.listTools()).tools.filter((t) => t.name.startsWith("agentify_"))
    expect(own.map((t) => t.execution)).toEqual([{ taskSupport: "optional" }, { taskSupport: "optional" }])
  })

  it("runs as a task: its confirmation reaches the client tied to the task, and tasks/result gives the result", async () => {
    const target = join(root, "from-a-task.txt")
    // Only this test's confirmations (the block's tests run in any order).
    confirmations.length = 0
    fake.setSteps([{ tool: "filesystem__write_file", arguments: { path: target, content: "task" } }, { text: "Written." }])
    const created = await orchestrate("write it")
    const id = created.task.taskId
    expect(id).toMatch(/^agentify\.[A-Za-z0-9_-]{22}$/)
    await until("the confirmation", () => confirmations.length > 0)
    expect(confirmations[0]!.message).toContain("filesystem__write_file")
    expect(confirmations[0]!.related).toEqual({ taskId: id })
    expect((await client.experimental.tasks.getTask(id)).status).toBe("input_required")
    expect((await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toContain(id)
    answer("accept")
    const result = await client.experimental.tasks.getTaskResult(id, CallToolResultSchema)
    expect(result._meta?.["agentify/answer"]).toBe("Written.")
    expect(result._meta?.["io.modelcontextprotocol/related-task"]).toEqual({ taskId: id })
    expect(readFileSync(target, "utf8")).toBe("task")
    expect((await client.experimental.tasks.getTask(id)).status).toBe("completed")
  })

  it("keeps the gateway's own task to its session: another one cannot get, list, cancel or read its result", async () => {
    const target = join(root, "mine.txt")
    confirmations.length = 0
    fake.setSteps([{ tool: "filesystem__write_file", arguments: { path: target, content: "mine" } }, { text: "Written." }])
    const created = await orchestrate("write mine")
    const id = created.task.taskId
    await until("the confirmation", () => confirmations.length > 0)
    const other = new Client({ name: "other", version: "1.0.0" })
    await other.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp`)))
    try {
      await expect(other.experimental.tasks.getTask(id)).rejects.toMatchObject({ code: -32602 })
      await expect(other.experimental.tasks.getTaskResult(id, CallToolResultSchema)).rejects.toMatchObject({ code: -32602 })
      await expect(other.experimental.tasks.cancelTask(id)).rejects.toMatchObject({ code: -32602 })
      expect((await other.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).not.toContain(id)
      // The backend's own endpoint knows nothing of it either.
      const own = new Client({ name: "own", version: "1.0.0" })
      await own.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/servers/filesystem/mcp`)))
      await expect(own.experimental.tasks.getTask(id)).rejects.toBeDefined()
      await own.close()
    } finally {
      await other.close()
    }
    // Still its owner's, untouched by the attempts.
    expect((await client.experimental.tasks.getTask(id)).status).toBe("input_required")
    answer("accept")
    const result = await client.experimental.tasks.getTaskResult(id, CallToolResultSchema)
    expect(result._meta?.["agentify/answer"]).toBe("Written.")
  })

  it("cancels a run waiting for its confirmation: nothing is written", async () => {
    const target = join(root, "cancelled.txt")
    confirmations.length = 0
    fake.setSteps([{ tool: "filesystem__write_file", arguments: { path: target, content: "no" } }, { text: "Written." }])
    const created = await orchestrate("write that")
    await until("the confirmation", () => confirmations.length > 0)
    const cancelled = await client.experimental.tasks.cancelTask(created.task.taskId)
    expect(cancelled.status).toBe("cancelled")
    answer("accept")
    expect(existsSync(target)).toBe(false)
    await expect(client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema)).rejects.toThrow(/cancelled/)
  })
})
