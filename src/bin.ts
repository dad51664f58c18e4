#!/usr/bin/env node
/**
 * The `npx mcp-agentify` entry: arguments, `.env`, the config file, a stderr-only logger, then
 * the stdio server until stdin ends, `exit`, SIGINT or SIGTERM (each exits 0 after cleanup).
 */
// The module, not the package's index, which loads every platform module (0.3 s, 30 MB at start-up).
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Effect, Either, Exit, Layer } from "effect"
import { parseArgs } from "node:util"
import { type ConfigSources, GatewayConfig, LogLevelName, loadDotEnv, readConfigFile } from "./Config.js"
import * as Gateway from "./Gateway.js"
import { LlmClient } from "./Llm.js"
import * as Logging from "./Logging.js"
import { SERVER_VERSION, serveStdio } from "./Server.js"

// stdout carries protocol frames only: anything a library prints with console.log goes to stderr.
console.log = console.error
console.info = console.error
console.debug = console.error

const USAGE = `Usage: mcp-agentify [--config FILE] [--log-level LEVEL]

Serves MCP over stdio (stdout carries protocol frames only; logs go to stderr).

Options:
  --config FILE      GatewayOptions or Claude Desktop style {"mcpServers": ...} JSON (env AGENTIFY_CONFIG)
  --log-level LEVEL  trace | debug | info | warn | error | fatal | silent (env LOG_LEVEL; default info)
  --help             print this and exit
  --version          print the version and exit

Environment: OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL, OPENAI_TIMEOUT_MS, LOG_LEVEL, AGENTIFY_CONFIG,
AGENTIFY_MAX_FRAME_BYTES (a .env file in the current directory is loaded first and never overrides
variables already set).
With no config, one backend is started: @modelcontextprotocol/server-filesystem rooted at the current directory.
`

const fail = (message: string): never => {
  process.stderr.write(`mcp-agentify: ${message}\n`)
  process.exit(2)
}

const args = (() => {
  try {
    return parseArgs({
      options: {
        config: { type: "string", short: "c" },
        "log-level": { type: "string" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "v" }
      },
      strict: true,
      allowPositionals: false
    }).values
  } catch (error) {
    return fail(`${(error as Error).message}\n\n${USAGE}`)
  }
})()

if (args.help) {
  process.stderr.write(USAGE)
  process.exit(0)
}
if (args.version) {
  // The one thing printed to stdout outside the protocol: asked for, and no client is attached.
  process.stdout.write(`${SERVER_VERSION}\n`) // stdout-ok: --version, no client attached
  process.exit(0)
}

loadDotEnv(process.cwd())

const cliLogLevel = args["log-level"]
if (cliLogLevel !== undefined && !(LogLevelName.literals as ReadonlyArray<string>).includes(cliLogLevel)) {
  fail(`--log-level must be one of ${LogLevelName.literals.join(", ")}`)
}

const configPath = args.config ?? (process.env.AGENTIFY_CONFIG?.trim() || undefined)
const file = configPath === undefined ? undefined : Either.getOrElse(readConfigFile(configPath), (error) => fail(error.message))

const sources: ConfigSources = {
  env: process.env,
  file,
  cliLogLevel: cliLogLevel as LogLevelName | undefined
}

// The LLM request timeout per attempt (default 30 s): a knob for slow local models and for tests.
const openaiTimeoutMs = (() => {
  const raw = process.env.OPENAI_TIMEOUT_MS?.trim()
  if (raw === undefined || raw === "") return undefined
  const ms = Number(raw)
  return Number.isInteger(ms) && ms > 0 ? ms : fail("OPENAI_TIMEOUT_MS must be a positive whole number of milliseconds")
})()

const ConfigLive = GatewayConfig.layer(sources)
const MainLive = Gateway.layerServer.pipe(
  Layer.provide(openaiTimeoutMs === undefined ? LlmClient.layerOpenAI : LlmClient.layerOpenAIWith({ timeoutMs: openaiTimeoutMs })),
  Layer.provideMerge(ConfigLive)
)

const main = Effect.gen(function* () {
  const config = yield* (yield* GatewayConfig).current
  Logging.setLevel(config.logLevel)
  yield* Effect.logInfo("mcp-agentify started", { version: SERVER_VERSION, pid: process.pid, backendsFrom: config.backendsSource })
  yield* serveStdio
}).pipe(
  Effect.provide(MainLive),
  Effect.catchAllDefect((defect) => Effect.logFatal("gateway failed", defect)),
  Effect.provide(Logging.layer())
)

NodeRuntime.runMain(main, {
  disablePrettyLogger: true,
  disableErrorReporting: true,
  // Always exit explicitly: a backend pipe or timer left open must not keep the process alive.
  teardown: (exit, onExit) => {
    const code = Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause) ? 1 : 0
    onExit(code)
    process.exit(code)
  }
})
