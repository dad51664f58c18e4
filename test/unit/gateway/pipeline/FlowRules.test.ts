/**
 * The flow guard's rules in the `decide` and `ask` stages, over calls whose provenance is given:
 * each rule holds exactly what it names (and nothing of a client's own call), "confirm" asks and
 * runs on consent, "strict" refuses, "off" has no rule, and a backend's `flow` setting changes
 * what its data and tools are taken for.
 */
import { describe, expect } from "@effect/vitest"
import { itEffect as it, runAsItsCaller } from "../../../support/caller.js"
import { Effect, Result } from "effect"
import type { FlowSetting } from "../../../../src/catalog/Capabilities.js"
import type { FlowGuard } from "../../../../src/config/Flow.js"
import * as Call from "../../../../src/gateway/pipeline/Call.js"
import * as FlowRules from "../../../../src/gateway/pipeline/FlowRules.js"
import * as Pipeline from "../../../../src/gateway/pipeline/Pipeline.js"
import * as Ask from "../../../../src/gateway/pipeline/stages/Ask.js"
import * as Decide from "../../../../src/gateway/pipeline/stages/Decide.js"
import * as Record from "../../../../src/gateway/pipeline/stages/Record.js"
import type { AuditService, CallLine } from "../../../../src/gateway/pipeline/Audit.js"
import * as AuditRun from "../../../../src/observability/AuditRun.js"
import type { Stage } from "../../../../src/gateway/pipeline/Stage.js"
import type { Source } from "../../../../src/call/Vocabulary.js"
import type { Tool } from "../../../../src/protocol/Mcp.js"
import { given } from "../../../support/stages.js"

const notes: Source = { call: 1, backendId: "fs", tool: "fs__read_text_file", arguments: { path: "notes.md" } }
const page: Source = { call: 2, backendId: "web", tool: "web__fetch", arguments: { url: "https://example.com" } }

const entry = (backendId: string, own: string, annotations?: Tool["annotations"]) => ({
  backendId,
  own,
  entry: {
    name: `${backendId}__${own}`,
    backendId,
    toolName: own,
    source: backendId,
    tool: { name: own, inputSchema: { type: "object" }, ...(annotations === undefined ? {} : { annotations }) }
  } as unknown as NonNullable<Call.Target["entry"]>
})

const planned = (
  name: string,
  target: Call.Target,
  flow: Call.ToolCall["flow"],
  answer: "accepted" | "declined" | "unavailable" = "declined",
  via: Call.Via = "orchestration"
) => {
  const asked: Array<{ tool: string; why?: string | undefined }> = []
  const call = Call.make({
    session: undefined,
    context: undefined,
    via,
    name,
    target,
    params: { name: target.own, arguments: {} },
    confirmed: true,
    flow,
    confirm: (q) => Effect.sync(() => (asked.push(q), answer))
  })
  return { call, asked }
}

const pipelineOf = (mode: FlowGuard, flows: Record<string, FlowSetting> = {}) => {
  const ran: Array<string> = []
  const forward: Stage = { name: "forward", run: (call) => Effect.sync(() => (ran.push(call.name), { content: [] })) }
  const pipeline = Pipeline.of([
    given,
    Decide.make(FlowRules.rules({ mode: () => mode, flowOf: (id) => flows[id] })),
    Ask.make(() => "never"),
    forward
  ])
  return { pipeline, ran }
}

const SEND = entry("mail", "send") // no annotations: open-world and destructive by MCP's defaults
const DELETE = entry("fs", "delete", { readOnlyHint: false, destructiveHint: true, openWorldHint: false })
const SAVE = entry("mem", "save", { readOnlyHint: false, destructiveHint: false, openWorldHint: false })

