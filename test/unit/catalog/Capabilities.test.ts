/**
 * A tool's capabilities: MCP's defaults for absent hints (a tool that says nothing may write,
 * destroy and reach the open world), what it says, and what the configuration declares over both;
 * and `confirmTools` reading them.
 */
import { describe, expect, it } from "vitest"
import * as Capabilities from "../../../src/catalog/Capabilities.js"
import { needsConfirmation } from "../../../src/orchestration/Steps.js"

describe("Capabilities", () => {
  it("a tool that says nothing is taken for MCP's defaults: writes, destroys, reaches the open world", () => {
    expect(Capabilities.of("send", undefined, undefined)).toEqual({
      readOnly: false,
      destructive: true,
      openWorld: true,
      unannotated: true
    })
    expect(Capabilities.of("read", { readOnlyHint: true, openWorldHint: false }, undefined)).toMatchObject({
      readOnly: true,
      destructive: false,
      openWorld: false,
      unannotated: false
    })
  })

  it("the configuration's hints win, the first glob that matches; a backend is private and untrusted unless it says", () => {
    const flow = { private: false, tools: { "send*": { destructive: false }, "*": { readOnly: true } } }
    expect(Capabilities.of("send_mail", undefined, flow)).toMatchObject({ readOnly: false, destructive: false, openWorld: true })
    expect(Capabilities.of("fetch", { readOnlyHint: false }, flow)).toMatchObject({ readOnly: true, destructive: false })
    expect(Capabilities.dataOf(flow)).toEqual({ private: false, untrusted: true })
    expect(Capabilities.dataOf(undefined)).toEqual({ private: true, untrusted: true })
    expect(Capabilities.annotated("send_mail", { title: "Send" }, flow)).toEqual({ title: "Send", destructiveHint: false })
    expect(Capabilities.annotated("other", undefined, { tools: {} })).toBeUndefined()
  })

  it('confirmTools: "destructive" asks for a tool that says nothing, not for one that says it destroys nothing', () => {
    expect(needsConfirmation("destructive", undefined)).toBe(true)
    expect(needsConfirmation("destructive", { destructiveHint: false })).toBe(false)
    expect(needsConfirmation("destructive", { readOnlyHint: true })).toBe(false)
    expect(needsConfirmation("writes", { destructiveHint: false })).toBe(true)
    expect(needsConfirmation("never", undefined)).toBe(false)
  })
})
