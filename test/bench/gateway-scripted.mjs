#!/usr/bin/env node
/**
 * The benchmarks' gateway for orchestration: the same stdio server as `dist/bin.js`
 * (`Gateway.layerServer` + `Server.serveStdio`, the stderr logger, a config file), but with
 * `LlmClient.layerScripted`, which answers every request at once with one tool call:
 * `BENCH_TOOL` (default `filesystem__read_text_file`) with the arguments in `BENCH_ARGUMENTS` (JSON).
 *
 * Plain JavaScript over the built `dist/` so that it runs under plain `node`, exactly like the CLI
 * (no TypeScript loader in the measured process). Usage: node gateway-scripted.mjs --config FILE
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Either, Layer } from "effect"
import { GatewayConfig, readConfigFile } from "../../dist/Config.js"
import * as Gateway from "../../dist/Gateway.js"
import { LlmClient, ScriptedLlm } from "../../dist/Llm.js"
import * as Logging from "../../dist/Logging.js"
import { serveStdio } from "../../dist/Server.js"

console.log = console.error

const configIndex = process.argv.indexOf("--config")
if (configIndex < 0) {
  process.stderr.write("usage: gateway-scripted.mjs --config FILE\n")
  process.exit(2)
}
const file = Either.getOrThrow(readConfigFile(process.argv[configIndex + 1]))
const tool = process.env.BENCH_TOOL ?? "filesystem__read_text_file"
const args = JSON.parse(process.env.BENCH_ARGUMENTS ?? "{}")

const ScriptedLive = LlmClient.layerScripted([{ match: () => true, reply: { tool, arguments: args } }])
const MainLive = Gateway.layerServer.pipe(
  Layer.provideMerge(ScriptedLive),
  Layer.provideMerge(GatewayConfig.layer({ env: process.env, file }))
)

const main = Effect.gen(function* () {
  const config = yield* (yield* GatewayConfig).current
  Logging.setLevel(config.logLevel)
  // The scripted layer records every request for tests to inspect; a benchmark must not pay for
  // a list that grows by one request per call.
  const scripted = yield* ScriptedLlm
  yield* Effect.forkDaemon(Effect.forever(Effect.zipRight(Effect.sleep("100 millis"), scripted.clear)))
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
