/**
 * The gateway's own work for a session: `agentify_orchestrate` and `agentify/orchestrateTask` (its
 * model's orchestration) and `agentify_run_code` (a script). Each is refused first when the
 * policies deny it, audited as one run, run as a task when the client asks for one, and its calls,
 * requests and questions are the session's (see pipeline/Caller).
 */
import { Effect, Semaphore } from "effect"
import type { GatewayConfig } from "../../config/Config.js"
import { type AskError, type GatewayError, InvalidParams, toRpcError } from "../../protocol/Errors.js"
import * as Secrets from "../../observability/Secrets.js"
import { isCallToolResult, textResult } from "../../protocol/Mcp.js"
import { type Confirm, ORCHESTRATE_TOOL, type Orchestrator, validateParams } from "../../orchestration/Orchestrator.js"
import * as Progress from "../routing/Progress.js"
import { cutText, MODEL_MESSAGE_CHARS, OrchestrationFailed } from "../../orchestration/Errors.js"
import * as RunCode from "../../orchestration/code/Code.js"
import * as Call from "../pipeline/Call.js"
import * as PolicyChecks from "../pipeline/PolicyChecks.js"
import type { CallPipelineService } from "../pipeline/Pipeline.js"
import type { RequestContext } from "../../jsonrpc/Peer.js"
import * as Params from "./Params.js"
import type { Session } from "../session/Session.js"
import * as Caller from "../pipeline/Caller.js"
import { CurrentCaller } from "../pipeline/Caller.js"
import type { ForwarderService } from "../pipeline/Forwarding.js"
import { Apps, namespaced, profileAdmits } from "../../catalog/ToolCatalog.js"
import { field } from "../../json/Json.js"
import * as Meta from "../../json/Meta.js"
import * as Tasks from "../routing/Tasks.js"
import type * as RunTasks from "../routing/RunTasks.js"
import * as Audit from "../pipeline/Audit.js"
import type { View } from "./View.js"
import type { BackendsService } from "../../backend/Backends.js"

/** What the gateway's own work uses of the gateway (the aggregate's context gives it). */
export interface Deps {
  readonly backends: BackendsService
  readonly orchestrator: Orchestrator["Service"]
  readonly config: GatewayConfig["Service"]
  readonly runTasks: RunTasks.RunTasks
  readonly audit: Audit.AuditService
  readonly pipeline: CallPipelineService
  readonly policies: PolicyChecks.Settings
  readonly forward: ForwarderService["forward"]
}

/** The agentify_orchestrate tool: the last result's content, then the model's closing words, if any. */
const withAnswerText = (result: unknown): unknown => {
  const answer = Meta.get(result, "agentify/answer")
  if (typeof answer !== "string" || !isCallToolResult(result)) return result
  return { ...result, content: [...result.content, { type: "text", text: answer }] }
}

/**
 * Asks this client's user whether a tool may run (`confirmTools`), as a request of the session's
 * own on the orchestration's stream: `elicitation/create` for a client that declared elicitation
 * (a 2026-07-28 client gets it as an `input_required` result). A client error is no agreement.
 */
const confirmOf =
  (session: Session, context: RequestContext, ask: RunTasks.Ask | undefined): Confirm =>
  ({ tool, arguments: args, why }) => {
    if (session.clientCapabilities.elicitation === undefined) return Effect.succeed("unavailable")
    const params = {
      message: `Allow ${tool} to run with these arguments?\n${JSON.stringify(args, null, 2)}${
        why === undefined ? "" : `\nThe gateway holds it because:\n${why}`
      }`,
      requestedSchema: { type: "object", properties: {} }
    }
    // In a task the question waits in its inputRequests; otherwise it is a request to the client.
    const asked: Effect.Effect<unknown, AskError> =
      ask === undefined ? session.request("elicitation/create", params, context) : ask("elicitation/create", params)
    return asked.pipe(
      Effect.map((answer) => (field(answer, "action") === "accept" ? "accepted" : "declined")),
      Effect.catch((error) =>
        Effect.as(Effect.logInfo(`confirmation of ${tool} not given: ${error.message}`), "declined" as const)
      )
    )
  }

