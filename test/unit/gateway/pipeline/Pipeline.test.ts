/**
 * The call pipeline in process: each stage with a table of backends of its own, and the whole
 * pipeline's order. Each test breaks if its stage is taken out or stops doing its one job.
 */
import { describe, expect } from "@effect/vitest"
import { itEffect as it, runAsItsCaller } from "../../../support/caller.js"
import { Deferred, Effect, Result, Fiber } from "effect"
import type { BackendsService } from "../../../../src/backend/Backends.js"
import * as Call from "../../../../src/gateway/pipeline/Call.js"
import * as Pipeline from "../../../../src/gateway/pipeline/Pipeline.js"
import type { Found, Next, Stage } from "../../../../src/gateway/pipeline/Stage.js"
import * as Trail from "../../../../src/gateway/pipeline/Trail.js"
import type { Page } from "../../../../src/gateway/pipeline/Trail.js"
import type { Decision } from "../../../../src/call/Vocabulary.js"
import * as Ask from "../../../../src/gateway/pipeline/stages/Ask.js"
import * as Check from "../../../../src/gateway/pipeline/stages/Check.js"
import * as Count from "../../../../src/gateway/pipeline/stages/Count.js"
import { local, Quotas } from "../../../../src/store/TeamQuotas.js"
import { BackendError, InternalError, Relayed, sentCode, toRpcError } from "../../../../src/protocol/Errors.js"
import { heldBy } from "../../../../src/call/Vocabulary.js"
import * as Credentials from "../../../../src/gateway/pipeline/stages/Credentials.js"
import * as Decide from "../../../../src/gateway/pipeline/stages/Decide.js"
import * as Find from "../../../../src/gateway/pipeline/stages/Find.js"
import * as Forward from "../../../../src/gateway/pipeline/stages/Forward.js"
import * as Record from "../../../../src/gateway/pipeline/stages/Record.js"
import type { AuditService, CallLine } from "../../../../src/gateway/pipeline/Audit.js"
import * as AuditRun from "../../../../src/observability/AuditRun.js"
import { Routes } from "../../../../src/gateway/routing/Routes.js"
import { Session } from "../../../../src/gateway/session/Session.js"
import type { Tool } from "../../../../src/protocol/Mcp.js"
import { EDGE as HTTP_EDGE } from "../../../../src/gateway/clients/SharedSessions.js"

const tool = (name: string, extra: Partial<Tool> = {}): Tool => ({
  name,
  description: `the ${name} tool`,
  inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  ...extra
})

/** Two ready backends; `fx`'s `held` changed since it was pinned (quarantined). */
const backends = {
  toolsSync: () => [
    {
      backendId: "fx",
      tools: [tool("read", { annotations: { readOnlyHint: true } }), tool("write", { annotations: { destructiveHint: true } })],
      exposure: { id: "fx" },
      changed: [{ name: "held", changed: ["description"], pinned: {}, now: {} }],
      pinMode: "quarantine" as const
    },
    { backendId: "other", tools: [tool("read")], exposure: { id: "other" } }
  ],
  configOf: (id: string) => ({ id }),
  states: Effect.succeed([]),
  backend: () => undefined,
  startOnUse: () => undefined
} as unknown as BackendsService

/**
 * The rest of the pipeline, as the stage under test sees it: records that it was reached. `page`:
 * the stage's page of a trail of its own, `said` what the stage noted there.
 */
const reached = (stage: string): { next: Next; calls: Array<Call.ToolCall>; page: Page; said: () => ReadonlyArray<Decision> } => {
  const calls: Array<Call.ToolCall> = []
  const trail = Trail.make()
  return {
    calls,
    next: (call) => Effect.sync(() => (calls.push(call), { content: [] })),
    page: trail.pageOf(stage),
    said: trail.decisions
  }
}

/** A page for a stage run alone, when what it notes is not looked at. */
const pageOf = (stage: string): Page => Trail.make().pageOf(stage)

