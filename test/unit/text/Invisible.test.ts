import { describe, expect, it } from "@effect/vitest"
import { found, schemaHides, strip, stripSchema } from "../../../src/text/Invisible.js"

describe("hidden characters", () => {
  it("finds each kind, strips them all, and leaves visible text (tabs, newlines, accents, emoji) alone", () => {
    const text = "a\u{E0041}\u{E0042}b\u202Ec\u200Bd\u0007e\tf\ng é 🚀"
    expect(found(text)).toEqual([
      { kind: "tag", count: 2 },
      { kind: "bidi", count: 1 },
      { kind: "zero-width", count: 1 },
      { kind: "control", count: 1 }
    ])
    expect(strip(text)).toBe("abcde\tf\ng é 🚀")
    const plain = "nothing hidden here"
    expect(strip(plain)).toBe(plain)
    expect(found(plain)).toEqual([])
  })

  it("in a schema: only descriptions and titles are stripped; enum values and patterns stay", () => {
    const schema = { type: "object", title: "T\u200B", properties: { x: { description: "d\u{E0041}", enum: ["a\u200B"] } } }
    expect(schemaHides(schema)).toBe(true)
    expect(stripSchema(schema)).toEqual({
      type: "object",
      title: "T",
      properties: { x: { description: "d", enum: ["a\u200B"] } }
    })
    expect(schemaHides({ properties: { x: { enum: ["a\u200B"] } } })).toBe(false)
  })
})
