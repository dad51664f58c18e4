import { describe, expect, it } from "@effect/vitest"
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { writer } from "../../../../src/gateway/pipeline/Audit.js"

describe("the audit log's writer", () => {
  it("rotates past maxBytes, keeping `keep` older files, file.1 the newest", () => {
    const file = join(mkdtempSync(join(tmpdir(), "audit-")), "audit.jsonl")
    const write = writer({ file, arguments: "hash", maxBytes: 25, keep: 2 }, () => {})
    for (const n of [1, 2, 3, 4]) write([`{"line":${n},"pad":"xxxx"}`])
    expect(readFileSync(file, "utf8")).toBe('{"line":4,"pad":"xxxx"}\n')
    expect(readFileSync(`${file}.1`, "utf8")).toBe('{"line":3,"pad":"xxxx"}\n')
    expect(readFileSync(`${file}.2`, "utf8")).toBe('{"line":2,"pad":"xxxx"}\n')
    expect(existsSync(`${file}.3`)).toBe(false)
  })

  it("says a failure to write once and throws nothing", () => {
    const dir = mkdtempSync(join(tmpdir(), "audit-"))
    const warnings: Array<string> = []
    // Its directory does not exist: every write fails.
    const write = writer({ file: join(dir, "missing", "audit.jsonl"), arguments: "hash", maxBytes: 1000, keep: 1 }, (m) =>
      warnings.push(m)
    )
    write(["{}"])
    write(["{}"])
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain("could not be written")
  })
})