const session = () => new Session({ id: "s", edge: HTTP_EDGE, send: () => false })
const call = <O extends Partial<Call.ToolCall> & Pick<Call.ToolCall, "via" | "name">>(over: O) =>
  Call.make({ session: session(), context: undefined, params: { name: over.name, arguments: { path: "a" } }, ...over })
/** `fx`'s tool the call names, as `find` would have found it: what the stages after it need. */
const atFx = (name: string): Call.Target => ({ backendId: "fx", own: name.split("__")[1]! })

const find = Find.make({ backends, profileOf: () => undefined })

describe("find", () => {
  it.effect("a client's exposed name becomes its backend and own name; an unknown one is refused, the refusal noted", () =>
    Effect.gen(function* () {
      const rest = reached("find")
      yield* find.run(call({ via: "client", name: "fx__read" }), rest.next, pageOf("find"))
      expect(rest.calls[0]!.target).toMatchObject({ backendId: "fx", own: "read" })
      const unknown = call({ via: "client", name: "fx__nothing" })
      const refused = yield* Effect.result(find.run(unknown, rest.next, rest.page))
      expect(Result.isFailure(refused) && refused.failure.message).toBe("Unknown tool: fx__nothing")
      expect(rest.said()).toEqual([{ stage: "find", said: "Unknown tool: fx__nothing", refused: true }])
      expect(rest.calls).toHaveLength(1)
    })
  )

  it.effect("a quarantined tool is refused saying how to trust it; a profile hides what it does not admit", () =>
    Effect.gen(function* () {
      const rest = reached("find")
      const held = yield* Effect.result(find.run(call({ via: "script", name: "fx__held" }), rest.next, rest.page))
      expect(Result.isFailure(held) && held.failure.message).toContain("mcp-agentify trust fx held")
      const reader = Find.make({ backends, profileOf: () => ({ backends: ["other"] }) })
      const hidden = yield* Effect.result(reader.run(call({ via: "client", name: "fx__read" }), rest.next, rest.page))
      expect(Result.isFailure(hidden)).toBe(true)
      yield* reader.run(call({ via: "client", name: "other__read" }), rest.next, rest.page)
      expect(rest.calls.map((c) => c.target?.backendId)).toEqual(["other"])
    })
  )
})

describe("find, with a backend started for the call", () => {
  /**
   * `fx` remembered with `wipe` read-only, waiting for its first use; started (by `startOnUse`), it
   * lists `wipe` destructive with a new schema, flagged under `pins` ("warn", "off": it is listed) or
   * held back ("quarantine").
   */
  const onUse = (pins: "warn" | "off" | "quarantine") => {
    const remembered = tool("wipe", { annotations: { readOnlyHint: true } })
    const now = tool("wipe", {
      annotations: { readOnlyHint: false, destructiveHint: true },
      inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path", "recursive"] }
    })
    let started = 0
    const changed = { name: "wipe", changed: ["inputSchema", "annotations"], pinned: {}, now: {} }
    const service = {
      toolsSync: () => [
        started === 0
          ? { backendId: "fx", tools: [remembered], exposure: { id: "fx" } }
          : pins === "quarantine"
            ? { backendId: "fx", tools: [], exposure: { id: "fx" }, changed: [changed], pinMode: pins }
            : {
                backendId: "fx",
                tools: [now],
                exposure: { id: "fx" },
                ...(pins === "warn" ? { changed: [changed], pinMode: pins } : {})
              }
      ],
      configOf: (id: string) => ({ id }),
      states: Effect.succeed([]),
      backend: () => (started === 0 ? undefined : {}),
      startOnUse: () => (started === 0 ? Effect.sync(() => void started++) : undefined)
    } as unknown as BackendsService
    return { find: Find.make({ backends: service, profileOf: () => undefined }), starts: () => started }
  }

  it.effect(
    "every stage after it judges the tool as listed now, whatever the pins setting; held back, it is refused as at initialize",
    () =>
      Effect.gen(function* () {
        for (const pins of ["warn", "off"] as const) {
          const { find: finding, starts } = onUse(pins)
          const asked: Array<string> = []
          const ran: Array<string> = []
          const forward: Stage = { name: "forward", run: (c) => Effect.sync(() => (ran.push(c.name), { content: [] })) }
          const pipeline = Pipeline.of([finding, Check.make(), Decide.make(), Ask.make(() => "destructive"), forward])
          const planned = (args: Record<string, unknown>) =>
            call({
              via: "script",
              name: "fx__wipe",
              params: { name: "fx__wipe", arguments: args },
              confirm: (q) => Effect.sync(() => (asked.push(q.tool), "accepted" as const))
            })
          // Valid as remembered, not as listed now: the check holds it to the live schema.
          const invalid = yield* Effect.result(runAsItsCaller(pipeline, planned({ path: "/srv" })))
          expect(Result.isFailure(invalid) && invalid.failure.message).toMatch(/^Invalid arguments for fx__wipe: .*recursive/)
          expect(starts()).toBe(1)
          // Destructive now: confirmTools "destructive" asks.
          yield* runAsItsCaller(pipeline, planned({ path: "/srv", recursive: true }))
          expect(asked).toEqual(["fx__wipe"])
          expect(ran).toEqual(["fx__wipe"])
        }
        const held = onUse("quarantine")
        const rest = reached("find")
        const refused = yield* Effect.result(held.find.run(call({ via: "client", name: "fx__wipe" }), rest.next, rest.page))
        expect(Result.isFailure(refused) && refused.failure.message).toBe(
          "Tool fx__wipe is quarantined: its inputSchema, annotations changed since it was pinned; review the change and run `mcp-agentify trust fx wipe` to accept it"
        )
        expect(rest.calls).toEqual([])
      })
  )
})

