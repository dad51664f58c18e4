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
import { idPrefixOf } from "../../store/Replica.js"
import { Context, Effect, Layer, Stream } from "effect"
import { Backends } from "../../backend/Backends.js"
import { GatewayConfig, type Profile, type ResolvedConfig } from "../../config/Config.js"
import { Audit } from "./Audit.js"
import { Forwarder } from "./Forwarding.js"
import { Routes } from "../routing/Routes.js"
import type { GatewayError } from "../../protocol/Errors.js"
import { type CallRequest, make as makeCall, STAGES, type StageName, TABLES, type Way, wayOf } from "./Call.js"
import * as Caller from "./Caller.js"
import { CurrentCaller } from "./Caller.js"
import { PlannedCalls } from "../../orchestration/Planned.js"
import type { Next, Stage } from "./Stage.js"
import * as Ask from "./stages/Ask.js"
import * as Check from "./stages/Check.js"
import * as Count from "./stages/Count.js"
import * as Credentials from "./stages/Credentials.js"
import { SignIns } from "../../auth/SignIns.js"
import * as Decide from "./stages/Decide.js"
import * as FlowRules from "./FlowRules.js"
import * as PolicyChecks from "./PolicyChecks.js"
import { Policies } from "../../policy/Policies.js"
import { TeamQuotas } from "../../store/TeamQuotas.js"
import * as Find from "./stages/Find.js"
import * as Forward from "./stages/Forward.js"
import * as Record from "./stages/Record.js"

export interface CallPipelineService {
  /** Every stage's name, in the order a call meets them (a way of calling may skip some: see Call.TABLES). */
  readonly stages: ReadonlyArray<StageName>
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

/** The pipeline of every way's table (Call.TABLES), from a stage for each name. */
export const ofStages = (stages: Readonly<Record<StageName, Stage>>): CallPipelineService =>
  ofTables(
    STAGES.map((name) => stages[name]),
    {
      client: TABLES.client.map((name) => stages[name]),
      planned: TABLES.planned.map((name) => stages[name]),
      request: TABLES.request.map((name) => stages[name])
    }
  )

/** A pipeline whose calls take their way's table (see Call.TABLES), composed once. */
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

/** A profile a reload removed admits nothing. */
const NO_PROFILE: Profile = { backends: [] }

const make = (rules: ReadonlyArray<Decide.Rule>) =>
  Effect.gen(function* () {
    const config = yield* GatewayConfig
    const backends = yield* Backends
    const audit = yield* Audit
    const forwarder = yield* Forwarder
    const routes = yield* Routes
    const policies = yield* Policies
    const signIns = yield* SignIns
    // The configuration in force, at hand on every call.
    let current: ResolvedConfig = yield* config.current
    yield* config.changes.pipe(
      Stream.runForEach((next) => Effect.sync(() => (current = next))),
      Effect.forkScoped
    )
    const profileOf = (session: Caller.Caller["session"]): Profile | undefined => {
      const name = session?.target._tag === "Aggregate" ? session.target.profile : undefined
      return name === undefined ? undefined : (current.profiles[name] ?? NO_PROFILE)
    }
    const flowOf = (backendId: string) => backends.configOf(backendId)?.flow
    // This gateway's counters, or the team's in its store.
    const quotas = yield* TeamQuotas
    const stages: Record<StageName, Stage> = {
      record: Record.make(audit, () => current.maxReplyBytes),
      find: Find.make({ backends, profileOf }),
      check: Check.make(),
      decide: Decide.make([
        PolicyChecks.rule({ policies: policies.current, flowOf }, backends.configOf),
        ...FlowRules.rules({ mode: () => current.flowGuard, flowOf }),
        ...rules
      ]),
      ask: Ask.make(() => current.confirmTools),
      count: Count.make(() => current.limits, quotas.take),
      credentials: Credentials.make({ signIns, configOf: backends.configOf }),
      forward: Forward.make({ forwarder, backends, routes, idPrefix: () => idPrefixOf(current) })
    }
    return ofStages(stages)
  })

export class CallPipeline extends Context.Tag("mcp-agentify/CallPipeline")<CallPipeline, CallPipelineService>() {
  /** Every stage as configured; `decide` holds the flow guard's rules. */
  static readonly layer: Layer.Layer<
    CallPipeline,
    never,
    GatewayConfig | Backends | Audit | Forwarder | Routes | Policies | SignIns | TeamQuotas
  > = Layer.scoped(CallPipeline, make([]))
  /** With rules of the caller's in `decide` after the flow guard's (an embedding app's own). */
  static readonly layerWith = (
    rules: ReadonlyArray<Decide.Rule>
  ): Layer.Layer<CallPipeline, never, GatewayConfig | Backends | Audit | Forwarder | Routes | Policies | SignIns | TeamQuotas> =>
    Layer.scoped(CallPipeline, make(rules))
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
