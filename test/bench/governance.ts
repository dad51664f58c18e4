/**
 * What governance costs a call, in this process: the `decide` stage's policy rule (principal and
 * tool built, the Cedar engine asked) for a policy that does not read the arguments (its answer
 * kept after the first call) and for one that does (the engine every time), against no policy
 * file; and the `count` stage's quota bookkeeping (three limits taken and given back).
 */
import { Effect } from "effect"
import { performance } from "node:perf_hooks"
import * as Call from "../../src/gateway/pipeline/Call.js"
import * as PolicyChecks from "../../src/gateway/pipeline/PolicyChecks.js"
import { local, Quotas } from "../../src/store/TeamQuotas.js"
import * as Count from "../../src/gateway/pipeline/stages/Count.js"
import * as Trail from "../../src/gateway/pipeline/Trail.js"
import { Session } from "../../src/gateway/session/Session.js"
import * as Cedar from "../../src/policy/Cedar.js"
import type { PolicySet } from "../../src/policy/Policy.js"
import { percentile } from "./client.js"
import * as Caller from "../../src/gateway/pipeline/Caller.js"
import { EDGE as HTTP_EDGE } from "../../src/gateway/clients/SharedSessions.js"

const POLICIES = `
@id("everyone-reads") permit (principal, action == Action::"call", resource) when { resource.readOnly };
@id("ops-do-anything") permit (principal in Group::"ops", action, resource);
@id("no-etc") forbid (principal, action == Action::"call", resource in Backend::"fs")
  when { context.arguments has path && context.arguments.path like "/etc/*" };
@id("scripts-never-delete") forbid (principal, action == Action::"call", resource == Tool::"fs__delete") when { context.via == "script" };
`

const round4 = (n: number) => Math.round(n * 10_000) / 10_000

const time = (runs: number, body: (i: number) => void) => {
  for (let i = 0; i < Math.min(2_000, runs); i++) body(i)
  const samples = new Float64Array(runs)
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    body(i)
    samples[i] = performance.now() - start
  }
  samples.sort()
  return { p50: round4(percentile(samples, 50)), p99: round4(percentile(samples, 99)) }
}

const entryOf = (name: string, readOnly: boolean) => {
  const tool = { name, inputSchema: { type: "object" }, annotations: { readOnlyHint: readOnly, openWorldHint: false } }
  const own = name.split("__")[1]!
  return { name, backendId: name.split("__")[0]!, toolName: own, baseName: own, source: tool, tool }
}

export const benchGovernance = (quick: boolean) => {
  const loaded = Cedar.load("bench.cedar", POLICIES)
  if ("problems" in loaded) throw new Error(loaded.problems.join("; "))
  const set: PolicySet = loaded
  const session = new Session({
    id: "bench",
    edge: HTTP_EDGE,
    identity: { subject: "alice", scopes: ["mcp:tools"], groups: ["ops"] },
    send: () => false
  })
  const callOf = (name: string, readOnly: boolean, args: Record<string, unknown>) =>
    Call.make({
      session,
      context: undefined,
      via: "client",
      name,
      params: { name, arguments: args },
      target: { backendId: name.split("__")[0]!, own: name.split("__")[1]!, entry: entryOf(name, readOnly) as never }
    })
  const ruleWith = (policies: PolicySet | undefined) => PolicyChecks.rule({ policies: () => policies, flowOf: () => undefined })
  const judge = (rule: ReturnType<typeof ruleWith>, call: Call.ToolCall) => {
    if (Effect.runSync(rule.refuses(call)) !== undefined) throw new Error(`refused: ${call.name}`)
  }
  const runs = quick ? 5_000 : 50_000
  const none = ruleWith(undefined)
  const on = ruleWith(set)
  // github's tools: no policy reads their arguments, so an answer per user and tool is kept.
  const kept = callOf("github__list_issues", true, { repo: "acme/app", state: "open" })
  // fs's: "no-etc" reads the path, so the engine is asked every time.
  const args = (i: number) => ({ path: `/home/alice/notes/${i % 100}.md`, content: "Meeting notes for Friday" })
  const asked = (i: number) => callOf("fs__write", false, args(i))
  // The least a decision by the engine costs on this machine now: one permit reading one fact.
  const floorSet = Cedar.load("floor.cedar", 'permit (principal, action, resource) when { context.via == "client" };')
  if ("problems" in floorSet) throw new Error(floorSet.problems.join("; "))
  const floorRequest = (i: number) =>
    floorSet.decide({
      principal: { id: "alice", scopes: [], groups: [], profile: "", client: "" },
      action: "call",
      resource: { type: "Tool", id: `t${i % 2}`, backend: "b" },
      via: "client"
    })
  const results = {
    floor: time(runs, floorRequest),
    noPolicies: time(runs, (i) => judge(none, asked(i))),
    kept: time(runs, () => judge(on, kept)),
    engine: time(runs, (i) => judge(on, asked(i)))
  }
  // Quotas: a subject's, a tool's and a backend's limit, each taken and given back (never refused: the page stays empty).
  const page = Trail.make().pageOf("count")
  const count = Count.make(
    () => ({
      subject: { callsPerMinute: 1_000_000_000, concurrent: 1_000 },
      tools: { "fs__*": { callsPerMinute: 1_000_000_000 } },
      backends: { fs: { concurrent: 1_000 } }
    }),
    local(new Quotas()).take
  )
  const quotas = time(runs, (i) =>
    Effect.runSync(Caller.as(Caller.CurrentCaller.nobody)(count.run(asked(i), () => Effect.void, page)))
  )
  const noQuotas = time(runs, (i) =>
    Effect.runSync(
      Caller.as(Caller.CurrentCaller.nobody)(
        Count.make(() => undefined, local(new Quotas()).take).run(asked(i), () => Effect.void, page)
      )
    )
  )
  return {
    cedar: Cedar.version(),
    policies: {
      ...results,
      addedKeptP50: round4(results.kept.p50 - results.noPolicies.p50),
      addedEngineP50: round4(results.engine.p50 - results.noPolicies.p50)
    },
    quotas: { none: noQuotas, three: quotas, addedP50: round4(quotas.p50 - noQuotas.p50) }
  }
}