describe("check", () => {
  it.effect("holds a planned call to the inputSchema; a client's own call goes as sent", () =>
    Effect.gen(function* () {
      const rest = reached("check")
      const entry = { name: "fx__read", backendId: "fx", toolName: "read", tool: tool("read") }
      const target = { backendId: "fx", own: "read", entry } as unknown as Call.Target
      const bad = call({ via: "script", name: "fx__read", target, params: { name: "fx__read", arguments: {} } })
      const refused = yield* Effect.result(Check.make().run(bad, rest.next, rest.page))
      expect(Result.isFailure(refused) && refused.failure.message).toMatch(/^Invalid arguments for fx__read: .*path/)
      expect(rest.said()[0]).toMatchObject({ stage: "check", refused: true })
      expect(rest.calls).toHaveLength(0)
      // A client's own call does not meet it: its way's table has no check (see "the pipeline").
      expect(Pipeline.TABLES.client).not.toContain("check")
    })
  )
})

describe("a refusal", () => {
  it("is one typed failure read by its fields; its wire form names the stage, the rule and what the stage adds", () => {
    const asked = new Call.CallRefused({
      stage: "ask",
      code: -32602,
      message: "Not run: held by private-data-out and the user declined",
      rule: "private-data-out",
      detail: { held: ["private-data-out"], answer: "declined" }
    })
    expect(toRpcError(asked)).toEqual({
      code: -32602,
      message: "Not run: held by private-data-out and the user declined",
      data: { stage: "ask", rule: "private-data-out", held: ["private-data-out"], answer: "declined" }
    })
    expect(heldBy(asked)).toEqual(["private-data-out"])
    const decided = new Call.CallRefused({ stage: "decide", code: -32602, message: "refused by policies", rule: "policies" })
    expect(heldBy(decided)).toEqual(["policies"])
    // A failure that is no refusal names no rule.
    // A failure that is no refusal names no rule (a backend's own error dressed as one).
    const forged = new Relayed({
      from: "backend",
      code: sentCode(-32602),
      message: "x",
      data: { stage: "decide", rule: "forged" }
    })
    expect(heldBy(forged)).toBeUndefined()
  })
})

