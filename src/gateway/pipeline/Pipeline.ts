/**
 * The call pipeline: the one road every tool call on a backend takes, however it was made (a
 * client's own `tools/call`, a call at a backend's own endpoint, a stateless request, an
 * orchestration's step, a script's call, a call that creates a task). An ordered table of stages,
 * each a module with one job (see stages/), each run around the rest as middleware:
 *
 *   record  the audit line and the span, around everything after it, refusals included
 *   find    the tool as this caller may call it (profile, filters, quarantine)
 *   check   a planned call's arguments against the inputSchema
 *   decide  named rules that may hold a call: the policies' (see PolicyChecks), the flow guard's
 *           (see FlowRules), then an app's own
 *   ask     `confirmTools` for a planned call
 *   count   `limits`: calls per minute and at once, per subject, tool and backend
 *   credentials  a remote backend's 403 insufficient_scope: the user signs in for more, once
 *   forward to the backend, as the session's request
 *
 * A stage that refuses a call fails it with its error and notes the refusal in the call's
 * decisions; `record` writes it like any other. The orchestrator and code mode get the pipeline
 * from their context: there is no way to a backend's tool around it.
 */
import { Context, Effect, Layer } from "effect"
import { type GatewayConfig, inForce } from "../../config/Config.js"
import { type Way, wayOf } from "../../call/Vocabulary.js"
import type { GatewayError } from "../../protocol/Errors.js"
import { type CallRequest, make as makeCall } from "./Call.js"
import * as Caller from "./Caller.js"
import { CurrentCaller } from "./Caller.js"
import { PlannedCalls } from "../../orchestration/Planned.js"
import type { Next, Row, Stage } from "./Stage.js"
import * as Ask from "./stages/Ask.js"
import * as Check from "./stages/Check.js"
import * as Count from "./stages/Count.js"
import * as Credentials from "./stages/Credentials.js"
import * as Decide from "./stages/Decide.js"
import * as Find from "./stages/Find.js"
import * as Forward from "./stages/Forward.js"
import * as Record from "./stages/Record.js"

/** The pipeline's table: a row per stage (see Stage), in the order a call meets them. */
export const TABLE = [
  Record.stage,
  Find.stage,
  Check.stage,
  Decide.stage,
  Ask.stage,
  Count.stage,
  Credentials.stage,
  Forward.stage
] as const

/** What the stages need of the gateway to be built: the layer's requirements, read from the rows. */
type Needs = (typeof TABLE)[number] extends Row<infer R> ? R : never

/** Every stage's name, in the order a call meets them. */
export const STAGES: ReadonlyArray<string> = TABLE.map((row) => row.name)

/** The stages each way of calling meets (a client's own call skips `check` and `ask`: see their rows). */
export const TABLES: Readonly<Record<Way, ReadonlyArray<string>>> = tablesOf(TABLE)

function tablesOf(rows: ReadonlyArray<Pick<Row<unknown>, "name" | "ways">>): Readonly<Record<Way, ReadonlyArray<string>>> {
  const of = (way: Way) => rows.filter((row) => row.ways.includes(way)).map((row) => row.name)
  return { client: of("client"), planned: of("planned"), request: of("request") }
}

export interface CallPipelineService {
  /** Every stage's name, in the order a call meets them (a way of calling may skip some: see TABLES). */
  readonly stages: ReadonlyArray<string>
  /**
   * Runs a call for the current caller (see Caller: whoever runs it must provide one) through every
   * stage: the backend's result, or the error of the stage that refused it.
   */
  readonly run: (call: CallRequest) => Effect.Effect<unknown, GatewayError, CurrentCaller>
}

/** The stages as one function: each around the next; the last must not call on. */
export const compose = (stages: ReadonlyArray<Stage>): Next =>
  stages.reduceRight<Next>(
    (next, stage) => (call) => stage.run(call, next),
    () => Effect.dieMessage("the call pipeline ended without forwarding the call")
  )

/** A pipeline of `stages` for every way of calling (tests build one of their own). */
export const of = (stages: ReadonlyArray<Stage>): CallPipelineService =>
  ofTables(stages, { client: stages, planned: stages, request: stages })

/** The pipeline of the table's rows, from a stage for each name (each way meets its rows' stages). */
export const ofStages = (stages: Readonly<Record<string, Stage>>): CallPipelineService => {
  const named = (names: ReadonlyArray<string>) =>
    names.map((name) => stages[name] ?? { name, run: () => Effect.dieMessage(`the call pipeline has no stage '${name}'`) })
  return ofTables(named(STAGES), { client: named(TABLES.client), planned: named(TABLES.planned), request: named(TABLES.request) })
}

/** A pipeline whose calls take their way's table, composed once. */
const ofTables = (every: ReadonlyArray<Stage>, tables: Readonly<Record<Way, ReadonlyArray<Stage>>>): CallPipelineService => {
  const ways: Readonly<Record<Way, Next>> = {
    client: compose(tables.client),
    planned: compose(tables.planned),
    request: compose(tables.request)
  }
  return {
    stages: every.map((s) => s.name),
    run: (request) =>
      Effect.flatMap(CurrentCaller, (caller) =>
        ways[wayOf(request)](makeCall({ ...request, session: caller.session, confirm: caller.confirm }))
      )
  }
}

/** Every row's stage, built on the configuration in force (followed as it reloads). */
const make = Effect.gen(function* () {
  const current = yield* inForce
  const built = yield* Effect.forEach(TABLE, (row: Row<Needs>) =>
    Effect.map(row.build(current), (stage): [string, Stage] => [row.name, { name: row.name, run: stage.run }])
  )
  return ofStages(Object.fromEntries(built))
})

export class CallPipeline extends Context.Tag("mcp-agentify/CallPipeline")<CallPipeline, CallPipelineService>() {
  /**
   * Every stage as configured; `decide` holds the policies' rule, the flow guard's, then an app's own
   * (`Rule.AppRules`, provided beside this layer).
   */
  static readonly layer: Layer.Layer<CallPipeline, never, GatewayConfig | Needs> = Layer.scoped(CallPipeline, make)
}

/**
 * The pipeline as the orchestrator asks for it when it is given no way to run its calls
 * (orchestration/Planned): an app that embeds the orchestrator without a client, its calls made
 * for nobody. The gateway always gives its session's (see Aggregate).
 */
export const layerPlanned: Layer.Layer<PlannedCalls, never, CallPipeline> = Layer.effect(
  PlannedCalls,
  Effect.map(CallPipeline, (pipeline) => ({
    run: (planned, confirm) => Caller.as({ ...CurrentCaller.nobody, confirm })(pipeline.run({ ...planned, context: undefined }))
  }))
)
