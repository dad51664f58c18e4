/**
 * The plan comes from the request: it travels with the model's first turn. That turn offers
 * `agentify_plan` beside the tools and asks the model to call it together with its first calls;
 * everything the first turn calls was chosen before any data was read, so those calls belong to the
 * plan with or without `agentify_plan`. No turn of its own: a plan costs no model round trip, and an
 * endpoint that cannot make parallel calls still plans (its first calls are the plan). After the
 * model has read a result, a call outside the plan is held for the user's consent (the flow guard's
 * `outside-plan` rule). `flowGuard: "off"` makes no plan at all.
 */
import type { ChatTool, ChatToolCall } from "./model/Chat.js"
import { field } from "../json/Json.js"

export const PLAN_FUNCTION = "agentify_plan"

/** `agentify_plan {tools, why}`: part of the gateway's contract with its model. */
export const planFunction: ChatTool = {
  type: "function",
  function: {
    name: PLAN_FUNCTION,
    description:
      "Call this together with your first calls: name every function this request needs (by the names offered; where a function is a backend, each of its tools as <backend>__<tool>), and why. Only the request decides the plan: calls outside it, made after reading results, need the user's consent.",
    parameters: {
      type: "object",
      properties: {
        tools: { type: "array", items: { type: "string" }, description: "The functions the request needs." },
        why: { type: "string", description: "One sentence: how they accomplish the request." }
      },
      required: ["tools"]
    }
  }
}

/** What a plan gave: the functions named (those the catalog lists), and why. */
export interface PlanOf {
  readonly tools: ReadonlyArray<string>
  readonly why?: string | undefined
}

const planIn = (calls: ReadonlyArray<{ readonly name: string; readonly arguments: string }>, offered: ReadonlySet<string>) => {
  const call = calls.find((c) => c.name === PLAN_FUNCTION)
  if (call === undefined) return undefined
  try {
    const args: unknown = JSON.parse(call.arguments)
    const named = field(args, "tools")
    const why = field(args, "why")
    const tools = Array.isArray(named) ? named.filter((t): t is string => typeof t === "string" && offered.has(t)) : []
    return { tools, ...(typeof why === "string" ? { why } : {}) }
  } catch {
    return { tools: [] }
  }
}

/** `agentify_plan`, its description carrying the tools not offered (by server) when there are some. */
export const planFunctionWith = (index: string | undefined): ChatTool =>
  index === undefined || index === ""
    ? planFunction
    : {
        ...planFunction,
        function: {
          ...planFunction.function,
          description: `${planFunction.function.description}\nOther tools you may name (they are offered once named), as <server>__<tool>:\n${index}`
        }
      }

/**
 * The plan of a first turn: the functions `agentify_plan` named (those `plannable`), and every
 * other function the turn called (chosen before any data was read), in that order, each once.
 */
export const fromFirstTurn = (calls: ReadonlyArray<ChatToolCall>, plannable: ReadonlySet<string>): PlanOf => {
  const named = planIn(calls, plannable)
  const called = calls.filter((c) => c.name !== PLAN_FUNCTION).map((c) => c.name)
  return { tools: [...new Set([...(named?.tools ?? []), ...called])], ...(named?.why === undefined ? {} : { why: named.why }) }
}

/** What `agentify_plan` itself named (of the tools listed): what joins the offer (a call of a tool not offered does not). */
export const namedIn = (calls: ReadonlyArray<ChatToolCall>, plannable: ReadonlySet<string>): ReadonlyArray<string> =>
  planIn(calls, plannable)?.tools ?? []
