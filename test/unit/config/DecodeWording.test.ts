/** How a configuration's mistakes read: one line per mistake, naming what would be right. */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { decodeOptions } from "../../../src/config/Decode.js"

const issuesOf = (given: unknown): ReadonlyArray<string> => {
  const decoded = decodeOptions(given, "config")
  return Result.isFailure(decoded) ? decoded.failure.issues : []
}

describe("configuration mistakes, worded", () => {
  it("a value none of a field's allowed values is one line naming them all", () => {
    expect(issuesOf({ confirmTools: "sometimes" })).toEqual([
      'confirmTools: must be one of "destructive", "writes", "never", not "sometimes"'
    ])
    expect(issuesOf({ logLevel: "loud", routing: 3 })).toEqual([
      'logLevel: must be one of "trace", "debug", "info", "warn", "error", "fatal", "silent", not "loud"',
      'routing: must be one of "tool", "backend", not 3'
    ])
    // A mistake of another kind keeps its own words.
    expect(issuesOf({ maxSteps: "six" })).toEqual(['maxSteps: Expected number, actual "six"'])
  })

  it("a file with mcpServers and an empty backends says it gives two lists, not only that backends is empty", () => {
    expect(issuesOf({ mcpServers: { files: { command: "node" } }, backends: [] })).toEqual([
      "mcpServers: give one of backends, mcpServers or servers, not backends and mcpServers"
    ])
  })
})
