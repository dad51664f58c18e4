#!/usr/bin/env node
/**
 * The `npx mcp-agentify` entry: arguments, `.env`, the config file, a stderr-only logger, then
 * the stdio server until stdin ends, `exit`, SIGINT, SIGTERM or SIGHUP (each exits 0 after
 * every backend has stopped).
 */
// First: signals are caught from the first moment (see Signals.ts).
import { onStopSignal } from "./Signals.js"
import { Cause, Effect, Either, Exit, FiberId, Layer } from "effect"
import { parseArgs } from "node:util"
import {
  type ConfigSources,
  GatewayConfig,
  LogLevelName,
  MAX_DURATION_MS,
  readConfigFile,
  readDotEnv
} from "./Config.js"
import * as Gateway from "./Gateway.js"
import { LlmClient } from "./Llm.js"
import * as Logging from "./Logging.js"
import * as Reaper from "./Reaper.js"
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

Environment: OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL, OPENAI_TIMEOUT_MS, LOG_LEVEL, DEBUG_PORT,
AGENTIFY_CONFIG, AGENTIFY_MAX_FRAME_BYTES. A .env file in the current directory may supply these
settings (never AGENTIFY_CONFIG) and never overrides variables already set; backends never inherit
them (see inheritEnv).
With no config, one backend is started: @modelcontextprotocol/server-filesystem rooted at the current
directory (refused when that is / or the home directory).
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

const dotEnv = readDotEnv(process.cwd())

const cliLogLevel = args["log-level"]
if (cliLogLevel !== undefined && !(LogLevelName.literals as ReadonlyArray<string>).includes(cliLogLevel)) {
  fail(`--log-level must be one of ${LogLevelName.literals.join(", ")}`)
}

const configPath = args.config ?? (process.env.AGENTIFY_CONFIG?.trim() || undefined)
const file = configPath === undefined ? undefined : Either.getOrElse(readConfigFile(configPath), (error) => fail(error.message))

const sources: ConfigSources = {
  env: process.env,
  dotEnv: dotEnv.settings,
  file,
  cliLogLevel: cliLogLevel as LogLevelName | undefined
}

// The LLM request timeout per attempt (default 30 s): a knob for slow local models and for tests.
const openaiTimeoutMs = (() => {
  const raw = (process.env.OPENAI_TIMEOUT_MS ?? dotEnv.settings.OPENAI_TIMEOUT_MS)?.trim()
  if (raw === undefined || raw === "") return undefined
  const ms = Number(raw)
  return Number.isInteger(ms) && ms > 0 && ms <= MAX_DURATION_MS
    ? ms
    : fail(`OPENAI_TIMEOUT_MS must be a whole number of milliseconds from 1 to ${MAX_DURATION_MS}`)
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
  if (dotEnv.refused.length > 0) {
    yield* Effect.logWarning(`ignoring variables in .env that only the real environment may set: ${dotEnv.refused.join(", ")}`)
  }
  for (const note of config.notes) yield* note.level === "warn" ? Effect.logWarning(note.message) : Effect.logDebug(note.message)
  yield* serveStdio
}).pipe(
  Effect.provide(MainLive),
  Effect.catchAllDefect((defect) => Effect.logFatal("gateway failed", defect)),
  Effect.provide(Logging.layer())
)

/** Longer than a backend's kill grace (2 s) plus its SIGKILL wait (2 s): cleanup normally ends first. */
const FORCE_EXIT_MS = 8_000

// Outlives this process only to stop its backends' process trees if it is killed (SIGKILL).
Reaper.startWatchdog()
// The event loop must stay alive while the fiber waits on nothing but effects.
const keepAlive = setInterval(() => {}, 2 ** 30)
const fiber = Effect.runFork(main)
// Always exit explicitly: a backend pipe or timer left open must not keep the process alive.
fiber.addObserver((exit) => {
  clearInterval(keepAlive)
  process.exit(Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause) ? 1 : 0)
})
onStopSignal((signal) => {
  process.stderr.write(`mcp-agentify: ${signal} received; stopping backends\n`)
  // Whatever happens to cleanup, the process ends; Reaper's exit hook kills what is left.
  setTimeout(() => process.exit(0), FORCE_EXIT_MS).unref()
  fiber.unsafeInterruptAsFork(FiberId.none)
})
