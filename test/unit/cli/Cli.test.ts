/** The command line of `auth`: whose tokens `--revoke` forgets, and where its options belong. */
import { describe, expect, it } from "vitest"
import { parse } from "../../../src/cli/Cli.js"

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