describe("decide", () => {
  it.effect("a named rule that refuses stops the call, saying which; none: the call goes on", () =>
    Effect.gen(function* () {
      const rest = reached("decide")
      const rule: Decide.Rule = {
        name: "no-writes",
        refuses: (c) => Effect.succeed(c.name.endsWith("write") ? "writes are off" : undefined)
      }
      const stage = Decide.make([rule])
      const refused = yield* Effect.result(
        stage.run(call({ via: "client", name: "fx__write", target: atFx("fx__write") }), rest.next, rest.page)
      )
      expect(Result.isFailure(refused) && refused.failure.message).toBe("fx__write refused by no-writes: writes are off")
      yield* stage.run(call({ via: "client", name: "fx__read", target: atFx("fx__read") }), rest.next, rest.page)
      expect(rest.calls.map((c) => c.name)).toEqual(["fx__read"])
    })
  )
})

describe("ask", () => {
  const target = {
    backendId: "fx",
    own: "write",
    entry: {
      name: "fx__write",
      backendId: "fx",
      toolName: "write",
      tool: tool("write", { annotations: { destructiveHint: true } })
    }
  } as unknown as Call.Target
  it.effect(
    "a planned destructive call runs once the user agreed; declined or unaskable, it does not; a client's is not asked",
    () =>
      Effect.gen(function* () {
        const rest = reached("ask")
        const stage = Ask.make(() => "destructive")
        const answers: Array<"accepted" | "declined"> = ["declined", "accepted"]
        const confirm = () => Effect.succeed(answers.shift()!)
        const asked = <C extends Call.ToolCall & Found>(c: C) => stage.run({ ...c, consent: [] }, rest.next, rest.page)
        const declined = yield* Effect.result(asked(call({ via: "script", name: "fx__write", target, confirm })))
        expect(Result.isFailure(declined) && declined.failure.message).toContain("the user declined to run fx__write")
        yield* asked(call({ via: "script", name: "fx__write", target, confirm }))
        const unaskable = yield* Effect.result(asked(call({ via: "orchestration", name: "fx__write", target })))
        expect(Result.isFailure(unaskable) && unaskable.failure.message).toContain("this client cannot be asked")
        yield* asked(call({ via: "orchestration", name: "fx__write", target, confirmed: true }))
        expect(rest.calls.map((c) => c.via)).toEqual(["script", "orchestration"])
        // A client's own call does not meet it: its way's table has no ask (see "the pipeline").
        expect(Pipeline.TABLES.client).not.toContain("ask")
      })
  )
})

