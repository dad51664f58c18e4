/**
 * Confirmation for a 2026-07-28 client over HTTP: with no session to send it a request, the
 * gateway's question (may this destructive tool run?) is an `input_required` result, and the
 * client's retry with its answer lets the orchestration go on; declined, nothing runs. A client of
 * the tasks extension gets a task instead, whose question waits in its inputRequests.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { serverFilesystemEntry } from "../../../src/config/Config.js"
import { type FakeOpenAI, startFakeOpenAI } from "../../support/fakeOpenAI.js"
import { type HttpGateway, parseSse, startHttpGateway } from "../../support/httpClient.js"
import { tempDir } from "../../support/stdioClient.js"

const VERSION = "2026-07-28"
const root = tempDir("agentify-confirm-http-")
let fake: FakeOpenAI
let gateway: HttpGateway
let nextId = 0

const orchestrate = (params: Record<string, unknown>) => request("agentify/orchestrateTask", params)

const request = async (method: string, params: Record<string, unknown>, extensions?: Record<string, unknown>) => {
  const id = ++nextId
  const res = await fetch(`${gateway.base}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": VERSION,
      "mcp-method": method,
      ...(typeof params.name === "string" ? { "mcp-name": params.name } : {}),
      ...(typeof params.taskId === "string" ? { "mcp-name": params.taskId } : {})
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id,
      method,
      params: {
        ...params,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": VERSION,
          "io.modelcontextprotocol/clientCapabilities": { elicitation: {}, ...(extensions === undefined ? {} : { extensions }) },
          "io.modelcontextprotocol/clientInfo": { name: "stateless-confirm", version: "1" }
        }
      }
    })
  })
  const text = await res.text()
  const messages = (res.headers.get("content-type") ?? "").includes("text/event-stream") ? parseSse(text) : [JSON.parse(text)]
  return messages.find((m) => m.id === id)
}

beforeAll(async () => {
  fake = await startFakeOpenAI()
  gateway = await startHttpGateway({
    config: { mcpServers: { filesystem: { command: process.execPath, args: [serverFilesystemEntry(), root] } } },
    env: { OPENAI_API_KEY: "sk-confirm-http-123456", OPENAI_BASE_URL: fake.baseUrl }
  })
})
afterAll(async () => {
  await gateway.close()
  await fake.close()
})

describe("confirmation for a 2026-07-28 client", () => {
  for (const action of ["accept", "decline"] as const) {
    it(`the question is an input_required result; the retry that answers ${action} ${action === "accept" ? "runs the tool" : "runs nothing"}`, async () => {
      const target = join(root, `${action}.txt`)
      fake.setSteps([{ tool: "filesystem__write_file", arguments: { path: target, content: action } }, { text: "Finished." }])
      const query = { query: `write ${action}` }
      const first = await orchestrate(query)
      expect(first.result.resultType).toBe("input_required")
      const [key, question] = Object.entries(first.result.inputRequests)[0] as [string, any]
      expect(question.method).toBe("elicitation/create")
      expect(question.params.message).toContain("filesystem__write_file")
      expect(existsSync(target)).toBe(false)
      const done = await orchestrate({ ...query, requestState: first.result.requestState, inputResponses: { [key]: { action } } })
      if (action === "accept") {
        expect(done.result.resultType).toBe("complete")
        expect(readFileSync(target, "utf8")).toBe("accept")
      } else {
        expect(existsSync(target)).toBe(false)
        // Told to the model, which answered without a tool: the user's decision is the result, with its words.
        expect(done.error).toBeUndefined()
        expect(done.result.resultType).toBe("complete")
        expect(done.result.content[0].text).toBe("Nothing ran: the user declined to run filesystem__write_file.")
        expect(done.result._meta["agentify/answer"]).toBe("Finished.")
        const told = fake.requests[fake.requests.length - 1]!.body.messages.find((m: any) => m.role === "tool").content
        expect(told).toContain("the user declined to run filesystem__write_file")
      }
    })
  }
})

describe("confirmation inside a code-mode script, for a 2026-07-28 client", () => {
  for (const action of ["accept", "decline"] as const) {
    it(`the script's destructive call asks with an input_required result; answered ${action}, it ${action === "accept" ? "runs" : "rejects in the script"}`, async () => {
      const target = join(root, `script-${action}.txt`)
      const call = {
        name: "agentify_run_code",
        arguments: {
          code: `const before = await tools.filesystem.list_allowed_directories({})
            try { await tools.filesystem.write_file({ path: ${JSON.stringify(target)}, content: "${action}" }); return "written" } catch (e) { return e.message }`
        }
      }
      const first = await request("tools/call", call)
      expect(first.result.resultType).toBe("input_required")
      const [key, question] = Object.entries(first.result.inputRequests)[0] as [string, any]
      expect(question.params.message).toContain("filesystem__write_file")
      expect(existsSync(target)).toBe(false)
      const done = await request("tools/call", {
        ...call,
        requestState: first.result.requestState,
        inputResponses: { [key]: { action } }
      })
      expect(done.result.resultType).toBe("complete")
      if (action === "accept") {
        expect(done.result.content[0].text).toBe("written")
        expect(readFileSync(target, "utf8")).toBe("accept")
      } else {
        expect(done.result.content[0].text).toBe(
          'Not run: the user declined to run filesystem__write_file (confirmTools: "destructive")'
        )
        expect(existsSync(target)).toBe(false)
      }
    })
  }
})

describe("an orchestration or script as a task, for a client of the tasks extension", () => {
  const TASKS = { "io.modelcontextprotocol/tasks": {} }
  const task = (method: string, params: Record<string, unknown>) => request(method, params, TASKS)
  const pollUntil = async (taskId: string, status: string) => {
    for (;;) {
      const got = (await task("tasks/get", { taskId })).result
      if (got.status === status) return got
      expect(["working", "input_required"]).toContain(got.status)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  it("sees that the gateway's own tools may run as tasks (a client without the extension does not)", async () => {
    const own = (tools: Array<any>) => tools.filter((t) => t.name.startsWith("agentify_")).map((t) => [t.name, t.execution])
    expect(own((await task("tools/list", {})).result.tools)).toEqual([
      ["agentify_orchestrate", { taskSupport: "optional" }],
      ["agentify_run_code", { taskSupport: "optional" }]
    ])
    expect(own((await request("tools/list", {})).result.tools)).toEqual([
      ["agentify_orchestrate", undefined],
      ["agentify_run_code", undefined]
    ])
  })

  it("gets a task at once, finds the confirmation in its inputRequests, answers it with tasks/update, and reads the result", async () => {
    const target = join(root, "task.txt")
    fake.setSteps([{ tool: "filesystem__write_file", arguments: { path: target, content: "task" } }, { text: "Written." }])
    const created = (await task("agentify/orchestrateTask", { query: "write it" })).result
    expect(created).toMatchObject({ resultType: "task", status: "working" })
    expect(created.taskId).toMatch(/^agentify\.[A-Za-z0-9_-]{22}$/)
    const waiting = await pollUntil(created.taskId, "input_required")
    const [key, question] = Object.entries(waiting.inputRequests)[0] as [string, any]
    expect(question.method).toBe("elicitation/create")
    expect(question.params.message).toContain("filesystem__write_file")
    expect(existsSync(target)).toBe(false)
    expect(
      (await task("tasks/update", { taskId: created.taskId, inputResponses: { [key]: { action: "accept" } } })).result
    ).toEqual({
      resultType: "complete"
    })
    const done = await pollUntil(created.taskId, "completed")
    expect(done.result._meta["agentify/answer"]).toBe("Written.")
    expect(readFileSync(target, "utf8")).toBe("task")
    // Without the extension the same request is answered as before; the task methods are not its.
    expect((await request("tasks/get", { taskId: created.taskId })).error.code).toBe(-32021)
  })

  it("cancels a script waiting for its confirmation: nothing runs, and the task says cancelled", async () => {
    const target = join(root, "cancelled.txt")
    const created = (
      await task("tools/call", {
        name: "agentify_run_code",
        arguments: {
          code: `await tools.filesystem.write_file({ path: ${JSON.stringify(target)}, content: "no" }); return "written"`
        }
      })
    ).result
    expect(created.resultType).toBe("task")
    await pollUntil(created.taskId, "input_required")
    expect((await task("tasks/cancel", { taskId: created.taskId })).result).toEqual({ resultType: "complete" })
    expect((await task("tasks/get", { taskId: created.taskId })).result.status).toBe("cancelled")
    expect(existsSync(target)).toBe(false)
    expect((await task("tasks/get", { taskId: "agentify.AAAAAAAAAAAAAAAAAAAAAA" })).error.code).toBe(-32602)
  })
})
