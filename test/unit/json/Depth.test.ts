/**
 * The bound on JSON nesting, read and written (json/Depth): explicit, so every Node answers the
 * same whether or not its own encoder would overflow.
 */
import { describe, expect, it } from "vitest"
import * as Depth from "../../../src/json/Depth.js"

const deepText = (depth: number, inner = "1") => `${'{"a":'.repeat(depth)}${inner}${"}".repeat(depth)}`
const deepArrayText = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`

/** The levels of a parsed value, counted with a loop, and whether the marker ends it. */
const levels = (value: unknown): { depth: number; marker: boolean } => {
  let depth = 0
  let at = value
  while (typeof at === "object" && at !== null && !Depth.isTooDeep(at)) {
    depth++
    at = Array.isArray(at) ? at[0] : (at as Record<string, unknown>).a
  }
  return { depth, marker: Depth.isTooDeep(at) }
}

describe("reading a peer's JSON", () => {
  it("text within the bound is read as JSON.parse reads it, not copied", () => {
    const text = deepText(Depth.MAX_DEPTH)
    expect(Depth.cut(text)).toBe(text)
    expect(levels(Depth.parse(text))).toEqual({ depth: Depth.MAX_DEPTH, marker: false })
    expect(Depth.parse('{"s":"x"}')).toEqual({ s: "x" })
  })

  it("a value that opens past the bound is cut to the marker; what is around it is kept", () => {
    for (const depth of [Depth.MAX_DEPTH + 1, 50_000, 500_000]) {
      const text = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":${deepText(depth)}},"after":[1,{"b":2}]}`
      const parsed = Depth.parse(text) as any
      expect(parsed).toMatchObject({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "t" }, after: [1, { b: 2 }] })
      // The message's and its params' levels, then the arguments' own up to the bound.
      expect(levels(parsed.params.arguments)).toEqual({ depth: Depth.MAX_DEPTH - 2, marker: true })
      expect(Depth.exceeds(parsed, Depth.MAX_DEPTH)).toBe(true)
    }
    const arrays = Depth.parse(deepArrayText(300_000))
    expect(levels(arrays)).toEqual({ depth: Depth.MAX_DEPTH, marker: true })
  })

  it("brackets inside strings, escaped quotes included, do not count", () => {
    const noise = `"${"[{".repeat(3_000)}\\"${"[".repeat(3_000)}\\\\"`
    const text = `{"a":${noise},"b":${deepText(10)}}`
    expect(Depth.cut(text)).toBe(text)
    expect(Depth.parse(text)).toEqual(JSON.parse(text))
  })

  it("text that is not JSON still fails as JSON.parse fails, cut or not", () => {
    expect(() => Depth.parse("{")).toThrow(SyntaxError)
    expect(() => Depth.parse("[".repeat(200_000))).toThrow(SyntaxError)
    expect(() => Depth.parse(`${deepText(5_000)}x`)).toThrow(SyntaxError)
  })

  it("no peer can send the marker: the placeholder's text is read as the string it is", () => {
    const placeholder = Depth.cut(deepArrayText(Depth.MAX_DEPTH + 1)).slice(Depth.MAX_DEPTH, -Depth.MAX_DEPTH)
    const sent = Depth.parse(`[${placeholder}]`)
    expect(Depth.exceeds(sent, Depth.MAX_DEPTH)).toBe(false)
    expect(typeof (sent as Array<unknown>)[0]).toBe("string")
  })
})

describe("writing", () => {
  it("a value deeper than the bound, or holding the marker, exceeds it; one within does not", () => {
    const deep = JSON.parse(deepText(200_000))
    expect(Depth.exceeds(deep)).toBe(true)
    expect(Depth.exceeds(JSON.parse(deepText(Depth.MAX_WRITTEN_DEPTH)))).toBe(false)
    expect(Depth.exceeds(JSON.parse(deepText(Depth.MAX_WRITTEN_DEPTH + 1)))).toBe(true)
    expect(Depth.exceeds({ content: [{ text: "x" }], structured: { x: Depth.TOO_DEEP } })).toBe(true)
    expect(Depth.exceeds("text")).toBe(false)
    // A cycle is as deep as it gets, found in a bounded walk.
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    expect(Depth.exceeds(cycle)).toBe(true)
  })

  it("the marker, encoded by mistake, says what it is", () => {
    expect(JSON.stringify({ a: Depth.TOO_DEEP })).toBe(`{"a":"(${Depth.TOO_DEEP_TEXT})"}`)
  })
})
