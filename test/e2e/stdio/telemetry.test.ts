/**
 * OpenTelemetry export against a local OTLP/HTTP receiver on 127.0.0.1: the spans' names, kinds,
 * parents and attributes, W3C trace context taken from the client's `_meta.traceparent` and passed
 * on to the backend, the backend call metrics, and the exporter's header kept out of the logs.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { once } from "node:events"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { join } from "node:path"
import { CliClient, cleanEnv, SCRIPTED_GATEWAY, tempDir } from "../../support/stdioClient.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { until } from "../../support/process.js"

interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes: Array<{ key: string; value: Record<string, unknown> }>
}

const SERVER = 2
const CLIENT = 3
const TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
const CALLER_SPAN = "b7ad6b7169203331"
const EXPORT_SECRET = "otel-export-secret-4c1e"

let receiver: Server
const spans: Array<OtlpSpan> = []
const metricNames = new Set<string>()
const authorizations = new Set<string>()

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value
  return value === undefined ? undefined : Object.values(value)[0]
}

let client: CliClient

let auditFile: string
beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = ""
    req.on("data", (chunk) => (body += chunk))
    req.on("end", () => {
      authorizations.add(String(req.headers.authorization))
      const parsed = JSON.parse(body)
      if (req.url === "/v1/traces") {
        for (const resource of parsed.resourceSpans ?? [])
          for (const scope of resource.scopeSpans ?? []) spans.push(...scope.spans)
      } else if (req.url === "/v1/metrics") {
        for (const resource of parsed.resourceMetrics ?? [])
          for (const scope of resource.scopeMetrics ?? []) for (const metric of scope.metrics ?? []) metricNames.add(metric.name)
      }
      res.writeHead(200, { "content-type": "application/json" })
      res.end("{}")
    })
  }).listen(0, "127.0.0.1")
  await once(receiver, "listening")
  const port = (receiver.address() as { port: number }).port
  const dir = tempDir()
  const config = join(dir, "gateway.json")
  auditFile = join(dir, "audit.jsonl")
  writeFileSync(config, JSON.stringify({ backends: [fixtureBackend("fx")], audit: { file: auditFile } }))
  client = new CliClient({
    args: [SCRIPTED_GATEWAY, "--config", config],
    command: process.execPath,
    env: cleanEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${EXPORT_SECRET}`,
      OTEL_BSP_SCHEDULE_DELAY: "200",
      LOG_LEVEL: "trace"
    })
  })
  await client.initialize()
}, 30_000)

afterAll(async () => {
  await client?.close()
  receiver?.close()
})

describe("OpenTelemetry export", () => {
  it("a client request and its backend call: server and client spans, the caller's trace continued and passed on", async () => {
    const reply = await client.request("tools/call", {
      name: "fx__meta",
      arguments: {},
      _meta: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` }
    })
    const server = await until("the server span", () => spans.find((s) => s.name === "tools/call fx__meta" && s.kind === SERVER))
    expect(server.traceId).toBe(TRACE_ID)
    expect(server.parentSpanId).toBe(CALLER_SPAN)
    expect(attribute(server, "mcp.method.name")).toBe("tools/call")
    expect(attribute(server, "gen_ai.tool.name")).toBe("fx__meta")
    expect(attribute(server, "mcp.session.id")).toEqual(expect.any(String))
    // The same id as the call's line in the audit log.
    const audited = await until("the audit line", () =>
      existsSync(auditFile)
        ? readFileSync(auditFile, "utf8")
            .trim()
            .split("\n")
            .map((line) => JSON.parse(line))
            .find((line) => line.type === "call" && line.tool.own === "meta")
        : undefined
    )
    expect(attribute(server, "agentify.audit.id")).toBe(audited.id)

    const backendCall = await until("the client span", () =>
      spans.find((s) => s.name === "tools/call meta" && s.kind === CLIENT && s.traceId === TRACE_ID)
    )
    expect(backendCall.parentSpanId).toBe(server.spanId)
    expect(attribute(backendCall, "mcp.backend.id")).toBe("fx")
    expect(attribute(backendCall, "gen_ai.tool.name")).toBe("meta")
    // The backend was told the client span is its parent.
    expect(reply.result.structuredContent.meta.traceparent).toBe(`00-${TRACE_ID}-${backendCall.spanId}-01`)
  }, 20_000)

  it("an orchestration: request, orchestrator, each step, LLM and backend call in one trace", async () => {
    const auditLines = () =>
      (existsSync(auditFile) ? readFileSync(auditFile, "utf8").trim().split("\n") : [])
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line))
    // Only this test's lines: the code-mode test (in any order) writes a run too.
    const before = auditLines().length
    await client.request("agentify/orchestrateTask", { query: "echo otel" })
    const server = await until("the orchestration's span", () =>
      spans.find((s) => s.name === "agentify/orchestrateTask" && s.kind === SERVER)
    )
    const inTrace = () => spans.filter((s) => s.traceId === server.traceId)
    await until("the backend call span", () => inTrace().some((s) => s.name === "tools/call echo"))
    const byId = new Map(inTrace().map((s) => [s.spanId, s]))
    const ancestry = (span: OtlpSpan): Array<string> =>
      span.parentSpanId && byId.has(span.parentSpanId) ? [...ancestry(byId.get(span.parentSpanId)!), span.name] : [span.name]
    const call = inTrace().find((s) => s.name === "tools/call echo")!
    expect(ancestry(call)).toEqual([
      "agentify/orchestrateTask",
      "Orchestrator.orchestrate",
      "Orchestrator.step",
      "tools/call echo"
    ])
    // Each step's turn: the call (the plan travels with it: no turn of its own), the answer.
    expect(
      inTrace()
        .filter((s) => s.name === "Llm.chat")
        .map((s) => ancestry(s).join(" > "))
        .sort()
    ).toEqual([
      "agentify/orchestrateTask > Orchestrator.orchestrate > Orchestrator.step > Llm.chat",
      "agentify/orchestrateTask > Orchestrator.orchestrate > Orchestrator.step > Llm.chat"
    ])
    const step = inTrace().find((s) => s.name === "Orchestrator.step")!
    expect(Number(attribute(step, "agentify.step"))).toBe(1)
    // The run's id and its call's, as in the audit log.
    const lines = await until("the run's audit lines", () => {
      const all = auditLines().slice(before)
      const run = all.find((line) => line.type === "run")
      return run === undefined ? undefined : { run, call: all.find((line) => line.parent === run.id) }
    })
    expect(attribute(server, "agentify.audit.run")).toBe(lines.run.id)
    expect(lines.call).toMatchObject({ tool: { own: "echo" } })
  }, 20_000)

  it("a code-mode run: its span, a child span per call, and the backend's call under it", async () => {
    const reply = await client.request("tools/call", {
      name: "agentify_run_code",
      arguments: { code: "await tools.fx.echo({ a: 1 }); await tools.fx.echo({ b: 2 }); return 'two'" }
    })
    expect(reply.result.content[0].text).toBe("two")
    const run = await until("the run's span", () => spans.find((s) => s.name === "agentify_run_code"))
    const inTrace = () => spans.filter((s) => s.traceId === run.traceId)
    await until("both backend calls", () => inTrace().filter((s) => s.name === "tools/call echo").length === 2)
    const byId = new Map(inTrace().map((s) => [s.spanId, s]))
    const calls = inTrace().filter((s) => s.name === "RunCode.call")
    expect(calls.map((s) => attribute(s, "gen_ai.tool.name"))).toEqual(["fx__echo", "fx__echo"])
    expect(calls.every((s) => s.parentSpanId === run.spanId)).toBe(true)
    for (const backend of inTrace().filter((s) => s.name === "tools/call echo")) {
      expect(byId.get(backend.parentSpanId!)?.name).toBe("RunCode.call")
    }
  }, 20_000)

  it("metrics of backend calls are exported; the exporter's credential is sent but never logged", async () => {
    // A backend call of its own: the metrics exist once a call was made, whatever ran before.
    expect((await client.request("tools/call", { name: "fx__echo", arguments: { for: "metrics" } })).error).toBeUndefined()
    await until("the backend metrics", () => metricNames.has("mcp.backend.calls") && metricNames.has("mcp.backend.duration"))
    expect(authorizations).toEqual(new Set([`Bearer ${EXPORT_SECRET}`]))
    expect(client.stderr()).not.toContain(EXPORT_SECRET)
  }, 20_000)
})
