/**
 * docs/embedding.md shows `examples/embedding.ts` word for word; this runs it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { main } from "../../examples/embedding.js"
import { firstText } from "../support/mcpFixture.js"

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8")

describe("embedding the gateway in an Effect app", () => {
  it("docs/embedding.md shows exactly examples/embedding.ts", () => {
    const readme = read("docs/embedding.md")
    const example = read("examples/embedding.ts").trim()
    expect(readme).toContain("```ts\n" + example + "\n```")
  })

  it.live("the example runs: the orchestrator reads package.json through server-filesystem", () =>
    Effect.gen(function* () {
      const result = yield* main
      expect(JSON.parse(firstText(result)).name).toBe("mcp-agentify")
    })
  )

  it("loads without the optional peer @effect/opentelemetry (it is needed only with telemetry on)", () => {
    // A resolve hook that makes the package missing, as in an app that installed only the three peers.
    const hook = `export async function resolve(specifier, context, next) {
      if (specifier.startsWith("@effect/opentelemetry")) throw Object.assign(new Error("Cannot find package '" + specifier + "'"), { code: "ERR_MODULE_NOT_FOUND" })
      return next(specifier, context)
    }`
    const register = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)})`
    const program = `const lib = await import(${JSON.stringify(new URL("../../dist/index.js", import.meta.url).href)})
      const opened = lib.Config.decodeOptions({ backends: [{ id: "fs", command: "node" }] }, "x")
      console.log(Object.keys(lib).length > 10 && opened._tag === "Right" ? "loaded" : "broken")`
    const run = spawnSync(
      process.execPath,
      ["--import", `data:text/javascript,${encodeURIComponent(register)}`, "--input-type=module", "-e", program],
      {
        encoding: "utf8"
      }
    )
    expect(run.stderr).not.toContain("Cannot find package")
    expect(run.stdout.trim()).toBe("loaded")
  })
})
