/**
 * The gateway's own params decoded at the edge: the words of each -32602 (what clients and their
 * users read), and what a decode keeps (a tools/call's `_meta` goes on to the backend).
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as Params from "../../../../src/gateway/methods/Params.js"

const problem = <A>(decode: (u: unknown) => Result.Result<A, { message: string; issues: ReadonlyArray<string> }>, u: unknown) => {
  const decoded = decode(u)
  if (Result.isSuccess(decoded)) throw new Error(`decoded: ${JSON.stringify(decoded.success)}`)
  return { message: decoded.failure.message, issues: decoded.failure.issues }
}

describe("Params", () => {
  const callTool = Params.decode(Params.CallToolParams)
  const setLevel = Params.decode(Params.SetLevelParams)
  const sessionOptions = Params.decode(Params.SessionOptions)
  const initialize = Params.decode(Params.InitializeParams)

  it("tools/call: a name that is missing or not a string, arguments that are not an object", () => {
    for (const params of [undefined, {}, { name: 7 }, { name: null }]) {
      expect(problem(callTool, params)).toEqual({ message: "Invalid params: name: is required", issues: ["name: is required"] })
    }
    for (const args of [[], null, "x", 3]) {
      expect(problem(callTool, { name: "t", arguments: args })).toEqual({
        message: "Invalid params: arguments: must be an object",
        issues: ["arguments: must be an object"]
      })
    }
  })

  it("a value nested too deeply to print is still a -32602 in the same words (the fuzz test found it)", () => {
    let deep: unknown = []
    for (let i = 0; i < 100_000; i++) deep = [deep]
    expect(problem(callTool, { name: "t", arguments: deep }).issues).toEqual(["arguments: must be an object"])
    expect(problem(callTool, { name: deep }).issues).toEqual(["name: is required"])
    expect(problem(setLevel, { level: deep }).issues).toEqual([expect.stringMatching(/^level: must be one of /)])
  })

  it("tools/call: what it does not name is kept as sent (_meta with a progress token, a task)", () => {
    const params = { name: "fs__read", arguments: { path: "a" }, _meta: { progressToken: 4 }, task: { ttl: 1 } }
    expect(Result.getOrThrow(callTool(params))).toEqual(params)
  })

  it("logging/setLevel and a session's logLevel name the levels they accept", () => {
    const levels = "debug, info, notice, warning, error, critical, alert, emergency"
    for (const params of [{}, { level: "loud" }, { level: 3 }]) {
      expect(problem(setLevel, params).message).toBe(`Invalid params: level: must be one of ${levels}`)
    }
    expect(Result.getOrThrow(setLevel({ level: "notice" }))).toEqual({ level: "notice" })
    expect(problem(sessionOptions, { logLevel: "chatty" }).issues).toEqual([
      expect.stringMatching(/^initializationOptions\.logLevel: must be one of .*\bdebug\b.*\bsilent\b/)
    ])
    expect(Result.getOrThrow(sessionOptions({ logLevel: "debug" }))).toEqual({ logLevel: "debug" })
  })

  it("initialize is lenient about its fields but its params must be an object", () => {
    expect(Result.getOrThrow(initialize({ protocolVersion: 5, capabilities: "none" }))).toEqual({
      protocolVersion: 5,
      capabilities: "none"
    })
    expect(problem(initialize, "hello").message).toBe("Invalid params: params: must be an object")
  })
})
