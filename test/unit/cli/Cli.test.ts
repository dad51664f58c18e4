/**
 * The command line: `auth`'s options (whose tokens `--revoke` forgets, and where its options
 * belong), `tools [QUERY]` and `check --verbose`, and `--help` naming every variable the gateway reads.
 */
import { describe, expect, it } from "vitest"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { parse, USAGE } from "../../../src/cli/Cli.js"
import { ROOT } from "../../support/stdioClient.js"

describe("auth on the command line", () => {
  it("takes --subject with --revoke: a user's own tokens of a perUser backend", () => {
    expect(parse(["auth", "--revoke", "crm", "--subject", "bob@example.com"], {})).toMatchObject({
      _tag: "Auth",
      backendId: "crm",
      revoke: true,
      subject: "bob@example.com"
    })
    expect(parse(["auth", "--revoke", "crm"], {})).toMatchObject({ _tag: "Auth", revoke: true, subject: undefined })
  })

  it("refuses --subject without --revoke, and on any other command, naming what it goes with", () => {
    expect(() => parse(["auth", "crm", "--subject", "bob"], {})).toThrow(/--subject goes with --revoke/)
    expect(() => parse(["check", "--subject", "bob"], {})).toThrow(/--subject is only used with auth --revoke/)
    expect(() => parse(["check", "--revoke"], {})).toThrow(/--revoke is only used with auth/)
  })
})

/** Every file of src/, for what it reads of the environment. */
const sources = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? sources(path) : entry.name.endsWith(".ts") ? [path] : []
  })

/**
 * Read by the code but no setting of the gateway's: the programs' own (PATH to find a command,
 * NODE_OPTIONS to name the compiled-code cache's flags).
 */
const NOT_SETTINGS = new Set(["PATH", "NODE_OPTIONS"])

describe("--help", () => {
  it("names every environment variable the gateway reads", () => {
    const read = new Set<string>()
    for (const file of sources(join(ROOT, "src"))) {
      const text = readFileSync(file, "utf8")
      // `env.NAME`, `env["NAME"]`, and the settings read through `.env`'s helper: `setting("NAME")`.
      for (const m of text.matchAll(
        /\benv(?:\?)?(?:\.([A-Z][A-Z0-9_]+)\b|\[["']([A-Z][A-Z0-9_]+)["']\])|setting\("([A-Z][A-Z0-9_]+)"\)/g
      )) {
        read.add(m[1] ?? m[2] ?? m[3]!)
      }
    }
    expect(read).toContain("AGENTIFY_STATE_DIR")
    expect(read).toContain("OPENAI_MODEL")
    const missing = [...read].filter((name) => !NOT_SETTINGS.has(name) && !new RegExp(`\\b${name}\\b`).test(USAGE))
    expect(missing).toEqual([])
  })

  it("says what tools lists and that a query searches it; --verbose is check's", () => {
    expect(USAGE).toContain('mcp-agentify tools ["query"]')
    expect(USAGE).toMatch(/"tools"\s+lists the whole catalog/)
    expect(parse(["tools", "send mail"], {})).toMatchObject({ _tag: "Terminal", command: { _tag: "Tools", query: "send mail" } })
    expect(parse(["tools"], {})).toMatchObject({ _tag: "Terminal", command: { _tag: "Tools" } })
    expect(parse(["check", "--verbose"], {})).toMatchObject({ _tag: "Check", verbose: true })
    expect(parse(["check"], {})).toMatchObject({ _tag: "Check", verbose: false })
    expect(() => parse(["tools", "--verbose"], {})).toThrow(/--verbose is only used with check/)
  })
})
