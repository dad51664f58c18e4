#!/usr/bin/env node
/**
 * The CLI itself (`Cli.main`: arguments, config, stdio or --http, the stderr logger) with
 * `LlmClient.layerScripted` in place of OpenAI, for the hardening tests and the orchestration
 * benchmark.
 *
 * The scripted model answers every query at once with one call of `SCRIPTED_TOOL` (default
 * `fx__echo`). Its arguments are `SCRIPTED_ARGUMENTS` (JSON) when set, else `{"text": <the query>}`,
 * so a test can tell each orchestration's result from every other's. `SCRIPTED_TOOL=none` calls no
 * tool and answers `SCRIPTED_CONTENT` instead (a model declining). Plain JavaScript over the
 * built `dist/`, so it runs under plain `node` like the CLI (no TypeScript loader in a measured
 * process). Usage: node scripted-gateway.mjs --config FILE
 */
import { Effect } from "effect"
import { main } from "../../dist/cli/Cli.js"
import { LlmClient } from "../../dist/orchestration/model/Llm.js"

const tool = process.env.SCRIPTED_TOOL ?? "fx__echo"
const fixedArguments = process.env.SCRIPTED_ARGUMENTS === undefined ? undefined : process.env.SCRIPTED_ARGUMENTS

let calls = 0
const ScriptedLive = LlmClient.layerScripted(
  [
    {
      match: () => true,
      reply: (request) =>
        Effect.succeed(
          tool === "none"
            ? { toolCalls: [], content: process.env.SCRIPTED_CONTENT ?? null, model: "scripted" }
            : {
                toolCalls: [
                  { id: `call_${calls++}`, name: tool, arguments: fixedArguments ?? JSON.stringify({ text: request.query }) }
                ],
                content: null,
                model: "scripted"
              }
        )
    }
  ],
  // Nothing inspects the requests here; a long run must not keep them.
  { keepRequests: 0 }
)
main(process.argv.slice(2), { llm: ScriptedLive })