describe("count", () => {
  it.effect("with no limits configured, passes every call on", () =>
    Effect.gen(function* () {
      const rest = reached("count")
      yield* Count.make(() => undefined, local(new Quotas()).take).run(
        call({ via: "client", name: "fx__read", target: atFx("fx__read") }),
        rest.next,
        rest.page
      )
      expect(rest.calls).toHaveLength(1)
    })
  )

  it.effect(
    "calls per minute, per subject: the next is refused with -32029 naming the limit and when to retry; the window slides",
    () =>
      Effect.gen(function* () {
        let now = 1_000_000
        const count = Count.make(() => ({ subject: { callsPerMinute: 2 } }), local(new Quotas(() => now)).take)
        const rest = reached("count")
        const alice = () =>
          new Session({ id: "a", edge: HTTP_EDGE, identity: { subject: "alice", scopes: [], groups: [] }, send: () => false })
        const asAlice = () => call({ via: "client", name: "fx__read", target: atFx("fx__read"), session: alice() })
        yield* count.run(asAlice(), rest.next, rest.page)
        now += 10_000
        yield* count.run(asAlice(), rest.next, rest.page)
        now += 5_000
        const refused = yield* Effect.result(count.run(asAlice(), rest.next, rest.page))
        expect(
          Result.isFailure(refused) && [
            refused.failure.code,
            refused.failure.message,
            (refused.failure as { data?: unknown }).data
          ]
        ).toEqual([
          -32029,
          "Too many calls: fx__read is past limits.subject (2 calls per minute); retry in 45 s",
          { stage: "count", limit: "limits.subject", retryAfterMs: 45_000 }
        ])
        // Another subject has its own count.
        yield* count.run(
          call({
            via: "client",
            name: "fx__read",
            target: atFx("fx__read"),
            session: new Session({
              id: "b",
              edge: HTTP_EDGE,
              identity: { subject: "bob", scopes: [], groups: [] },
              send: () => false
            })
          }),
          rest.next,
          rest.page
        )
        now += 45_000
        yield* count.run(asAlice(), rest.next, rest.page)
        expect(rest.calls).toHaveLength(4)
      })
  )

  it("forgets a subject with no call in the last minute: a million callers seen once are not kept", () => {
    let now = 1_000_000
    const quotas = new Quotas(() => now)
    const limit = { callsPerMinute: 5, concurrent: 2 }
    for (let i = 0; i < 10_000; i++) {
      const taken = quotas.take([{ key: `subject\u0000user-${i}`, named: "limits.subject", limit }])
      if (taken._tag === "Taken") taken.release()
    }
    expect(quotas.keys).toBe(10_000)
    // A call in flight across the minute keeps its key counted until it ends.
    const long = quotas.take([{ key: "subject\u0000busy", named: "limits.subject", limit: { concurrent: 1 } }])
    now += 61_000
    quotas.take([{ key: "subject\u0000late", named: "limits.subject", limit }])
    expect(quotas.keys).toBe(2)
    expect(quotas.take([{ key: "subject\u0000busy", named: "limits.subject", limit: { concurrent: 1 } }])._tag).toBe("Refused")
    if (long._tag === "Taken") long.release()
    expect(quotas.keys).toBe(1)
  })

  it.effect(
    "calls at once, per tool glob and per backend: refused while the places are taken, admitted once one is given back",
    () =>
      Effect.gen(function* () {
        const count = Count.make(
          () => ({ tools: { "fx__w*": { concurrent: 1 } }, backends: { other: { concurrent: 1 } } }),
          local(new Quotas()).take
        )
        const gate = yield* Deferred.make<void>()
        const held: Next = () => Effect.as(Deferred.await(gate), { content: [] })
        const write = () =>
          call({
            via: "client",
            name: "fx__write",
            target: { backendId: "fx", own: "write", entry: { name: "fx__write" } as never }
          })
        const first = yield* Effect.forkChild(count.run(write(), held, pageOf("count")))
        yield* Effect.yieldNow
        const second = yield* Effect.result(count.run(write(), reached("count").next, pageOf("count")))
        expect(Result.isFailure(second) && second.failure.message).toBe(
          'Too many calls: fx__write is past limits.tools["fx__w*"] (1 call at once); retry in 1 s'
        )
        // A tool the glob does not match, on a backend without a limit: not counted.
        const rest = reached("count")
        yield* count.run(
          call({ via: "client", name: "fx__read", target: { backendId: "fx", own: "read" } }),
          rest.next,
          rest.page
        )
        expect(rest.calls).toHaveLength(1)
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(first)
        yield* count.run(write(), rest.next, rest.page)
        expect(rest.calls).toHaveLength(2)
        // Per backend: a failed call gives its place back too.
        const failing: Next = () => Effect.fail(new InternalError({ message: "boom" }))
        const onOther = () => call({ via: "script", name: "other__read", target: { backendId: "other", own: "read" } })
        yield* Effect.result(count.run(onOther(), failing, pageOf("count")))
        yield* count.run(onOther(), rest.next, rest.page)
        expect(rest.calls).toHaveLength(3)
      })
  )
})

describe("record and forward", () => {
  it.effect("forward sends the backend's own name; record writes one line naming how the call was made, refusals included", () =>
    Effect.gen(function* () {
      const lines: Array<CallLine> = []
      const audit: AuditService = { enabled: true, parent: AuditRun.current, call: (l) => lines.push(l), run: () => {} }
      const sent: Array<[string, string, unknown]> = []
      const routes = yield* Routes
      const forward = Forward.make({
        forwarder: {
          forward: (_context, backendId, method, params) =>
            Effect.sync(() => (sent.push([backendId, method, params]), { content: [] }))
        },
        backends,
        routes,
        idPrefix: () => ""
      })
      const pipeline = Pipeline.of([Record.make(audit), find, forward])
      yield* runAsItsCaller(pipeline, call({ via: "client", name: "fx__read" }))
      expect(sent).toEqual([["fx", "tools/call", { name: "read", arguments: { path: "a" } }]])
      yield* Effect.result(runAsItsCaller(pipeline, call({ via: "script", name: "fx__nope" })))
      expect(lines.map((l) => [l.via, l.backend, l.outcome, l.refusedBy])).toEqual([
        ["client", "fx", "ok", undefined],
        ["script", undefined, -32602, "find"]
      ])
    }).pipe(Effect.provide(Routes.layer))
  )
})

