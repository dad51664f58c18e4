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
