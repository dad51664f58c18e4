/**
 * The command line run: what `Arguments` read from it, served over the transport it names (stdio,
 * or Streamable HTTP with `--http`) or run as its subcommand, with the stderr-only logger and the
 * run loop that ends the process cleanly on end of input, `exit`, SIGINT, SIGTERM or SIGHUP (each
 * exits 0 once every backend has stopped).
 *
 * `main` is all of `bin.ts`. Tests and benchmarks run the same program with another LLM layer
 * (`main(argv, { llm })`), so what they measure is what users run.
 */
import { Cause, Effect, Exit, Layer } from "effect"
import * as path from "node:path"
import { GatewayConfig } from "../config/Config.js"
import * as Gateway from "../gateway/Gateway.js"
import { LlmClient } from "../orchestration/model/Llm.js"
import * as Embeddings from "../catalog/semantic/Embeddings.js"
import * as Logging from "../observability/Logging.js"
import * as Reaper from "../backend/Reaper.js"
import { SERVER_VERSION } from "../gateway/methods/Aggregate.js"
import { onPath } from "../config/ServersDir.js"
import * as Telemetry from "../observability/Telemetry.js"
import * as Debug from "../debug/Debug.js"
import { onStopSignal } from "./Signals.js"
import * as Stdio from "../transport/Stdio.js"
import * as Clients from "../gateway/clients/Clients.js"
import { type Parsed, parse, type Settings, UsageError } from "./Arguments.js"

export { parse, type Parsed, type Settings, USAGE, UsageError } from "./Arguments.js"

/**
 * How the person who started this gateway starts it again with a subcommand: `mcp-agentify` when
 * that is on PATH (installed), `npm start --` under `npm start` in a clone, else `node <this script>`.
 */
const selfCommand = (): string => {
  if (process.env.npm_lifecycle_event === "start") return "npm start --"
  if (onPath("mcp-agentify")) return "mcp-agentify"
  const script = process.argv[1]
  return script === undefined ? "mcp-agentify" : `node ${path.relative(process.cwd(), script) || script}`
}

export interface ProgramOptions {
  /** The model; OpenAI's Chat Completions API unless a test or an embedder says otherwise. */
  readonly llm?: Layer.Layer<LlmClient, never, GatewayConfig> | undefined
}

/** The gateway the settings describe, until its transport ends. Never fails; a defect is logged. */
export const program = (settings: Settings, options: ProgramOptions = {}): Effect.Effect<void> => {
  const llm =
    options.llm ??
    (settings.openaiTimeoutMs === undefined
      ? LlmClient.layerOpenAI
      : LlmClient.layerOpenAIWith({ timeoutMs: settings.openaiTimeoutMs }))
  const ConfigLive = GatewayConfig.layer(settings.sources)

  const announce = Effect.gen(function* () {
    const config = yield* (yield* GatewayConfig).current
    yield* Logging.applyLevel(config.logLevel)
    yield* Effect.logInfo("mcp-agentify started", {
      version: SERVER_VERSION,
      pid: process.pid,
      transport: settings.http === undefined ? "stdio" : "http",
      backendsFrom: config.backendsSource,
      embeddings: Embeddings.describe(config)
    })
    const dotEnv =
      settings.dotEnvRefused.length === 0
        ? []
        : [
            {
              level: "warn" as const,
              message: `ignoring variables in .env that only the real environment may set: ${settings.dotEnvRefused.join(", ")}`
            }
          ]
    yield* Logging.logNotes([...dotEnv, ...config.notes])
  })

  // One configuration for the whole program; announced before any backend starts. The debug UI
  // starts when a debug port is configured (now, or by a client's initializationOptions).
  const debug = settings.debug === undefined ? Layer.empty : Debug.layer(settings.debug)
  const GatewayLive = (
    settings.http === undefined ? debug.pipe(Layer.provideMerge(Gateway.layerStdio)) : Gateway.layerSharedWith(debug)
  ).pipe(Layer.provide(llm), Layer.provide(Layer.effectDiscard(announce)), Layer.provideMerge(ConfigLive))

  const http = settings.http
  const serve: Effect.Effect<void> =
    http === undefined
      ? // The clients (sessions, eras, where the backends start) on the Protocol stdio provides.
        Effect.scoped(Clients.run({ profile: settings.profile })).pipe(
          Effect.provide(Stdio.layerProcess),
          Effect.provide(GatewayLive)
        )
      : // Backends start while the layer builds; the server then runs until interrupted (a signal).
        // The HTTP transport is loaded only here: the stdio gateway never reads its code.
        Effect.promise(() => import("../transport/Http.js")).pipe(
          Effect.flatMap((Http) =>
            Layer.launch(Clients.layer().pipe(Layer.provide(Http.layer(http)), Layer.provide(GatewayLive)))
          ),
          Effect.catch((error) =>
            Effect.andThen(
              Effect.logFatal(`cannot serve HTTP on ${http.host}:${http.port}`, error),
              Effect.sync(() => {
                process.exitCode = 1
              })
            )
          )
        )

  return serve.pipe(
    Effect.catchDefect((defect) => Effect.logFatal("gateway failed", defect)),
    // OpenTelemetry export when OTEL_EXPORTER_OTLP_ENDPOINT is set; nothing otherwise.
    Effect.provide(Telemetry.layer(settings.sources.env, SERVER_VERSION)),
    Effect.provide(Logging.layer())
  )
}

