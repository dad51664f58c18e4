/**
 * The model's arguments against a tool's inputSchema: problems named by path, both dialects a
 * backend may declare, inherited names not taken as given, and a schema that cannot be compiled
 * said once and left unchecked.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger } from "effect"
import * as Arguments from "../../../src/orchestration/Arguments.js"

const schema = {
  type: "object",
  properties: { path: { type: "string" }, lines: { type: "integer", minimum: 1 } },
  required: ["path"]
}

describe("Arguments.check", () => {
  it.effect("names each problem with its path; valid arguments have none", () =>
    Effect.gen(function* () {
      expect(yield* Arguments.check("t", schema, { path: "a.txt", lines: 3 })).toEqual([])
      expect(yield* Arguments.check("t", schema, { path: 7, lines: 0 })).toEqual([
        "/path: must be string",
        "/lines: must be >= 1"
      ])
      expect(yield* Arguments.check("t", schema, {})).toEqual(["(root): must have required property 'path'"])
      // Inherited names are not given.
      expect(yield* Arguments.check("t", { type: "object", required: ["toString"] }, {})).toEqual([
        "(root): must have required property 'toString'"
      ])
    })
  )

  it.effect("draft-07 by default, 2020-12 when the schema says so (prefixItems means something only there)", () =>
    Effect.gen(function* () {
      const tuple = {
        type: "object",
        properties: { pair: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }] } }
      }
      expect(yield* Arguments.check("t", tuple, { pair: [1, "x"] })).toEqual([])
      const modern = { $schema: "https://json-schema.org/draft/2020-12/schema", ...tuple }
      expect(yield* Arguments.check("t", modern, { pair: [1, "x"] })).toEqual([
        "/pair/0: must be string",
        "/pair/1: must be number"
      ])
    })
  )

  it.effect("a schema that cannot be compiled is said once, and its calls go unchecked", () =>
    Effect.gen(function* () {
      const lines: Array<string> = []
      const logger = Logger.make(({ message }) => void lines.push(String(message)))
      const broken = { type: "object", properties: { a: { $ref: "#/definitions/missing" } } }
      const checkBroken = Arguments.check("bad__tool", broken, { a: 1 }).pipe(Effect.provide(Logger.layer([logger])))
      expect(yield* checkBroken).toBeUndefined()
      expect(yield* checkBroken).toBeUndefined()
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(/^the inputSchema of bad__tool cannot be checked \(.+\): its calls go through unchecked$/)
    })
  )
})
