/**
 * The README's embedding example is `examples/embedding.ts`, word for word; this runs it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { main } from "../examples/embedding.js"
import { firstText } from "./support/mcpFixture.js"

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), "utf8")

describe("embedding the gateway in an Effect app", () => {
  it("the README shows exactly examples/embedding.ts", () => {
    const readme = read("README.md")
    const example = read("examples/embedding.ts").trim()
    expect(readme).toContain("```ts\n" + example + "\n```")
  })

  it.live("the example runs: the orchestrator reads package.json through server-filesystem", () =>
    Effect.gen(function* () {
      const result = yield* main
      expect(JSON.parse(firstText(result)).name).toBe("mcp-agentify")
    })
  )
})
