/**
 * The scrubber as a reply sees it: what the request sent comes back as sent (masking it would
 * confirm a guess), every other registered secret is masked, in each of its forms.
 */
import { describe, expect, it } from "vitest"
import * as Secrets from "../../../src/observability/Secrets.js"

describe("a reply's echo of its request", () => {
  const guessed = "guessable-env-value-31"
  const other = "another-held-secret-77"
  Secrets.register(guessed)
  Secrets.register(other)

  it("a secret the request holds, at any depth or as a key, is not masked; one it does not hold is", () => {
    for (const params of [{ name: guessed }, { arguments: { deep: [{ [guessed]: 1 }] } }, { text: `x ${guessed} y` }]) {
      const sent = Secrets.sentIn(params)
      expect(Secrets.scrub(`Unknown tool: ${guessed}; ${other}`, sent)).toBe(`Unknown tool: ${guessed}; <redacted>`)
    }
    expect(Secrets.scrub(`Unknown tool: ${guessed}`)).toBe("Unknown tool: <redacted>")
    expect(Secrets.sentIn({ name: "nothing held" }).size).toBe(0)
  })

  it("sending one form of a secret lets each of its forms through (the client knows the value)", () => {
    const sent = Secrets.sentIn({ q: guessed })
    const b64 = Buffer.from(`Basic ${guessed}`).toString("base64")
    expect(Secrets.scrub(`${encodeURIComponent(guessed)} ${b64}`, sent)).toBe(`${encodeURIComponent(guessed)} ${b64}`)
    expect(Secrets.scrubDeep({ data: [guessed, other] }, sent)).toEqual({ data: [guessed, "<redacted>"] })
  })
})
