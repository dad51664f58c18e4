import { describe, expect, it } from "@effect/vitest"
import * as Declarations from "../../../src/sandbox/Declarations.js"

const tool = (key: string, inputSchema: unknown, description = `Does ${key}`): Declarations.ScriptTool => ({
  namespace: "fs",
  key,
  exposed: `fs__${key}`,
  description,
  inputSchema
})

describe("declarations of the tools a script calls", () => {
  it("JSON Schema as TypeScript: required and optional fields, arrays, enums, unions, descriptions as doc comments", () => {
    const text = Declarations.declarations([
      tool("read", {
        type: "object",
        properties: {
          path: { type: "string", description: "Where the file is" },
          head: { type: "integer" },
          mode: { enum: ["text", "bytes"] },
          tags: { type: "array", items: { type: "string" } },
          when: { anyOf: [{ type: "string" }, { type: "null" }] }
        },
        required: ["path"]
      }),
      { namespace: null, key: "my-tool", exposed: "my-tool", inputSchema: { type: "object" } }
    ])
    expect(text).toContain("  fs: {\n    /** Does read */\n    read(args: {\n")
    expect(text).toContain("/** Where the file is */\n      path: string")
    expect(text).toContain("head?: number")
    expect(text).toContain('mode?: "text" | "bytes"')
    expect(text).toContain("tags?: Array<string>")
    expect(text).toContain("when?: string | null")
    expect(text).toContain('"my-tool"(args: Record<string, unknown>): Promise<unknown>')
  })

  it("past the bound: the names by namespace, and searchTools for the declarations", () => {
    const many = Array.from({ length: 200 }, (_, i) =>
      tool(`tool_${i}`, { type: "object", properties: { a: { type: "string" } } })
    )
    const text = Declarations.forDescription(many, 2_000)
    expect(text).toContain("200 tools, too many to declare here")
    expect(text).toContain("searchTools(")
    expect(text).toContain("fs: tool_0, tool_1, tool_2")
    expect(text).not.toContain("tool_0(args")
    expect(Declarations.forDescription(many.slice(0, 2), 2_000)).toContain("tool_0(args: {")
  })

  it("a description cannot close its doc comment early", () => {
    expect(Declarations.declarations([tool("x", {}, "ends */ here")])).toContain("/** ends * / here */")
  })
})

describe("declarations of a catalog of thousands", () => {
  const many = Array.from({ length: 20_000 }, (_, i): Declarations.ScriptTool => ({
    namespace: `ns${i % 7}`,
    key: `tool_${i}`,
    exposed: `ns${i % 7}__tool_${i}`,
    description: `Does thing ${i}`,
    inputSchema: { type: "object", properties: { x: { type: "string" } } }
  }))

  it("groups every tool under its namespace, in the order they came, each once", () => {
    const text = Declarations.declarations(many)!
    expect(text.match(/^ {2}ns\d: \{$/gm)).toEqual([
      "  ns0: {",
      "  ns1: {",
      "  ns2: {",
      "  ns3: {",
      "  ns4: {",
      "  ns5: {",
      "  ns6: {"
    ])
    expect(text.match(/^ {4}tool_\d+\(/gm)).toHaveLength(20_000)
    const ns3 = text.slice(text.indexOf("  ns3: {"), text.indexOf("  ns4: {"))
    expect(ns3.indexOf("tool_3(")).toBeLessThan(ns3.indexOf("tool_10("))
  })

  it("stops declaring past the bound and lists the names by namespace instead", () => {
    expect(Declarations.declarations(many, 10_000)).toBeUndefined()
    const description = Declarations.forDescription(many, 10_000)
    expect(description).toContain("// 20000 tools, too many to declare here")
    expect(description).toMatch(/^ns6: tool_6, tool_13, tool_20, /m)
    expect(description.match(/^ns\d: /gm)).toHaveLength(7)
  })
})