describe("what the session's edge says", () => {
  it.effect(
    "a reply over maxReplyBytes is recorded as the -32603 the client got where its edge bounds replies, as sent elsewhere",
    () =>
      Effect.gen(function* () {
        const lines: Array<CallLine> = []
        const audit: AuditService = { enabled: true, parent: AuditRun.current, call: (l) => lines.push(l), run: () => {} }
        const big: Next = () => Effect.succeed({ content: [{ type: "text", text: "x".repeat(2_000) }] })
        const record = Record.make(audit, () => 1_000)
        const context = { id: 1, signal: new AbortController().signal } as never
        const bounded = new Session({ id: "b", edge: { name: "pipe", localUser: true, boundsReplies: true }, send: () => false })
        for (const on of [bounded, session()]) {
          yield* runAsItsCaller(
            Pipeline.of([record, { name: "rest", run: (c) => big(c) }]),
            Call.make({ session: on, context, via: "client", name: "fx__read", params: { name: "fx__read", arguments: {} } })
          )
        }
        expect(lines.map((l) => l.outcome)).toEqual([-32603, "ok"])
      })
  )

  it("a call with no token is the local user's where the edge says its client is, else anonymous", () => {
    const local = new Session({ id: "l", edge: { name: "pipe", localUser: true, boundsReplies: false }, send: () => false })
    expect(Call.userOf(local)).toBe("local")
    expect(Call.userOf(session())).toBe("anonymous")
    expect(Call.userOf(undefined)).toBe("local")
    const alice = new Session({
      id: "a",
      edge: HTTP_EDGE,
      identity: { subject: "alice", scopes: [], groups: [] },
      send: () => false
    })
    expect(Call.userOf(alice)).toBe("alice")
  })
})

describe("a preview (dry run)", () => {
  it.effect(
    "checks a call like any other, never asks about one it holds back, holds back all but read-only tools, and records it held",
    () =>
      Effect.gen(function* () {
        const lines: Array<CallLine> = []
        const audit: AuditService = { enabled: true, parent: AuditRun.current, call: (l) => lines.push(l), run: () => {} }
        const sent: Array<string> = []
        const routes = yield* Routes
        const forward = Forward.make({
          forwarder: {
            forward: (_context, _b, _m, params) =>
              Effect.sync(() => (sent.push(String((params as { name: string }).name)), { content: [] }))
          },
          backends,
          routes,
          idPrefix: () => ""
        })
        let asked = 0
        const confirm = () => Effect.sync(() => (asked++, "accepted" as const))
        // `decide` with no rule: what `ask` needs of it is that nothing else holds the call.
        const pipeline = Pipeline.of([
          Record.make(audit),
          find,
          Check.make(),
          Decide.make(),
          Ask.make(() => "destructive"),
          forward
        ])
        const preview = (name: string, args: Record<string, unknown>) =>
          runAsItsCaller(pipeline, call({ via: "script", name, confirm, preview: true, params: { name, arguments: args } }))
        expect(yield* preview("fx__write", { path: "a" })).toEqual({ dryRun: true })
        yield* preview("fx__read", { path: "a" })
        const invalid = yield* Effect.result(preview("fx__write", {}))
        expect(Result.isFailure(invalid) && invalid.failure.message).toMatch(/^Invalid arguments for fx__write/)
        expect(sent).toEqual(["read"])
        expect(asked).toBe(0)
        expect(lines.map((l) => l.outcome)).toEqual(["held", "ok", -32602])
      }).pipe(Effect.provide(Routes.layer))
  )
})

