/** What `ask` prints of a step the gateway held, and how the terminal answers a confirmation. */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { explainHeld, howToDeclare, rulesIn } from "../../../src/cli/Held.js"
import { askOn, type Terminal } from "../../../src/cli/Prompt.js"
import { showSteps } from "../../../src/cli/Terminal.js"

const HELD =
  'Not run: memory__create_entities was held by private-data-out and this client cannot be asked (flowGuard: "confirm"). private-data-out: it would send data read from a private source out to an open-world tool (entities[0].name from files__read_text_file {"path":"notes/release.md"})'

describe("a held step, as ask prints it", () => {
  it("says it did not run, why, and the flow declaration that lets such a call run", () => {
    const lines = showSteps([
      { tool: "files__read_text_file", ms: 8, isError: false },
      { tool: "memory__create_entities", ms: 0, isError: true, held: HELD }
    ])
    expect(lines[0]).toBe("step 1: files__read_text_file, 8 ms, ok")
    expect(lines[1]).toBe("step 2: memory__create_entities, 0 ms, held, not run")
    expect(lines).toContain(`  why: ${HELD}`)
    expect(lines.join("\n")).toContain('"flow": {"tools": {"create_entities": {"openWorld": false}}} on backend memory')
    expect(lines.join("\n")).toContain("run from a terminal (stdin a terminal), ask asks you y/n")
  })

  it("a step the user declined is declined; an error is an error", () => {
    expect(showSteps([{ tool: "t", ms: 0, isError: true, declined: true }])).toEqual(["step 1: t, 0 ms, declined, not run"])
    expect(showSteps([{ tool: "t", ms: 3, isError: true }])).toEqual(["step 1: t, 3 ms, error"])
  })

  it("names each rule that held a call, with its own declaration", () => {
    expect(rulesIn("Not run: x was held by untrusted-write, outside-plan and the user declined.")).toEqual([
      "untrusted-write",
      "outside-plan"
    ])
    expect(howToDeclare("web__post", "held by untrusted-target")[0]).toContain('"flow": {"untrusted": false}')
    expect(explainHeld("t", "Not run: refused by a policy")).toEqual(["  why: Not run: refused by a policy"])
  })
})

/** A terminal that answers each question with the next of `answers`, and keeps what was written. */
const scripted = (answers: Array<string | undefined>) => {
  const written: Array<string> = []
  const terminal: Terminal = {
    write: (text) => void written.push(text),
    readLine: (prompt) => Effect.sync(() => (written.push(prompt), answers.shift()))
  }
  return { terminal, written }
}

const confirmation = {
  message: `Allow memory__create_entities to run with these arguments?\n{}\nThe gateway holds it because:\n${HELD}`,
  requestedSchema: { type: "object", properties: {} }
}

describe("the terminal's answer to a confirmation", () => {
  it("y runs it, anything else (or the input's end) does not; the question says what to declare", async () => {
    const { terminal, written } = scripted(["y", "no", undefined])
    const ask = askOn(terminal)
    expect(await Effect.runPromise(ask("elicitation/create", confirmation))).toEqual({ action: "accept", content: {} })
    expect(await Effect.runPromise(ask("elicitation/create", confirmation))).toEqual({ action: "decline" })
    expect(await Effect.runPromise(ask("elicitation/create", confirmation))).toEqual({ action: "decline" })
    expect(written.join("")).toContain("Allow memory__create_entities to run")
    expect(written.join("")).toContain('"flow": {"tools": {"create_entities": {"openWorld": false}}} on backend memory')
    expect(written).toContain("Run it? [y/N] ")
  })

  it("a form with fields is declined without a question; other requests are not this client's", async () => {
    const { terminal, written } = scripted(["y"])
    const form = { message: "Your name?", requestedSchema: { type: "object", properties: { name: { type: "string" } } } }
    expect(await Effect.runPromise(askOn(terminal)("elicitation/create", form))).toEqual({ action: "decline" })
    expect(written).not.toContain("Run it? [y/N] ")
    const sampled = await Effect.runPromise(Effect.result(askOn(terminal)("sampling/createMessage", {})))
    expect(sampled._tag === "Failure" && sampled.failure.code).toBe(-32601)
  })
})