describe("the flow guard", () => {
  it.effect(
    "private-data-out: a private file's text into an unannotated (open-world) tool waits for consent; declined, it does not run",
    () =>
      Effect.gen(function* () {
        const { pipeline, ran } = pipelineOf("confirm")
        const { call, asked } = planned("mail__send", SEND, { read: [notes], origins: [{ path: "body", from: notes }] })
        const outcome = yield* Effect.result(runAsItsCaller(pipeline, call))
        expect(ran).toEqual([])
        expect(asked[0]?.why).toContain("private-data-out")
        expect(asked[0]?.why).toContain('body from fs__read_text_file {"path":"notes.md"}')
        // Unannotated, the tool is destructive too, and fs untrusted: both rules hold it.
        expect(Result.isFailure(outcome) && outcome.failure.message).toContain(
          "held by private-data-out, untrusted-target and the user declined"
        )
        expect(call.decisions.map((d) => d.rule)).toContain("private-data-out")
      })
  )

  it.effect("the same call runs once the user agrees, and with data the model wrote itself it is not asked about", () =>
    Effect.gen(function* () {
      const agreed = pipelineOf("confirm")
      yield* runAsItsCaller(
        agreed.pipeline,
        planned("mail__send", SEND, { read: [notes], origins: [{ path: "body", from: notes }] }, "accepted").call
      )
      expect(agreed.ran).toEqual(["mail__send"])
      const own = pipelineOf("confirm")
      const { call, asked } = planned("mail__send", SEND, { read: [notes], origins: [] })
      yield* runAsItsCaller(own.pipeline, call)
      expect(own.ran).toEqual(["mail__send"])
      expect(asked).toEqual([])
    })
  )

  it.effect("untrusted-target: a destructive call steered by a web page is held", () =>
    Effect.gen(function* () {
      const { pipeline } = pipelineOf("confirm")
      const held = yield* Effect.result(
        runAsItsCaller(pipeline, planned("fs__delete", DELETE, { read: [page], origins: [{ path: "path", from: page }] }).call)
      )
      expect(Result.isFailure(held) && held.failure.message).toContain("untrusted-target")
    })
  )

  it.effect("untrusted-write: a write carrying what a page says is held, unless the request asked to keep what it reads", () =>
    Effect.gen(function* () {
      // The web is public (its pages may be quoted anywhere), and still untrusted.
      const { pipeline, ran } = pipelineOf("confirm", { web: { private: false } })
      const origins = [{ path: "note", from: page }]
      const { call, asked } = planned("mem__save", SAVE, { read: [page], origins })
      const held = yield* Effect.result(runAsItsCaller(pipeline, call))
      expect(Result.isFailure(held) && held.failure.message).toContain("mem__save")
      expect(asked[0]?.why).toContain("untrusted-write: it would write what untrusted content says")
      expect(asked[0]?.why).toContain('note from web__fetch {"url":"https://example.com"}')
      // The request named the page and asked to keep what it says.
      const keeps = { sources: ["https://example.com"] }
      yield* runAsItsCaller(pipeline, planned("mem__save", SAVE, { read: [page], origins, keeps }).call)
      // ... and the plan named the tool (no plan: a script written before anything was read, its own).
      yield* runAsItsCaller(
        pipeline,
        planned("mem__save", SAVE, { read: [page], origins, keeps, plan: ["web__fetch", "mem__save"] }).call
      )
      const unplanned = planned("mem__save", SAVE, { read: [page], origins, keeps, plan: ["web__fetch"] })
      yield* Effect.result(runAsItsCaller(pipeline, unplanned.call))
      expect(unplanned.asked[0]?.why).toContain("untrusted-write")
      // A write of the model's own words (no value read) is not held either.
      yield* runAsItsCaller(pipeline, planned("mem__save", SAVE, { read: [page], origins: [] }).call)
      expect(ran).toEqual(["mem__save", "mem__save", "mem__save"])
    })
  )

  it.effect(
    "what the request asked to keep: a named source's data to a planned tool that keeps it runs; another source's, or to another tool, is asked about",
    () =>
      Effect.gen(function* () {
        // An unannotated memory tool: open-world for another backend's data, so private-data-out would hold it.
        const KEEP = entry("mem", "create_entities", { readOnlyHint: false, destructiveHint: false })
        const SEARCH = entry("web", "search", { readOnlyHint: true, openWorldHint: true })
        const clean: Source = { call: 1, backendId: "fs", tool: "fs__read_text_file", arguments: { path: "/home/me/clean.txt" } }
        const other: Source = { call: 2, backendId: "fs", tool: "fs__read_text_file", arguments: { path: "/home/me/other.txt" } }
        const keeps = { sources: ["clean.txt"] }
        const plan = ["fs__read_text_file", "mem__create_entities", "web__search"]
        const flow = (from: Source, extra: Partial<NonNullable<Call.ToolCall["flow"]>> = {}) => ({
          read: [clean, other],
          origins: [{ path: "entities[0].observations[0]", from }],
          plan,
          keeps,
          ...extra
        })
        const { pipeline, ran } = pipelineOf("confirm")
        const kept = planned("mem__create_entities", KEEP, flow(clean))
        yield* runAsItsCaller(pipeline, kept.call)
        expect(kept.asked).toEqual([])
        expect(ran).toEqual(["mem__create_entities"])

        // Another file's data, to the same tool: both data rules hold it.
        const otherSource = planned("mem__create_entities", KEEP, flow(other))
        yield* Effect.result(runAsItsCaller(pipeline, otherSource.call))
        expect(otherSource.asked[0]?.why).toContain("private-data-out")
        expect(otherSource.asked[0]?.why).toContain("other.txt")
        // The named file's data, to a planned tool that keeps nothing (a search sends it out).
        const otherTool = planned("web__search", SEARCH, flow(clean))
        yield* Effect.result(runAsItsCaller(pipeline, otherTool.call))
        expect(otherTool.asked[0]?.why).toContain("private-data-out")
        // ... to a keeping tool the plan did not name.
        const unplanned = planned("mem__create_entities", KEEP, flow(clean, { plan: ["fs__read_text_file"] }))
        yield* Effect.result(runAsItsCaller(pipeline, unplanned.call))
        expect(unplanned.asked[0]?.why).toContain("private-data-out")
        // ... to a destructive one.
        const destructive = planned("fs__delete", DELETE, flow(clean, { plan: [...plan, "fs__delete"] }))
        yield* Effect.result(runAsItsCaller(pipeline, destructive.call))
        expect(destructive.asked[0]?.why).toContain("untrusted-target")
        // ... and a request that asks to keep what it reads but names no source keeps nothing of it.
        const unnamed = planned("mem__create_entities", KEEP, flow(clean, { keeps: { sources: [] } }))
        yield* Effect.result(runAsItsCaller(pipeline, unnamed.call))
        expect(unnamed.asked[0]?.why).toContain("private-data-out")
        expect(ran).toEqual(["mem__create_entities"])
      })
  )

  it.effect("a tool's own hints do not close it to data from another backend; the configuration's do", () =>
    Effect.gen(function* () {
      // Private and untrusted by default, but calling itself read-only and closed-world.
      const LOOKUP = entry("crm", "lookup", { readOnlyHint: true, openWorldHint: false })
      const flow = { read: [notes], origins: [{ path: "q", from: notes }] }
      const { pipeline, ran } = pipelineOf("strict")
      const held = yield* Effect.result(runAsItsCaller(pipeline, planned("crm__lookup", LOOKUP, flow).call))
      expect(Result.isFailure(held) && held.failure.message).toContain("private-data-out")
      // Its own backend's data stays where it is: the hint stands for it.
      const own = { read: [notes], origins: [{ path: "q", from: { ...notes, backendId: "crm" } }] }
      yield* runAsItsCaller(pipeline, planned("crm__lookup", LOOKUP, own).call)
      // What the user declares of it stands for everything.
      const declared = pipelineOf("strict", { crm: { tools: { lookup: { openWorld: false } } } })
      yield* runAsItsCaller(declared.pipeline, planned("crm__lookup", LOOKUP, flow).call)
      expect([...ran, ...declared.ran]).toEqual(["crm__lookup", "crm__lookup"])
    })
  )

  it.effect("a value past the ledger's bound (untraced) counts as private and untrusted, whatever its backend", () =>
    Effect.gen(function* () {
      const { pipeline } = pipelineOf("strict", { web: { private: false, untrusted: false } })
      const untraced = { read: [page], origins: [{ path: "body", from: page, untraced: true as const }] }
      const held = yield* Effect.result(runAsItsCaller(pipeline, planned("mail__send", SEND, untraced).call))
      expect(Result.isFailure(held) && held.failure.message).toMatch(/private-data-out: .*body \(not traced/)
      const traced = pipelineOf("strict", { web: { private: false, untrusted: false } })
      yield* runAsItsCaller(
        traced.pipeline,
        planned("mail__send", SEND, { read: [page], origins: [{ path: "body", from: page }] }).call
      )
      expect(traced.ran).toEqual(["mail__send"])
    })
  )

  it.effect('routing "backend": a plan names tools; a tool of a backend the plan named is outside it', () =>
    Effect.gen(function* () {
      const { pipeline, ran } = pipelineOf("strict")
      // The model's function is the backend ("fs"); the call is its create_directory.
      const MKDIR = entry("fs", "create_directory", { readOnlyHint: false, destructiveHint: false, openWorldHint: false })
      const flow = { read: [notes], origins: [], plan: ["fs", "fs__read_text_file"] }
      const held = yield* Effect.result(runAsItsCaller(pipeline, planned("fs", MKDIR, flow).call))
      expect(Result.isFailure(held) && held.failure.message).toContain("the plan did not name fs__create_directory")
      yield* runAsItsCaller(pipeline, planned("fs", MKDIR, { ...flow, plan: ["fs__create_directory"] }).call)
      expect(ran).toEqual(["fs"])
    })
  )

  it.effect("outside-plan: after reading, a tool the plan did not name is held, naming what was read; one it named passes", () =>
    Effect.gen(function* () {
      const { pipeline, ran } = pipelineOf("confirm")
      const plan = ["web__fetch", "mem__save"]
      const { call, asked } = planned(
        "fs__delete",
        entry("fs", "delete", { readOnlyHint: false, destructiveHint: false, openWorldHint: false }),
        {
          read: [page],
          origins: [],
          plan
        }
      )
      yield* Effect.result(runAsItsCaller(pipeline, call))
      expect(asked[0]?.why).toContain('chosen after reading web__fetch {"url":"https://example.com"}')
      yield* runAsItsCaller(pipeline, planned("mem__save", SAVE, { read: [page], origins: [], plan }).call)
      expect(ran).toEqual(["mem__save"])
    })
  )

  it.effect('"strict" refuses without asking; "off" lets it run; a client\'s own call is never judged', () =>
    Effect.gen(function* () {
      const flow = { read: [notes], origins: [{ path: "body", from: notes }] }
      const strict = pipelineOf("strict")
      const { call, asked } = planned("mail__send", SEND, flow, "accepted")
      const refused = yield* Effect.result(runAsItsCaller(strict.pipeline, call))
      expect(Result.isFailure(refused) && refused.failure.message).toBe(
        `mail__send refused by private-data-out: it would send data read from a private source out to an open-world tool (body from fs__read_text_file {"path":"notes.md"})`
      )
      expect(asked).toEqual([])
      const off = pipelineOf("off")
      yield* runAsItsCaller(off.pipeline, planned("mail__send", SEND, flow).call)
      expect(off.ran).toEqual(["mail__send"])
      const client = pipelineOf("strict")
      yield* runAsItsCaller(client.pipeline, planned("mail__send", SEND, flow, "declined", "client").call)
      expect(client.ran).toEqual(["mail__send"])
    })
  )

  it.effect(
    "a backend's flow setting: its data declared public and trusted may leave; a tool declared closed-world and non-destructive is not held",
    () =>
      Effect.gen(function* () {
        const flow = { read: [notes], origins: [{ path: "body", from: notes }] }
        // Without a setting fs is taken for private and untrusted, and the unannotated send for open-world and destructive.
        const publicData = pipelineOf("strict", { fs: { private: false, untrusted: false } })
        yield* runAsItsCaller(publicData.pipeline, planned("mail__send", SEND, flow).call)
        expect(publicData.ran).toEqual(["mail__send"])
        const internal = pipelineOf("strict", { mail: { tools: { "se*": { openWorld: false, destructive: false } } } })
        // Still a write of what the file says: the request must have asked to keep what it reads.
        const held = yield* Effect.result(runAsItsCaller(internal.pipeline, planned("mail__send", SEND, flow).call))
        expect(Result.isFailure(held) && held.failure.message).toContain("untrusted-write")
        yield* runAsItsCaller(internal.pipeline, planned("mail__send", SEND, { ...flow, keeps: { sources: ["notes.md"] } }).call)
        expect(internal.ran).toEqual(["mail__send"])
      })
  )

  it.effect(
    "several stages want consent for one call (confirmTools and three flow rules): the user is asked once, naming every reason",
    () =>
      Effect.gen(function* () {
        const ran: Array<string> = []
        const forward: Stage = { name: "forward", run: (call) => Effect.sync(() => (ran.push(call.name), { content: [] })) }
        const pipeline = Pipeline.of([
          given,
          Decide.make(FlowRules.rules({ mode: () => "confirm", flowOf: () => undefined })),
          Ask.make(() => "destructive"),
          forward
        ])
        // The unannotated send is destructive and open-world (MCP's defaults): confirmTools asks of it;
        // a private, untrusted file's text in it, chosen after reading and outside the plan, holds it
        // by private-data-out, untrusted-target and outside-plan.
        const flow = { read: [notes], origins: [{ path: "body", from: notes }], plan: ["fs__read_text_file"] }
        // Not yet agreed (confirmTools' question carries the rules), and agreed before the turn (the rules' own).
        for (const confirmed of [false, true]) {
          const asked: Array<{ tool: string; why?: string | undefined }> = []
          const call = Call.make({
            session: undefined,
            context: undefined,
            via: "orchestration",
            name: "mail__send",
            target: SEND,
            params: { name: "send", arguments: {} },
            confirmed,
            flow,
            confirm: (q) => Effect.sync(() => (asked.push(q), "accepted" as const))
          })
          yield* runAsItsCaller(pipeline, call)
          expect(asked).toHaveLength(1)
          expect(asked[0]!.tool).toBe("mail__send")
          const reasons = (asked[0]!.why ?? "").split("\n")
          expect(reasons.map((r) => r.split(":")[0])).toEqual(["private-data-out", "untrusted-target", "outside-plan"])
          expect(reasons[2]).toContain("the plan did not name mail__send")
        }
        expect(ran).toEqual(["mail__send", "mail__send"])
      })
  )

  it.effect("the audit line names the rules that held a call, run on consent or not run", () =>
    Effect.gen(function* () {
      const lines: Array<CallLine> = []
      const audit: AuditService = { enabled: true, parent: AuditRun.current, call: (l) => lines.push(l), run: () => {} }
      const forward: Stage = { name: "forward", run: () => Effect.succeed({ content: [] }) }
      const pipeline = Pipeline.of([
        Record.make(audit),
        given,
        Decide.make(FlowRules.rules({ mode: () => "confirm", flowOf: () => undefined })),
        Ask.make(() => "never"),
        forward
      ])
      const flow = { read: [notes], origins: [], plan: ["web__fetch"] }
      yield* runAsItsCaller(pipeline, planned("mem__save", SAVE, flow, "accepted").call)
      yield* Effect.result(runAsItsCaller(pipeline, planned("mem__save", SAVE, flow, "declined").call))
      yield* runAsItsCaller(pipeline, planned("web__fetch", entry("web", "fetch", { readOnlyHint: true }), flow).call)
      expect(lines.map((l) => [l.outcome, l.heldBy])).toEqual([
        ["ok", ["outside-plan"]],
        [-32602, ["outside-plan"]],
        ["ok", undefined]
      ])
    })
  )
})
