import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Pins from "../../../src/backend/Pins.js"

const tool = (name: string, description: string, inputSchema: Record<string, unknown> = { type: "object" }) => ({
  name,
  description,
  inputSchema
})
const settings = (mode: Pins.Mode = "quarantine"): Pins.Settings => ({ mode, stateDir: mkdtempSync(join(tmpdir(), "pins-")) })

describe("tool pins", () => {
  it("fingerprints a definition, not the order of its keys", () => {
    const a = Pins.fingerprint(tool("t", "d", { type: "object", properties: { x: { type: "string" } } }))
    const b = Pins.fingerprint({
      inputSchema: { properties: { x: { type: "string" } }, type: "object" },
      description: "d",
      name: "t"
    })
    expect(a).toBe(b)
    expect(Pins.fingerprint(tool("t", "d "))).not.toBe(a)
  })

  it("pins new tools, holds back a changed one, and admits it again once trusted", () => {
    const s = settings()
    expect(Pins.review(s, "b", [tool("a", "one"), tool("__proto__", "odd")], () => {}).pinned).toEqual(["a", "__proto__"])
    const changed = Pins.review(s, "b", [tool("a", "two"), tool("__proto__", "odd"), tool("c", "new")], () => {})
    expect(changed.admitted.map((t) => t.name)).toEqual(["__proto__", "c"])
    expect(changed.changed).toEqual([expect.objectContaining({ name: "a", changed: ["description"] })])
    expect(changed.pinned).toEqual(["c"])
    expect(Pins.trust(s, "b", [tool("a", "two")], "a")).toEqual(["a"])
    const after = Pins.review(s, "b", [tool("a", "two"), tool("__proto__", "odd"), tool("c", "new")], () => {})
    expect(after.changed).toEqual([])
    expect(after.admitted).toHaveLength(3)
  })

  it("warn admits a changed tool and flags it; off checks nothing", () => {
    const s = settings("warn")
    Pins.review(s, "b", [tool("a", "one")], () => {})
    const warned = Pins.review(s, "b", [tool("a", "two")], () => {})
    expect(warned.admitted.map((t) => t.name)).toEqual(["a"])
    expect(warned.changed).toHaveLength(1)
    expect(Pins.review({ ...s, mode: "off" }, "b", [tool("a", "three")], () => {}).changed).toEqual([])
  })

  it("keeps what another gateway pinned meanwhile", () => {
    const s = settings()
    Pins.review(s, "b", [tool("a", "one")], () => {})
    Pins.write(s, "b", new Map())
    Pins.review(s, "b", [tool("x", "other gateway")], () => {})
    expect([...Pins.read(s, "b").keys()].sort()).toEqual(["a", "x"])
  })
})
