/**
 * The lint's bound on a function's length (scripts/function-length.mjs): a function of 151 lines
 * is reported under its name and first line, one of 150 is not, and each kind of function counts.
 */
import { describe, expect, it } from "@effect/vitest"
import { longFunctionsIn, MAX_LINES } from "../../../scripts/function-length.mjs"

/** `head`, then `lines` lines in all with the closing `tail` (a body of statements between). */
const spanning = (head: string, lines: number, tail = "}") =>
  [head, ...Array.from({ length: lines - 2 }, (_, i) => `  void ${i}`), tail].join("\n")

describe("the function length check", () => {
  it("reports a function one line over the bound, with its name and first line, and not one at the bound", () => {
    const text = ["// a module", spanning("function over() {", MAX_LINES + 1), spanning("function at() {", MAX_LINES)].join("\n")
    expect(longFunctionsIn("m.ts", text)).toEqual([{ line: 2, name: "over", span: MAX_LINES + 1 }])
  })

  it("measures arrows, function expressions, methods and constructors, named by what they are bound to", () => {
    const text = [
      spanning("export const arrow = (a: number) => {", MAX_LINES + 1),
      spanning("const expression = function* () {", MAX_LINES + 1),
      spanning("class C {\n  method() {", MAX_LINES + 1, "  }"),
      spanning("  constructor() {", MAX_LINES + 1, "  }\n}"),
      spanning("const table = { serve: () => {", MAX_LINES + 1, "} }")
    ].join("\n")
    expect(longFunctionsIn("m.ts", text).map((f) => f.name)).toEqual(["arrow", "expression", "method", "constructor", "serve"])
  })

  it("counts a nested function's lines in the function around it", () => {
    const inner = spanning("  const inner = () => {", MAX_LINES - 10, "  }")
    const text = ["const outer = () => {", inner, ...Array.from({ length: 20 }, () => "  void 0"), "}"].join("\n")
    expect(longFunctionsIn("m.ts", text).map((f) => f.name)).toEqual(["outer"])
  })
})
