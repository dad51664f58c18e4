import { describe, expect, it } from "@effect/vitest"
import { encodeValue, headerParams, McpHeaders } from "../../../src/backend/remote/McpHeaders.js"

const b64 = (s: string) => `=?base64?${Buffer.from(s).toString("base64")}?=`

describe("SEP-2243 headers", () => {
  it("plain printable ASCII goes as it is; whitespace at an end, other characters, control characters and the sentinel itself go Base64", () => {
    expect(encodeValue("eu-west-1")).toBe("eu-west-1")
    expect(encodeValue("a b")).toBe("a b")
    expect(encodeValue(" padded")).toBe(b64(" padded"))
    expect(encodeValue("Zürich")).toBe(b64("Zürich"))
    expect(encodeValue("line\nbreak")).toBe(b64("line\nbreak"))
    expect(encodeValue("=?base64?abc?=")).toBe(b64("=?base64?abc?="))
  })

  it("x-mcp-header declarations: tokens only, each name once (case-insensitively)", () => {
    expect(
      headerParams({
        properties: {
          a: { type: "string", "x-mcp-header": "Region" },
          b: { type: "string", "x-mcp-header": "region" },
          c: { type: "string", "x-mcp-header": "Not A Token" },
          d: { type: "string" }
        }
      })
    ).toEqual([["a", "Region"]])
  })

  it("names what each method names; arguments that are null or objects send no header", () => {
    const headers = new McpHeaders()
    headers.toolsListed([
      { name: "t", inputSchema: { type: "object", properties: { r: { "x-mcp-header": "R" }, o: { "x-mcp-header": "O" } } } }
    ])
    expect(headers.for({ method: "tools/call", params: { name: "t", arguments: { r: true, o: { x: 1 } } } })).toEqual({
      "mcp-method": "tools/call",
      "mcp-name": "t",
      "mcp-param-r": "true"
    })
    expect(headers.for({ method: "resources/read", params: { uri: "file:///a b" } })).toEqual({
      "mcp-method": "resources/read",
      "mcp-name": "file:///a b"
    })
    expect(headers.for({ method: "tasks/get", params: { taskId: "t-1" } })).toEqual({
      "mcp-method": "tasks/get",
      "mcp-name": "t-1"
    })
    expect(headers.for({ method: "notifications/initialized" })).toEqual({ "mcp-method": "notifications/initialized" })
    // A reply to the server carries no method: no header.
    expect(headers.for({})).toEqual({})
  })
})