/** Longer than a backend's kill grace (2 s) plus its SIGKILL wait (2 s): cleanup normally ends first. */
const FORCE_EXIT_MS = 8_000

/**
 * Runs the program as the process: exits 0 when it ends (1 on a failure), and on SIGINT, SIGTERM
 * or SIGHUP interrupts it so every backend stops first.
 */
export const run = (main: Effect.Effect<void>): void => {
  // Outlives this process only to stop its backends' process trees if it is killed (SIGKILL):
  // started with the first backend.
  Reaper.enableWatchdog()
  // The event loop must stay alive while the fiber waits on nothing but effects: Effect 4's
  // `runFork` does not hold it (only `runMain` does; measured on 4.1.0).
  const keepAlive = setInterval(() => {}, 2 ** 30)
  const fiber = Effect.runFork(main)
  // Always exit explicitly: a backend pipe or timer left open must not keep the process alive.
  fiber.addObserver((exit) => {
    clearInterval(keepAlive)
    process.exit(Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause) ? 1 : Number(process.exitCode ?? 0))
  })
  onStopSignal((signal) => {
    process.stderr.write(`mcp-agentify: ${signal} received; stopping backends\n`)
    // Whatever happens to cleanup, the process ends; Reaper's exit hook kills what is left.
    setTimeout(() => process.exit(0), FORCE_EXIT_MS).unref()
    fiber.interruptUnsafe()
  })
}

/** The whole CLI: `bin.ts` calls this with the process's arguments. */
export const main = (argv: ReadonlyArray<string>, options: ProgramOptions = {}): void => {
  // stdout carries protocol frames only: anything a library prints with console.log goes to stderr.
  console.log = console.error
  console.info = console.error
  console.debug = console.error
  let parsed: Parsed
  try {
    parsed = parse(argv)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    process.stderr.write(`mcp-agentify: ${error.message}\n`)
    process.exit(2)
  }
  if (parsed._tag === "Print") {
    // Printed to stdout outside the protocol: asked for, and no client is attached (`--help | less`).
    // Exits once it is written: a pipe may take it in parts, or close early (`--help | head -3`).
    process.stdout.on("error", () => process.exit(0))
    process.stdout.write(parsed.text, () => process.exit(0)) // stdout-ok: --help or --version, no client attached
    return
  }
  // The subcommands' modules are loaded only when one runs.
  if (parsed._tag === "Terminal") {
    const print = (text: string) => void process.stdout.write(text) // stdout-ok: a subcommand's answer, no client attached
    const { command, settings } = parsed
    const done = Effect.flatMap(
      Effect.promise(() => import("./Terminal.js")),
      (terminal) => terminal.run(command, settings.sources, print, options.llm)
    )
    run(Effect.flatMap(done, (code) => Effect.sync(() => (process.exitCode = code))))
    return
  }
  if (parsed._tag === "Auth") {
    const { backendId, browser, revoke, subject, settings } = parsed
    const print = (text: string) => process.stdout.write(text) // stdout-ok: auth's instructions, no client attached
    const signedIn = Effect.flatMap(
      Effect.promise(() => import("./Auth.js")),
      (auth) =>
        revoke ? auth.revoke(backendId, settings.sources, print, subject) : auth.run(backendId, settings.sources, print, browser)
    )
    run(Effect.flatMap(signedIn, (code) => Effect.sync(() => (process.exitCode = code))))
    return
  }
  if (parsed._tag === "Trust") {
    const { backendId, tool, settings } = parsed
    const trusted = Effect.flatMap(
      Effect.promise(() => import("./Trust.js")),
      (trust) => trust.run(backendId, tool, settings.sources, (text) => process.stdout.write(text)) // stdout-ok: trust's report, no client attached
    )
    run(Effect.flatMap(trusted, (code) => Effect.sync(() => (process.exitCode = code))))
    return
  }
  if (parsed._tag === "PolicySchema") {
    const printed = Effect.flatMap(
      Effect.promise(() => import("./PolicySchema.js")),
      (policy) => policy.run(parsed.settings.sources, (text) => process.stdout.write(text)) // stdout-ok: the schema, no client attached
    )
    run(Effect.flatMap(printed, (code) => Effect.sync(() => (process.exitCode = code))))
    return
  }
  if (parsed._tag === "Check") {
    const sources = parsed.settings.sources
    const report = Effect.flatMap(
      Effect.promise(() => import("./Check.js")),
      (check) => check.check(sources, (text) => process.stdout.write(text), parsed.settings.profile, parsed.verbose) // stdout-ok: check's report, no client attached
    )
    run(Effect.flatMap(report, (code) => Effect.sync(() => (process.exitCode = code))))
    return
  }
  if (parsed.settings.http === undefined && process.stdin.isTTY) {
    // A person typed it: the protocol waits on stdin, and the subcommands speak for them.
    const self = selfCommand()
    process.stderr.write(
      `mcp-agentify: serving MCP on stdio, for an MCP client; in a terminal try: ${self} tools, ` +
        `${self} call NAME '{"arg": "value"}', ${self} ask "query" (--help for more)\n`
    )
  }
  run(program(parsed.settings, options))
}
