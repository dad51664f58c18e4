/**
 * `npm run eval -- --live`, as a user with a model runs it, here against a local Chat Completions
 * server: the report's figures come from what the model did (its choice at step 1, the validity of
 * its arguments, the steps, the tokens the server reported).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { execFile } from "node:child_process"
import { join } from "node:path"
import { promisify } from "node:util"
import { type FakeOpenAI, startFakeOpenAI } from "../../support/fakeOpenAI.js"
import { cleanEnv, ROOT } from "../../support/stdioClient.js"

let fake: FakeOpenAI
beforeAll(async () => {
  fake = await startFakeOpenAI()
})
afterAll(async () => {
  await fake.close()
})

describe("the live eval", () => {
  it("reports tool accuracy at step 1, argument validity, steps, tokens and latency per query and in total", async () => {
    // The first three labelled queries all want read_text_file; the model reads a file that exists,
    // then answers "Done." (one step); its usage is 2 tokens per request.
    fake.setReply({ tool: "filesystem__read_text_file", arguments: { path: "package.json" } })
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        join(ROOT, "node_modules", "tsx", "dist", "cli.mjs"),
        join(ROOT, "test", "eval", "routing.ts"),
        "--live",
        "--limit",
        "3",
        "--json"
      ],
      { env: cleanEnv({ OPENAI_API_KEY: "sk-live-eval-1234567", OPENAI_BASE_URL: fake.baseUrl }), timeout: 60_000 }
    )
    const report = JSON.parse(stdout)
    expect(report).toMatchObject({
      queries: 3,
      toolAccuracyAtStep1: 1,
      argumentsValid: 1,
      meanSteps: 1,
      completed: 1,
      // Per query: the dry run's one request, the run's two (the call, then the answer).
      tokens: 3 * 3 * 2
    })
    expect(report.outcomes).toHaveLength(3)
    for (const o of report.outcomes) {
      expect(o.expected).toBe("filesystem__read_text_file")
      expect(o.chosen).toBe("filesystem__read_text_file")
      expect(o.planMs).toBeGreaterThanOrEqual(0)
    }
  }, 90_000)
})
