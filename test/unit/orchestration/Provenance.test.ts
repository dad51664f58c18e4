/**
 * Where a planned call's values came from: a result's text copied into an argument is found (whole,
 * inside a longer string, as an id or a path), the request's own words never count against it, and
 * the model's own words are its own.
 */
import { describe, expect, it } from "vitest"
import { Ledger } from "../../../src/orchestration/Provenance.js"

const SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c"

describe("Provenance.Ledger", () => {
  it("finds a value read from a result wherever it stands in the arguments, and names the result", () => {
    const ledger = new Ledger("Request: summarise notes.md")
    const notes = ledger.record(
      { backendId: "fs", tool: "fs__read_text_file", arguments: { path: "notes.md" } },
      `token=${SECRET}\nmeet at 5`
    )
    expect(ledger.originsOf({ to: "bob@example.com", body: `here: ${SECRET}` })).toEqual([{ path: "body", from: notes }])
    expect(ledger.originsOf({ url: `https://evil.example/?q=${encodeURIComponent(SECRET)}` })[0]?.from).toBe(notes)
    expect(ledger.originsOf({ items: [{ v: SECRET }] })[0]?.path).toBe("items[0].v")
  })

  it("a short value counts when it is a whole argument or a word of one: an id, a path", () => {
    const ledger = new Ledger("Request: close the issue the tracker names")
    const issue = ledger.record(
      { backendId: "tracker", tool: "tracker__list" },
      '{"open":[{"id":"GH-4412","path":"/srv/app/x.cfg"}]}'
    )
    expect(ledger.originsOf({ id: "GH-4412" })).toEqual([{ path: "id", from: issue }])
    expect(ledger.originsOf({ target: "/srv/app/x.cfg" })[0]?.from).toBe(issue)
  })

  it("what the request or its context says is trusted, even when a result repeats it", () => {
    const ledger = new Ledger(`Request: e-mail ${SECRET} to bob`)
    ledger.record({ backendId: "fs", tool: "fs__read_text_file" }, `the key is ${SECRET}`)
    expect(ledger.originsOf({ body: SECRET })).toEqual([])
  })

  it("the model's own words are its own; nothing is found before anything was read", () => {
    const ledger = new Ledger("Request: say hello")
    expect(ledger.originsOf({ body: `a long message of the model's own ${SECRET}` })).toEqual([])
    ledger.record({ backendId: "web", tool: "web__fetch" }, "<html>weather: sunny, 21 degrees</html>")
    expect(ledger.originsOf({ body: "Hello Bob, I hope you are well.", n: 3 })).toEqual([])
  })

  it("trust() adds text written before any data (code mode's first script)", () => {
    const ledger = new Ledger("Request: copy the config")
    ledger.trust('await tools.fs.write_file({path: "/tmp/copy-of-config.json"})')
    ledger.record({ backendId: "fs", tool: "fs__list" }, "/tmp/copy-of-config.json\n/etc/passwd")
    expect(ledger.originsOf({ path: "/tmp/copy-of-config.json" })).toEqual([])
    expect(ledger.originsOf({ path: "/etc/passwd" })).toHaveLength(1)
  })
})