describe("decide", () => {
  it.effect("asks only the rules that concern a call: one that does not is never run for it", () =>
    Effect.gen(function* () {
      const asked: Array<string> = []
      const rule = (name: string, concerns?: (c: Call.ToolCall) => boolean): Decide.Rule => ({
        name,
        ...(concerns === undefined ? {} : { concerns }),
        refuses: (c) => Effect.sync(() => (asked.push(`${name} ${c.via}`), undefined))
      })
      const stage = Decide.make([rule("always"), rule("planned only", (c) => c.via !== "client")])
      const rest = reached("decide")
      yield* stage.run(call({ via: "client", name: "fx__read", target: atFx("fx__read") }), rest.next, rest.page)
      yield* stage.run(call({ via: "script", name: "fx__read", target: atFx("fx__read") }), rest.next, rest.page)
      expect(asked).toEqual(["always client", "always script", "planned only script"])
      expect(rest.calls).toHaveLength(2)
    })
  )
})

describe("the pipeline", () => {
  it("meets its stages in the order of its table, each around the rest", async () => {
    const order: Array<string> = []
    const stage = (name: string): Stage => ({
      name,
      run: (c, next) =>
        Effect.andThen(
          Effect.sync(() => order.push(name)),
          name === "forward" ? Effect.succeed({}) : next(c)
        )
    })
    const pipeline = Pipeline.of(Pipeline.STAGES.map(stage))
    expect(pipeline.stages).toEqual(["record", "find", "check", "decide", "ask", "count", "credentials", "forward"])
    await Effect.runPromise(runAsItsCaller(pipeline, call({ via: "client", name: "x" })))
    expect(order).toEqual([...Pipeline.STAGES])
  })

  it("takes each way of calling's table: a client's own call skips check and ask, a planned one meets every stage", async () => {
    const order: Array<string> = []
    const stageOf = (name: string): Stage => ({
      name,
      run: (c, next) =>
        Effect.andThen(
          Effect.sync(() => order.push(`${c.via} ${name}`)),
          name === "forward" ? Effect.succeed({}) : next(c)
        )
    })
    const pipeline = Pipeline.ofStages(stageOf)
    for (const via of ["client", "task", "backend-endpoint"] as const) {
      order.length = 0
      await Effect.runPromise(runAsItsCaller(pipeline, call({ via, name: "x" })))
      expect(order).toEqual(["record", "find", "decide", "count", "credentials", "forward"].map((s) => `${via} ${s}`))
    }
    for (const via of ["orchestration", "script"] as const) {
      order.length = 0
      await Effect.runPromise(runAsItsCaller(pipeline, call({ via, name: "x" })))
      expect(order).toEqual(Pipeline.STAGES.map((s) => `${via} ${s}`))
    }
  })
})

