/**
 * The stages' types and the call's trail: a pipeline whose stage needs what no stage before it
 * provides does not compile (these tests are checked by tsc: each `@ts-expect-error` fails the
 * type check if its pipeline compiles), and no stage alters, removes or speaks for what an earlier
 * stage said of a call.
 */
import { describe, expect } from "@effect/vitest"
import { itEffect as it, runAsItsCaller } from "../../../support/caller.js"
import { Effect } from "effect"
import type { BackendsService } from "../../../../src/backend/Backends.js"
import * as Call from "../../../../src/gateway/pipeline/Call.js"
import * as Pipeline from "../../../../src/gateway/pipeline/Pipeline.js"
import type { Stage } from "../../../../src/gateway/pipeline/Stage.js"
import type * as Trail from "../../../../src/gateway/pipeline/Trail.js"
import * as Ask from "../../../../src/gateway/pipeline/stages/Ask.js"
import * as Decide from "../../../../src/gateway/pipeline/stages/Decide.js"
import * as Find from "../../../../src/gateway/pipeline/stages/Find.js"
import * as Forward from "../../../../src/gateway/pipeline/stages/Forward.js"
import * as Record from "../../../../src/gateway/pipeline/stages/Record.js"
import type { AuditService, CallLine } from "../../../../src/gateway/pipeline/Audit.js"
import * as AuditRun from "../../../../src/observability/AuditRun.js"
import { Routes } from "../../../../src/gateway/routing/Routes.js"
import { Session } from "../../../../src/gateway/session/Session.js"
import type { Decision } from "../../../../src/call/Vocabulary.js"
import { EDGE as HTTP_EDGE } from "../../../../src/gateway/clients/SharedSessions.js"

/** One ready backend with one read-only tool. */
const backends = {
  toolsSync: () => [
    {
      backendId: "fx",
      tools: [{ name: "read", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } }],
      exposure: { id: "fx" }
    }
  ],
  configOf: (id: string) => ({ id }),
  states: Effect.succeed([]),
  backend: () => undefined,
  startOnUse: () => undefined
} as unknown as BackendsService

const find = Find.make({ backends, profileOf: () => undefined })

const call = (via: Call.Via, name: string) =>
  Call.make({
    session: new Session({ id: "s", edge: HTTP_EDGE, send: () => false }),
    context: undefined,
    via,
    name,
    params: { name, arguments: {} }
  })

/** The audit log off: `record` adds nothing. */
const noAudit: AuditService = { enabled: false, parent: AuditRun.current, call: () => {}, run: () => {} }

describe("what a stage needs and provides", () => {
  /** A forwarder that answers every call, noting the backend and own name it was sent to. */
  const forwarding = (sent: Array<string>) =>
    Effect.map(Routes, (routes) =>
      Forward.make({
        forwarder: {
          forward: (_context, backendId, _method, params) =>
            Effect.sync(() => (sent.push(`${backendId} ${String((params as { name: string }).name)}`), { content: [] }))
        },
        backends,
        routes,
        idPrefix: () => ""
      })
    )

  it.effect("a pipeline whose stage needs what no stage before it provides does not compile (checked by tsc)", () =>
    Effect.gen(function* () {
      const sent: Array<string> = []
      const forward = yield* forwarding(sent)
      const ask = Ask.make(() => "never")
      // @ts-expect-error forward needs the target find provides, and nothing before it provides one
      Pipeline.of([Record.make(noAudit), forward, find])
      // @ts-expect-error ask needs the consent decide provides
      Pipeline.of([find, ask, forward])
      // @ts-expect-error a table is checked on each way: with find on planned calls only, a client's call reaches forward without it
      Pipeline.table([{ ...Find.stage, ways: ["planned"] as const }, Forward.stage])
      // In order, every stage gets what it needs: forward sends the call under the tool find found.
      const pipeline = Pipeline.of([Record.make(noAudit), find, Decide.make(), ask, forward])
      yield* runAsItsCaller(pipeline, call("script", "fx__read"))
      expect(sent).toEqual(["fx read"])
    }).pipe(Effect.provide(Routes.layer))
  )

  it.effect("a stage cannot alter what an earlier one said, nor speak for it: record and the caller get the trail as said", () =>
    Effect.gen(function* () {
      const lines: Array<CallLine> = []
      const audit: AuditService = { enabled: true, parent: AuditRun.current, call: (l) => lines.push(l), run: () => {} }
      const attempts: Array<string> = []
      const attempt = (what: string, change: () => unknown) => {
        try {
          change()
          attempts.push(`${what}: changed`)
        } catch (error) {
          attempts.push(`${what}: ${error instanceof TypeError ? "refused" : String(error)}`)
        }
      }
      // After find, a stage that tries to take back what find said, and to say it in find's name.
      const meddler: Stage = {
        name: "meddler",
        run: (c, next, trail) => {
          const seen = trail.decisions()
          attempt("remove", () => (seen as Array<Decision>).splice(0))
          attempt("rewrite", () => Object.assign(seen[0]!, { said: "Unknown tool", refused: true }))
          attempt("retarget", () => Object.assign(seen[0]!.target!, { backendId: "other" }))
          trail.note({ stage: "find", said: "not found" } as Trail.Said)
          return next(c)
        }
      }
      const forward = yield* forwarding([])
      const made = call("client", "fx__read")
      yield* runAsItsCaller(Pipeline.of([Record.make(audit), find, meddler, forward]), made)
      expect(attempts).toEqual(["remove: refused", "rewrite: refused", "retarget: refused"])
      expect(made.decisions).toEqual([
        { stage: "find", said: "found", target: expect.objectContaining({ backendId: "fx", own: "read" }) },
        { stage: "meddler", said: "not found" },
        { stage: "forward", said: "sent to its backend", at: expect.any(Number) }
      ])
      expect(lines.map((l) => [l.backend, l.tool.own, l.outcome, l.refusedBy])).toEqual([["fx", "read", "ok", undefined]])
    }).pipe(Effect.provide(Routes.layer))
  )
})
