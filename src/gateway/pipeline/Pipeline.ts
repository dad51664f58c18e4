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
 * Each stage declares what it needs of the call, what it provides to the stages after it (`find`
 * the tool it found, `decide` the holds `ask` asks about) and how it fails (see Stage); the table,
 * and any pipeline a test builds with `of`, is checked against those types, so a stage placed
 * before what it needs does not compile. A stage that refuses a call fails it with its error and
 * notes the refusal on its page of the call's trail (see Trail), which no other stage can alter;
 * `record` writes it like any other. The orchestrator and code mode get the pipeline from their
 * context: there is no way to a backend's tool around it.
 */
import { Context, Effect, Layer } from "effect"
import { type GatewayConfig, inForce } from "../../config/Config.js"
import { type Way, wayOf } from "../../call/Vocabulary.js"
import type { GatewayError } from "../../protocol/Errors.js"
import type { CallRequest, ToolCall } from "./Call.js"
import * as Caller from "./Caller.js"
import { CurrentCaller } from "./Caller.js"
import { PlannedCalls } from "../../orchestration/Planned.js"
import type { AnyRow, AnyStage, Nothing, Row, Stage, Unmet, UnmetOnAnyWay } from "./Stage.js"
import * as Trail from "./Trail.js"
import * as Ask from "./stages/Ask.js"
import * as Check from "./stages/Check.js"
import * as Count from "./stages/Count.js"
import * as Credentials from "./stages/Credentials.js"
import * as Decide from "./stages/Decide.js"
import * as Find from "./stages/Find.js"
import * as Forward from "./stages/Forward.js"
import * as Record from "./stages/Record.js"

/**
 * The pipeline's table: a row per stage (see Stage), in the order a call meets them. Each way's
 * table is checked where it is made: a stage that needs what no stage before it provides on some
 * way of calling (`forward` before `find`, `ask` without `decide`) does not compile.
 */
export const TABLE = table([
  Record.stage,
  Find.stage,
  Check.stage,
  Decide.stage,
  Ask.stage,
  Count.stage,
  Credentials.stage,
  Forward.stage
])

/** A table of rows, each way's stages given what they need by the stages before them (see Stage's `Unmet`). */
export function table<const T extends ReadonlyArray<AnyRow>>(rows: T & UnmetOnAnyWay<T>): T {
  return rows
}

type Rows = typeof TABLE

/** What the stages need of the gateway to be built: the layer's requirements, read from the rows. */
type Needs = Rows[number] extends Row<string, infer _N, infer _P, infer _E, infer R, infer _W> ? R : never

/** A stage's name in the table. */
export type StageName = Rows[number]["name"]

/** Every stage's name, in the order a call meets them. */
export const STAGES: ReadonlyArray<StageName> = TABLE.map((row) => row.name)

/** The stages each way of calling meets (a client's own call skips `check` and `ask`: see their rows). */
export const TABLES: Readonly<Record<Way, ReadonlyArray<StageName>>> = tablesOf(TABLE)

function tablesOf<N extends string>(
  rows: ReadonlyArray<{ readonly name: N; readonly ways: ReadonlyArray<Way> }>
): Readonly<Record<Way, ReadonlyArray<N>>> {
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

/** The stages as one function over a call and its trail: each around the next, on its own page; the last must not call on. */
type Composed = (call: ToolCall, trail: Trail.Trail) => Effect.Effect<unknown, GatewayError, CurrentCaller>

const compose = (stages: ReadonlyArray<AnyStage>): Composed =>
  stages.reduceRight<Composed>(
    (next, stage) => (call, trail) => stage.run(call, (on: ToolCall) => next(on, trail), trail.pageOf(stage.name)),
    () => Effect.die(new Error("the call pipeline ended without forwarding the call"))
  )

/**
 * A pipeline of `stages` for every way of calling (tests build one of their own): each stage must
 * be given what it needs by the stages before it, or this does not compile.
 */
export const of = <const S extends ReadonlyArray<AnyStage>>(stages: S & Unmet<S>): CallPipelineService =>
  ofTables(stages, { client: stages, planned: stages, request: stages })

/**
 * The pipeline of the table's names, each way meeting its rows' stages, from stages that need
 * nothing of one another (a test's, to see which stages each way meets).
 */
export const ofStages = (stageOf: (name: StageName) => Stage<Nothing, Nothing, GatewayError>): CallPipelineService => {
  const named = (names: ReadonlyArray<StageName>) => names.map(stageOf)
  return ofTables(named(STAGES), { client: named(TABLES.client), planned: named(TABLES.planned), request: named(TABLES.request) })
}

/**
 * A pipeline whose calls take their way's table, composed once. Each call has a trail of its own,
 * copied to the caller's `decisions` as it ends, whatever its end.
 */
const ofTables = (
  every: ReadonlyArray<AnyStage>,
  tables: Readonly<Record<Way, ReadonlyArray<AnyStage>>>
): CallPipelineService => {
  const ways: Readonly<Record<Way, Composed>> = {
    client: compose(tables.client),
    planned: compose(tables.planned),
    request: compose(tables.request)
  }
  return {
    stages: every.map((s) => s.name),
    run: ({ decisions: told, ...request }) =>
      Effect.flatMap(CurrentCaller, (caller) => {
        const trail = Trail.make()
        const ran = ways[wayOf(request)]({ ...request, session: caller.session, confirm: caller.confirm }, trail)
        return told === undefined
          ? ran
          : Effect.ensuring(
              ran,
              Effect.sync(() => told.push(...trail.decisions()))
            )
      })
  }
}

/** Every row's stage, built on the configuration in force (followed as it reloads), met by the ways its row names. */
const make = Effect.gen(function* () {
  const current = yield* inForce
  // Each row's stage as the pipeline runs it: its table was checked where it was made (see `table`).
  const build = (row: Rows[number]): Effect.Effect<AnyStage, never, Needs> => row.build(current)
  const built = yield* Effect.forEach(TABLE, (row) =>
    Effect.map(build(row), (stage) => ({ ways: row.ways as ReadonlyArray<Way>, stage }))
  )
  const of = (way: Way) => built.filter((b) => b.ways.includes(way)).map((b) => b.stage)
  return ofTables(
    built.map((b) => b.stage),
    { client: of("client"), planned: of("planned"), request: of("request") }
  )
})

export class CallPipeline extends Context.Service<CallPipeline, CallPipelineService>()("mcp-agentify/CallPipeline") {
  /**
   * Every stage as configured; `decide` holds the policies' rule, the flow guard's, then an app's own
   * (`Rule.AppRules`, provided beside this layer).
   */
  static readonly layer: Layer.Layer<CallPipeline, never, GatewayConfig | Needs> = Layer.effect(CallPipeline, make)
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