describe("credentials", () => {
  /** A remote backend's 403 insufficient_scope, as its channel reports it. */
  const insufficient = new BackendError({
    backendId: "fx",
    reason: "call_failed",
    summary: "HTTP 403",
    detail: { code: -32603, message: "HTTP 403 Forbidden", data: { httpStatus: 403, insufficientScope: ["notes:write"] } }
  })
  const started: Array<ReadonlyArray<string> | undefined> = []
  const subjects: Array<string | undefined> = []
  /** The stage with a sign-in that records what it was started for, and `auth` as the backend's. */
  const credentialsFor = (auth: unknown, page: { elicitationId: string; url: string }, granted: ReadonlyArray<string>) =>
    Credentials.make({
      signIns: {
        start: (backend, scopes) =>
          Effect.sync(() => {
            started.push(scopes)
            subjects.push(backend.subject)
            return { ...page, done: Promise.resolve() }
          }),
        grantedScopes: () => granted
      },
      configOf: (id) => ({ id, url: "http://127.0.0.1:1/mcp", auth }) as never
    })
  const credentials = credentialsFor("oauth", { elicitationId: "e1", url: "http://127.0.0.1:1/auth?x" }, ["mcp:tools"])
  const target = { backendId: "fx", own: "write" }

  it.effect(
    "a client without URL elicitation gets -32042 with the page, for the scopes held and those asked; the call is not tried again",
    () =>
      Effect.gen(function* () {
        // Only this test's sign-ins: the block's tests run in any order.
        started.length = 0
        let tries = 0
        const refused = yield* Effect.result(
          credentials.run(
            call({ via: "client", name: "fx__write", target }),
            () => Effect.suspend(() => (tries++, Effect.fail(insufficient))),
            pageOf("credentials")
          )
        )
        expect(Result.isFailure(refused) && [refused.failure.code, (refused.failure as { data?: unknown }).data]).toEqual([
          -32042,
          {
            elicitations: [
              {
                mode: "url",
                elicitationId: "e1",
                url: "http://127.0.0.1:1/auth?x",
                message: "fx needs you to sign in again to allow notes:write."
              }
            ]
          }
        ])
        expect(tries).toBe(1)
        expect(started).toEqual([["mcp:tools", "notes:write"]])
      })
  )

  /** A user's lane of a `perUser` backend that could not open: they have no token (see backend/Lanes). */
  const noTokenOf = (subject: string) =>
    new BackendError({
      backendId: "fx",
      reason: "call_failed",
      method: "initialize",
      summary: "HTTP 401",
      detail: { code: -32603, message: "needs auth", data: { httpStatus: 401, needsAuth: true, subject } }
    })
  const perUser = credentialsFor(
    { type: "oauth", perUser: true, scopes: ["mcp:tools"] },
    { elicitationId: "e2", url: "http://127.0.0.1:1/auth?y" },
    []
  )
  const aliceSession = () =>
    new Session({
      id: "a",
      edge: HTTP_EDGE,
      send: () => false,
      identity: { subject: "alice", scopes: [], groups: [] }
    })

  it.effect("a perUser backend's user without a token is asked to sign in as themselves, for the configured scopes", () =>
    Effect.gen(function* () {
      started.length = 0
      subjects.length = 0
      const refused = yield* Effect.result(
        perUser.run(
          call({ via: "client", name: "fx__write", target, session: aliceSession() }),
          () => Effect.fail(noTokenOf("alice")),
          pageOf("credentials")
        )
      )
      expect(Result.isFailure(refused) && [refused.failure.code, refused.failure.message]).toEqual([
        -32042,
        "fx acts as each of its users: sign in to it as yourself (alice). Open http://127.0.0.1:1/auth?y and try again."
      ])
      expect(subjects).toEqual(["alice"])
      expect(started).toEqual([["mcp:tools"]])
    })
  )

  it.effect("another user's missing token, or one of a backend not perUser, asks nobody", () =>
    Effect.gen(function* () {
      started.length = 0
      const bobs = noTokenOf("bob")
      const notAlices = yield* Effect.result(
        perUser.run(
          call({ via: "client", name: "fx__write", target, session: aliceSession() }),
          () => Effect.fail(bobs),
          pageOf("credentials")
        )
      )
      expect(Result.isFailure(notAlices) && notAlices.failure).toBe(bobs)
      const alices = noTokenOf("alice")
      const shared = yield* Effect.result(
        credentials.run(
          call({ via: "client", name: "fx__write", target, session: aliceSession() }),
          () => Effect.fail(alices),
          pageOf("credentials")
        )
      )
      expect(Result.isFailure(shared) && shared.failure).toBe(alices)
      expect(started).toEqual([])
    })
  )

  it.effect("any other failure passes untouched, with no sign-in", () =>
    Effect.gen(function* () {
      started.length = 0
      const other = new BackendError({ backendId: "fx", reason: "timeout", summary: "timed out" })
      const failed = yield* Effect.result(
        credentials.run(call({ via: "client", name: "fx__write", target }), () => Effect.fail(other), pageOf("credentials"))
      )
      expect(Result.isFailure(failed) && failed.failure).toBe(other)
      expect(started).toEqual([])
    })
  )
})
