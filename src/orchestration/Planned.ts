/**
 * What the orchestrator and code mode need of whoever runs their tool calls: a call they planned
 * (an orchestration's step, a script's call) handed on to be run, and the service that runs it.
 * The gateway provides it with its call pipeline (gateway/pipeline), which adds who asks and for which
 * request; an app that embeds the orchestrator gets the same pipeline from its layer. Declared
 * here, below the gateway, so that orchestration never imports what runs its calls.
 */
import { Context, Effect } from "effect"
import * as Secrets from "../observability/Secrets.js"
import { BackendError, type GatewayError } from "../protocol/Errors.js"
import { CallHeld, InvalidPlan } from "./Errors.js"
import type { Plan } from "./Offer.js"
import { field, objectOr } from "../json/Json.js"
import { CallRefused, type Confirm, type Decision, type FlowFacts, heldBy, type Target } from "../call/Vocabulary.js"

export interface Planned {
  readonly via: "orchestration" | "script"
  /** The name the model used (exposed; in `routing: "backend"`, the backend's id). */
  readonly name: string
  readonly target: Target | undefined
  /**
   * The request: `tools/call` when absent; in `routing: "backend"`, any method of the allow-list
   * the model may ask a backend for (a read, a prompt, a listing, a completion; see Offer).
   */
  readonly method?: string | undefined
  /** The request's params (`tools/call`'s: its name, arguments, `_meta`). */
  readonly params: Readonly<Record<string, unknown>>
  /** The user already agreed (an orchestration asks for a whole turn before any of it runs). */
  readonly confirmed?: boolean | undefined
  /** A preview (a dry run): checked like any call, but held back unless the tool is read-only. */
  readonly preview?: boolean | undefined
  /** Where its data came from (an orchestration's step, a script's call). */
  readonly flow?: FlowFacts | undefined
  /** Where the decisions go, for the caller to read after. */
  readonly decisions: Array<Decision>
}

/** Runs a planned call as the session's (or, embedded, as nobody's). */
export type RunPlanned = (planned: Planned) => Effect.Effect<unknown, GatewayError>

/** Runs planned calls for nobody's session: what an orchestration embedded without a client uses. */
export class PlannedCalls extends Context.Service<
  PlannedCalls,
  { readonly run: (planned: Planned, confirm: Confirm | undefined) => Effect.Effect<unknown, GatewayError> }
>()("mcp-agentify/PlannedCalls") {}

/** The `ask` stage's refusal of a call for `confirmTools` alone: the user's answer, and the mode. */
const askedOf = (error: GatewayError): { readonly answer: unknown; readonly mode: unknown } | undefined =>
  error instanceof CallRefused && error.stage === "ask"
    ? { answer: error.detail?.answer, mode: error.detail?.confirmTools }
    : undefined

/**
 * An orchestration's step through the call pipeline (a tool call, or in `routing: "backend"` any
 * request of the allow-list: see Call's ways), where the user is asked once for a tool call,
 * naming every reason (`confirmTools`, a flow rule). A call the flow guard held is `CallHeld` (the
 * model is told); one the user declined is `CallHeld` with no rule (a declined step); a quota used
 * up stays the quota's refusal (-32029 with `data.retryAfterMs`: the client can retry, where an
 * invalid plan would tell it nothing); one a client that cannot be asked must not run makes the plan
 * invalid (-32003), as any other refusal does.
 */
export const runStep = (
  runCall: RunPlanned,
  chosen: Plan,
  args: unknown,
  flow?: FlowFacts,
  /** Where the pipeline's decisions go (whether the user agreed to a hold, say), for the caller to read after. */
  decisions: Array<Decision> = []
): Effect.Effect<unknown, BackendError | InvalidPlan | CallHeld | CallRefused> =>
  Effect.mapError(
    runCall({
      via: "orchestration",
      name: chosen.functionName,
      method: chosen.mcpMethod,
      // What the request names at its backend: a tool's, a prompt's own name, or a resource's URI.
      target: {
        backendId: chosen.backendId,
        own: String(field(chosen.mcpParams, "name") ?? field(chosen.mcpParams, "uri") ?? "")
      },
      params: objectOr(chosen.mcpParams),
      flow,
      decisions
    }),
    (error) => {
      if (error instanceof BackendError) return error
      if (error instanceof CallRefused && error.stage === "count") return error
      const rules = heldBy(error)
      if (rules !== undefined) return new CallHeld({ message: error.message, toolName: chosen.functionName, rules: [...rules] })
      const asked = askedOf(error)
      if (asked?.answer === "declined") return new CallHeld({ message: error.message, toolName: chosen.functionName, rules: [] })
      const tool = chosen.functionName
      return new InvalidPlan({
        message:
          asked === undefined
            ? error.message
            : `'${tool}' runs only after the user agrees (confirmTools: "${String(asked.mode)}"), and this client cannot be asked (it declared no elicitation); confirmTools: "never" in the gateway's configuration runs it without asking`,
        toolName: tool,
        arguments: Secrets.scrubArguments(args)
      })
    }
  )