/**
 * An orchestration or script runs as a task of the gateway's (see RunTasks) for a 2026-07-28
 * client that declared the tasks extension, and for a session-era `tools/call` that asked for one
 * (`task`): the client gets its id at once. Anyone else: the result.
 */
const asTaskWhenAsked = (
  runTasks: RunTasks.RunTasks,
  session: Session,
  body: (ask: RunTasks.Ask | undefined) => Effect.Effect<unknown, GatewayError, CurrentCaller>,
  taskAsked: boolean,
  sent: unknown
): Effect.Effect<unknown, GatewayError, CurrentCaller> => {
  const asTask = Tasks.wantsTask(session) ? "extension" : taskAsked && !Tasks.statelessClient(session) ? "session" : undefined
  if (asTask === undefined) return body(undefined)
  // A task runs after its request was answered: as that request's caller still.
  return Effect.flatMap(CurrentCaller, (caller) => {
    const run = (ask: RunTasks.Ask | undefined) => Caller.as(caller)(body(ask))
    return asTask === "extension"
      ? runTasks.start(Tasks.ownerOf(session), run, "extension", undefined, sent)
      : // Its questions go to the session's own stream: the call that started it has been answered.
        runTasks.start(Tasks.ownerOf(session), run, "session", (method, params) => session.request(method, params), sent)
  })
}

/** A script whose every call goes `call`'s way (see RunCode); none when code mode is off. */
const runScript = (ctx: Deps, view: View, call: Call.RunPlanned, args: unknown): Effect.Effect<unknown, GatewayError> =>
  Effect.flatMap(ctx.config.current, (config) => {
    const { backends } = ctx
    if (config.codeMode === false) {
      return Effect.fail(
        new InvalidParams({
          message: `Unknown tool: ${RunCode.RUN_CODE_TOOL_NAME} (codeMode is false in the gateway's configuration)`,
          issues: [`name: no tool named '${RunCode.RUN_CODE_TOOL_NAME}'`]
        })
      )
    }
    return RunCode.run(args, {
      catalog: () => Apps.forModel(view.catalog()),
      namespaceOf: view.namespaceOfBackend,
      settings: config.codeMode,
      call,
      // The tools held back as changed since pinned, that this session's profile would list.
      held: () =>
        backends.toolsSync().flatMap((listed) => {
          const backend = backends.configOf(listed.backendId)
          if (listed.pinMode !== "quarantine" || backend === undefined) return []
          return (listed.changed ?? [])
            .map((c) => ({ exposed: namespaced(backend, c.name), backendId: listed.backendId }))
            .filter((h) => profileAdmits(view.profile(), h.backendId, h.exposed))
        })
    })
  })

