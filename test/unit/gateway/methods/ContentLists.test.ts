/** Resource template matching (RFC 6570 level 1): what fits, what does not, and in linear time. */
import { describe, expect, it } from "vitest"
import { templateMatches } from "../../../../src/gateway/methods/ContentLists.js"

describe("templateMatches", () => {
  it("matches each variable to a non-empty run without '/' up to the next literal", () => {
    expect(templateMatches("test://template/{id}/data", "test://template/123/data")).toBe(true)
    expect(templateMatches("test://template/{id}/data", "test://template//data")).toBe(false)
    expect(templateMatches("test://template/{id}/data", "test://template/1/2/data")).toBe(false)
    expect(templateMatches("file:///{path}", "file:///notes.txt")).toBe(true)
    expect(templateMatches("file:///{path}", "file:///a/b.txt")).toBe(false)
    expect(templateMatches("db://{table}-{row}", "db://users-42")).toBe(true)
    expect(templateMatches("db://{table}-{row}", "db://users")).toBe(false)
    expect(templateMatches("static://x", "static://x")).toBe(true)
    expect(templateMatches("static://x", "static://xy")).toBe(false)
  })

  it("stays linear on templates built to make a regex backtrack", () => {
    // As a regex (^[^/]+[^/]+...$ or with '-' between), this takes exponential or high-polynomial
    // time on a URI that almost fits; the scan answers at once. Not a timing assertion: a hang
    // would time the test out.
    const template = `x://${"{v}".repeat(40)}!`
    expect(templateMatches(template, `x://${"a".repeat(100_000)}`)).toBe(false)
    const dashed = `x://${Array.from({ length: 30 }, (_, i) => `{v${i}}`).join("-")}!`
    expect(templateMatches(dashed, `x://${"a-".repeat(50_000)}`)).toBe(false)
  })
})
