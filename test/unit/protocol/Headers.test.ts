import { describe, expect, it } from "@effect/vitest"
import { decodeValue, mismatch } from "../../../src/protocol/Headers.js"

const schema = {
  type: "object",
  properties: { region: { type: "string", "x-mcp-header": "Region" }, n: { type: "integer", "x-mcp-header": "N" } }
}
const call = (args: Record<string, unknown>) => ({ method: "tools/call", params: { name: "route", arguments: args } })
const check = (request: { method: string; params?: unknown }, headers: Record<string, string>) =>
  mismatch(request, headers, (name) => (name === "route" ? schema : undefined))

describe("SEP-2243 header values", () => {
  it("drop surrounding whitespace, decode valid Base64 and refuse invalid Base64; half a wrapper is literal", () => {
    expect(decodeValue(" \tabc \t")).toBe("abc")
    expect(decodeValue(`=?base64?${Buffer.from("Zürich").toString("base64")}?=`)).toBe("Zürich")
    expect(decodeValue("=?base64?SGVsbG8?=")).toBeUndefined()
    expect(decodeValue("=?base64?SGVs!!!bG8=?=")).toBeUndefined()
    expect(decodeValue("=?base64?SGVsbG8=")).toBe("=?base64?SGVsbG8=")
  })
})

describe("SEP-2243 headers against the body", () => {
  it("agree: the method exactly, the name, each declared argument present in the body", () => {
    expect(check({ method: "tools/list" }, { "mcp-method": "tools/list" })).toBeUndefined()
    expect(check({ method: "tools/list" }, { "mcp-method": "tools/list", "mcp-name": "unread" })).toBeUndefined()
    expect(
      check(call({ region: "eu", n: 3, other: 1 }), {
        "mcp-method": "tools/call",
        "mcp-name": "route",
        "mcp-param-region": "eu",
        "mcp-param-n": "3"
      })
    ).toBeUndefined()
    expect(
      check({ method: "resources/read", params: { uri: "a://b" } }, { "mcp-method": "resources/read", "mcp-name": "a://b" })
    ).toBeUndefined()
  })

  it("disagree: a missing or different method (values are case-sensitive), name or argument", () => {
    expect(check({ method: "tools/list" }, {})).toContain("Missing Mcp-Method")
    expect(check({ method: "tools/list" }, { "mcp-method": "TOOLS/LIST" })).toContain("does not match")
    expect(check(call({}), { "mcp-method": "tools/call" })).toContain("Missing Mcp-Name")
    expect(check(call({}), { "mcp-method": "tools/call", "mcp-name": "other" })).toContain("Mcp-Name")
    expect(check(call({ region: "eu" }), { "mcp-method": "tools/call", "mcp-name": "route" })).toContain(
      "Missing Mcp-Param-Region"
    )
    expect(
      check(call({ region: "eu" }), { "mcp-method": "tools/call", "mcp-name": "route", "mcp-param-region": "us" })
    ).toContain("does not match arguments.region")
    expect(check(call({}), { "mcp-method": "tools/call", "mcp-name": "route", "mcp-param-n": "1" })).toContain("Mcp-Param-N")
  })
})