export const make = (ctx: Deps, session: Session, view: View) => {
  const { orchestrator } = ctx
  const { modelProfile, allowed } = view

  const confirmWith = (context: RequestContext, ask: RunTasks.Ask | undefined) => confirmOf(session, context, ask)

  const maybeTask = (
    body: (ask: RunTasks.Ask | undefined) => Effect.Effect<unknown, GatewayError, CurrentCaller>,
    taskAsked: boolean,
    sent: unknown
  ) => asTaskWhenAsked(ctx.runTasks, session, body, taskAsked, sent)

  /**
   * An orchestration or script run, recorded in the audit log (when on) as one line; its calls
   * name it as their `parent`.
   */
  const audited = <R>(kind: "orchestration" | "script", input: unknown, body: Effect.Effect<unknown, GatewayError, R>) =>
    Audit.run(ctx.audit, kind, session, input, body)

  /**
   * An orchestration as this session's, whichever way it was asked for (the tool or the method):
   * its calls are the session's (policies judge its user, its profile and lanes apply, the audit
   * names it), its requests on backends are the session's, its questions go to this client.
   */
  const orchestrateFor = (
    request: Parameters<typeof orchestrator.orchestrate>[0],
    context: RequestContext,
    progressToken: unknown,
    ask: RunTasks.Ask | undefined
  ) =>
    Effect.flatMap(CurrentCaller, (caller) =>
      orchestrator.orchestrate(request, {
        call: planned(caller, context, ask),
        onStep: Progress.ofSteps(context, progressToken),
        confirm: confirmWith(context, ask),
        profile: modelProfile()
      })
    )

  /**
   * The agentify_orchestrate tool: its failures are results with isError, naming the code. When the
   * model answered without calling a tool, its words are the text (most clients show only that).
   * Such a result is no error reply, yet carries the error's wire form (its code, its scrubbed
   * message and data, in the text and `structuredContent.error`): so the mapping is made here.
   */
  const orchestrateTool = (args: unknown, context: RequestContext, progressToken: unknown, ask: RunTasks.Ask | undefined) =>
    Effect.flatMap(Effect.fromResult(validateParams(args)), (request) =>
      orchestrateFor(request, context, progressToken, ask)
    ).pipe(
      Effect.map(withAnswerText),
      Effect.catch((error) => {
        const wire = toRpcError(error, args)
        const said = error._tag === "NoActionDetermined" ? error.modelMessage : undefined
        const text =
          said === undefined || said.trim() === ""
            ? `Error ${wire.code}: ${wire.message}`
            : `Error ${wire.code}: ${wire.message}\n\nThe model answered: ${Secrets.scrub(cutText(said, MODEL_MESSAGE_CHARS))}`
        return Effect.succeed({ ...textResult(text, true), structuredContent: { error: wire } })
      })
    )

  /**
   * The gateway's own planned calls (an orchestration's steps, a script's calls) as this session's.
   * Their questions are put one at a time, though the calls of a turn run together.
   */
  const planned = (caller: Caller.Caller, context: RequestContext, ask: RunTasks.Ask | undefined): Call.RunPlanned => {
    const oneAtATime = Semaphore.makeUnsafe(1)
    const confirm = confirmWith(context, ask)
    const asked: Confirm = (question) => oneAtATime.withPermits(1)(confirm(question))
    const asker = Caller.as({ ...caller, confirm: asked })
    return (p) => asker(ctx.pipeline.run({ ...p, context }))
  }

  /** `agentify_run_code`: a script whose every call goes this session's way (see RunCode). */
  const runCode = (args: unknown, context: RequestContext, ask: RunTasks.Ask | undefined) =>
    Effect.flatMap(CurrentCaller, (caller) => runScript(ctx, view, planned(caller, context, ask), args))

  /** An orchestration asked for by its method: its failure, as it is, with the query (added to its data on the wire). */
  const orchestrateTask = (params: unknown, context: RequestContext) =>
    maybeTask(
      (ask) =>
        audited(
          "orchestration",
          field(params, "query"),
          Effect.flatMap(
            Effect.andThen(allowed("orchestrate", ORCHESTRATE_TOOL.name, params), Effect.fromResult(validateParams(params))),
            (request) => orchestrateFor(request, context, Progress.tokenOf(params), ask)
          ).pipe(
            Effect.mapError((failure) => {
              const query = field(params, "query")
              return new OrchestrationFailed({ failure, query: typeof query === "string" ? query : undefined })
            })
          )
        ),
      false,
      ["agentify/orchestrateTask", params]
    )

  /** A call of one of the gateway's own tools: its run; undefined for any other tool. */
  const call = (
    p: Params.CallToolParams,
    context: RequestContext
  ): Effect.Effect<unknown, GatewayError, CurrentCaller> | undefined => {
    // Refused first when the policies deny it, audited as one run, a task when the client asks.
    const run = (
      kind: "orchestration" | "script",
      input: unknown,
      body: (ask: RunTasks.Ask | undefined) => Effect.Effect<unknown, GatewayError, CurrentCaller>
    ) =>
      maybeTask(
        (ask) =>
          audited(
            kind,
            input,
            Effect.andThen(allowed(kind === "script" ? "run_code" : "orchestrate", p.name, p.arguments), body(ask))
          ),
        p.task !== undefined,
        ["tools/call", p]
      )
    if (p.name === ORCHESTRATE_TOOL.name) {
      return run("orchestration", field(p.arguments, "query"), (ask) =>
        orchestrateTool(p.arguments ?? {}, context, Progress.tokenOf(p), ask)
      )
    }
    if (p.name === RunCode.RUN_CODE_TOOL_NAME) {
      return run("script", field(p.arguments, "code"), (ask) => runCode(p.arguments ?? {}, context, ask))
    }
    return undefined
  }

  return { call, orchestrateTask }
}
