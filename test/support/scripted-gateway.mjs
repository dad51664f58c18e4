#!/usr/bin/env node
/**
 * The CLI's stdio server (`Gateway.layerServer` + `Server.serveStdio`, the stderr logger, a config
 * file) with `LlmClient.layerScripted` in place of OpenAI, for the hardening tests and the
 * orchestration benchmark.
 *
 * The scripted model answers every query at once with one call of `SCRIPTED_TOOL` (default
 * `fx__echo`). Its arguments are `SCRIPTED_ARGUMENTS` (JSON) when set, else `{"text": <the query>}`,
 * so a test can tell each orchestration's result from every other's. Plain JavaScript over the
 * built `dist/`, so it runs under plain `node` like the CLI (no TypeScript loader in a measured
 * process). Usage: node scripted-gateway.mjs --config FILE
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Either, Layer } from "effect"
import { GatewayConfig, readConfigFile } from "../../dist/Config.js"
import * as Gateway from "../../dist/Gateway.js"
import { LlmClient } from "../../dist/Llm.js"
import * as Logging from "../../dist/Logging.js"
import { serveStdio } from "../../dist/Server.js"

console.log = console.error

const configIndex = process.argv.indexOf("--config")
if (configIndex < 0) {
  process.stderr.write("usage: scripted-gateway.mjs --config FILE\n")
  process.exit(2)
}
const file = Either.getOrThrow(readConfigFile(process.argv[configIndex + 1]))
const tool = process.env.SCRIPTED_TOOL ?? "fx__echo"
const fixedArguments = process.env.SCRIPTED_ARGUMENTS === undefined ? undefined : process.env.SCRIPTED_ARGUMENTS

let calls = 0
const ScriptedLive = LlmClient.layerScripted(
  [
    {
      match: () => true,
      reply: (request) =>
        Effect.succeed({
          toolCalls: [{ id: `call_${calls++}`, name: tool, arguments: fixedArguments ?? JSON.stringify({ text: request.query }) }],
          content: null,
          model: "scripted"
        })
    }
  ],
  // Nothing inspects the requests here; a long run must not keep them.
  { keepRequests: 0 }
)
const MainLive = Gateway.layerServer.pipe(
  Layer.provide(ScriptedLive),
  Layer.provideMerge(GatewayConfig.layer({ env: process.env, file }))
)

const main = Effect.gen(function* () {
  const config = yield* (yield* GatewayConfig).current
  Logging.setLevel(config.logLevel)
  yield* serveStdio
}).pipe(Effect.provide(MainLive), Effect.provide(Logging.layer()))

NodeRuntime.runMain(main, {
  disablePrettyLogger: true,
  disableErrorReporting: true,
  teardown: (_exit, onExit) => {
    onExit(0)
    process.exit(0)
  }
})
