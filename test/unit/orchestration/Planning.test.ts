/**
 * The plan travels with the first turn: what `agentify_plan` names (of the tools listed) and every
 * other function that turn called are the plan, in that order, each once; its description carries
 * the tools not offered when there are some.
 */
import { describe, expect, it } from "vitest"
import * as Planning from "../../../src/orchestration/Planning.js"

const call = (name: string, args: unknown) => ({ id: `c-${name}`, name, arguments: JSON.stringify(args) })

describe("the plan of a first turn", () => {
  it("is what agentify_plan named (of the tools listed) and what the turn called", () => {
    const plan = Planning.fromFirstTurn(
      [
        call(Planning.PLAN_FUNCTION, { tools: ["fs__read", "evil__send", 7, "mem__save"], why: "the request" }),
        call("fs__read", {})
      ],
      new Set(["fs__read", "mem__save"])
    )
    expect(plan).toEqual({ tools: ["fs__read", "mem__save"], why: "the request" })
  })

  it("without agentify_plan (an endpoint that makes one call a turn), the first turn's calls are the plan", () => {
    expect(Planning.fromFirstTurn([call("fs__read", {}), call("web__fetch", {})], new Set())).toEqual({
      tools: ["fs__read", "web__fetch"]
    })
    // A plan that does not parse names nothing; the calls still count.
    expect(
      Planning.fromFirstTurn([{ id: "p", name: Planning.PLAN_FUNCTION, arguments: "{" }, call("fs__read", {})], new Set())
    ).toEqual({ tools: ["fs__read"] })
  })

  it("carries the tools not offered in its description when there are some", () => {
    expect(Planning.planFunctionWith(undefined)).toBe(Planning.planFunction)
    const withIndex = Planning.planFunctionWith("weather: get_weather")
    expect(withIndex.function.description).toContain("Call this together with your first calls")
    expect(withIndex.function.description).toContain("weather: get_weather")
  })
})
