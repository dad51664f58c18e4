/**
 * The method table: what each JSON-RPC method does, and the gateway's lifecycle state.
 *
 * It knows nothing of stdio or HTTP: a transport hands it requests through `JsonRpc.serve`
 * (see `serveStdio` at the bottom) and relays what it sends back. Below it sit the
 * Orchestrator and the Backends; it only validates, routes and maps their failures.
 */
// The module, not the package's index, which loads every platform module (0.3 s, 30 MB at start-up).
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Context, Deferred, Effect, Layer, type Scope, Stream } from "effect"
import { Backends } from "./Backends.js"
import { describeBackend, GatewayConfig } from "./Config.js"
import { ErrorCode, type GatewayError, InvalidParams, NotInitialized, RpcError, toRpcError, withData } from "./Errors.js"
import * as JsonRpc from "./JsonRpc.js"
import * as Logging from "./Logging.js"
import { IMPLEMENTATION, negotiateProtocolVersion, textResult } from "./Mcp.js"
import * as Secrets from "./Secrets.js"
import { ORCHESTRATE_TOOL, Orchestrator } from "./Orchestrator.js"
import { type Catalog, catalogOf } from "./ToolCatalog.js"

export const SERVER_NAME = IMPLEMENTATION.name
export const SERVER_VERSION = IMPLEMENTATION.version

/**
 * The lifecycle: new -> initializing -> ready, and shutdown from any of them (final). Every exit of
 * `initialize` lands in a defined state: success in ready, failure or interruption back in new
 * (with the backends it started stopped), and none of them leaves shutdown.
 */
type Phase = "new" | "initializing" | "ready" | "shutdown"

/** Methods a client may call before `initialize` has completed. */
const BEFORE_INIT = new Set(["initialize", "ping", "shutdown"])

export class Server extends Context.Tag("mcp-agentify/Server")<
  Server,
  {
    readonly handlers: JsonRpc.Handlers<never>
    /** Relays backend events (tools changed, progress, log messages) to a connected client. */
    readonly onConnection: (connection: JsonRpc.Connection) => Effect.Effect<void, never, Scope.Scope>
    /** Completes on `exit`: the transport stops reading and the process ends. */
    readonly exit: Deferred.Deferred<void>
  }
>() {
  static layer: Layer.Layer<Server, never, GatewayConfig | Backends | Orchestrator> = Layer.effect(
    Server,
    Effect.gen(function* () {
      const gatewayConfig = yield* GatewayConfig
      const backends = yield* Backends
      const orchestrator = yield* Orchestrator
      const exit = yield* Deferred.make<void>()
      let phase: Phase = "new"

      const catalog = (): Catalog => catalogOf(backends.toolsSync())

      const initialize = (params: unknown): Effect.Effect<unknown, GatewayError> =>
        Effect.suspend((): Effect.Effect<unknown, GatewayError> => {
          if (phase !== "new") {
            return Effect.fail(
              new RpcError({
                code: ErrorCode.InvalidRequest,
                message: phase === "shutdown" ? "The gateway is shutting down" : "initialize was already called"
              })
            )
          }
          phase = "initializing"
          return Effect.uninterruptibleMask((restore) =>
            restore(runInitialize(params)).pipe(
              Effect.onExit((exit) => {
                if (phase === "shutdown") return Effect.void
                if (exit._tag === "Success") return Effect.sync(() => (phase = "ready"))
                // Failed or cancelled: as if it never happened, so the client may try again.
                phase = "new"
                return Effect.zipRight(
                  Effect.logInfo("initialize did not complete: stopping the backends it started"),
                  backends.stopAll
                )
              })
            )
          )
        })

      const runInitialize = Effect.fn("Server.initialize")(function* (params: unknown) {
        const p = (params ?? {}) as Record<string, unknown>
        const config = yield* gatewayConfig.applyInitializationOptions(p.initializationOptions)
        Logging.setLevel(config.logLevel)
        for (const note of config.notes) yield* note.level === "warn" ? Effect.logWarning(note.message) : Effect.logDebug(note.message)
        const protocolVersion = negotiateProtocolVersion(p.protocolVersion)
        yield* Effect.logInfo("initialize", {
          client: (p.clientInfo as { name?: unknown } | undefined)?.name ?? "unknown",
          protocolVersion,
          backendsFrom: config.backendsSource,
          backends: config.backends.map(describeBackend),
          model: config.model,
          routing: config.routing,
          openaiKey: config.openaiApiKeySource
        })
        yield* backends.start(config.backends, {
          startupTimeoutMs: config.startupTimeoutMs,
          requestTimeoutMs: config.requestTimeoutMs,
          maxBackendFrameBytes: config.maxBackendFrameBytes
        })
        return {
          protocolVersion,
          capabilities: { tools: { listChanged: true } },
          serverInfo: { name: SERVER_NAME, version: SERVER_VERSION },
          instructions:
            "Call agentify_orchestrate with a plain-language query to have the right backend tool chosen and run, or call a backend tool directly by its namespaced name."
        }
      })

      const listTools = Effect.gen(function* () {
        const config = yield* gatewayConfig.current
        const backendTools = config.exposeBackendTools ? catalog().entries.map((e) => e.tool) : []
        return { tools: [ORCHESTRATE_TOOL, ...backendTools] }
      })

      /** The agentify_orchestrate tool: its failures are results with isError, naming the code. */
      const orchestrateTool = (args: unknown) =>
        orchestrator.orchestrate(args).pipe(
          Effect.catchAll((error) => {
            const wire = toRpcError(error)
            return Effect.succeed({
              ...textResult(`Error ${wire.code}: ${wire.message}`, true),
              structuredContent: { error: wire }
            })
          })
        )

      /**
       * A name the catalog does not list. A backend that is not ready (starting, restarting after a
       * crash, failed, disabled) lists no tools, yet a client may still hold their names: say what
       * is wrong with the backend (-32004) rather than "unknown tool". The longest id wins, as ids
       * may contain "__".
       */
      const unlistedTool = Effect.fn("Server.unlistedTool")(function* (p: Record<string, unknown>, name: string) {
        const owner = (yield* backends.states)
          .filter((s) => s.state !== "ready" && name.startsWith(`${s.id}__`))
          .sort((a, b) => b.id.length - a.id.length)[0]
        if (owner !== undefined) {
          return yield* backends.executeOnBackend(owner.id, "tools/call", { ...p, name: name.slice(owner.id.length + 2) })
        }
        return yield* new InvalidParams({ message: `Unknown tool: ${name}`, issues: [`name: no tool named '${name}'`] })
      })

      // A plain function rather than a traced generator: this is the passthrough hot path, where a
      // span per call (and the stack captured for it) cost more than the rest of the gateway's work.
      const callTool = (params: unknown): Effect.Effect<unknown, GatewayError> => {
        const p = params as Record<string, unknown> | undefined
        if (typeof p?.name !== "string") {
          return Effect.fail(new InvalidParams({ message: "Invalid params: name: is required", issues: ["name: is required"] }))
        }
        if (p.arguments !== undefined && (typeof p.arguments !== "object" || p.arguments === null || Array.isArray(p.arguments))) {
          return Effect.fail(
            new InvalidParams({ message: "Invalid params: arguments: must be an object", issues: ["arguments: must be an object"] })
          )
        }
        if (p.name === ORCHESTRATE_TOOL.name) return orchestrateTool(p.arguments ?? {})
        const entry = catalog().byName.get(p.name)
        if (entry === undefined) return unlistedTool(p, p.name)
        // Forwarded unchanged but for the backend's own tool name: _meta (progressToken) included.
        return backends.executeOnBackend(entry.backendId, "tools/call", { ...p, name: entry.toolName })
      }

      /** Adds the query to an orchestration failure's data. */
      const orchestrateTask = (params: unknown) =>
        orchestrator.orchestrate(params).pipe(
          Effect.mapError((error): GatewayError => {
            const query = (params as { query?: unknown } | undefined)?.query
            return new RpcError(withData(toRpcError(error), typeof query === "string" ? { query } : {}))
          })
        )

      const shutdown = Effect.gen(function* () {
        phase = "shutdown"
        yield* Effect.logInfo("shutdown requested: stopping backends")
        yield* backends.stopAll
        return null
      })

      const request = (req: JsonRpc.Request): Effect.Effect<unknown, GatewayError> => {
        if (phase !== "ready" && !BEFORE_INIT.has(req.method)) {
          if (phase === "shutdown") {
            return Effect.fail(new RpcError({ code: ErrorCode.InvalidRequest, message: "The gateway is shutting down" }))
          }
          return Effect.fail(new NotInitialized({ method: req.method }))
        }
        switch (req.method) {
          case "initialize":
            return initialize(req.params)
          case "ping":
            return Effect.succeed({})
          case "shutdown":
            return shutdown
          case "tools/list":
            return listTools
          case "tools/call":
            return callTool(req.params)
          case "agentify/orchestrateTask":
            return orchestrateTask(req.params)
          // The gateway offers no resources or prompts; empty lists keep generic clients happy.
          case "resources/list":
            return Effect.succeed({ resources: [] })
          case "resources/templates/list":
            return Effect.succeed({ resourceTemplates: [] })
          case "prompts/list":
            return Effect.succeed({ prompts: [] })
          default:
            return Effect.fail(new RpcError({ code: ErrorCode.MethodNotFound, message: `Method not found: ${req.method}` }))
        }
      }

      const notification = (n: JsonRpc.Notification): Effect.Effect<void> => {
        switch (n.method) {
          case "notifications/initialized":
          case "initialized":
            return Effect.logDebug("client initialized")
          case "exit":
            return Effect.zipRight(Effect.logInfo("exit requested"), Deferred.succeed(exit, undefined))
          default:
            return Effect.logDebug("ignoring notification", { method: n.method })
        }
      }

      const onConnection = (connection: JsonRpc.Connection) =>
        Effect.gen(function* () {
          const relayToolsChanged = backends.toolsChanged.pipe(
            Stream.filter(() => phase === "ready"),
            Stream.runForEach(() => connection.notify("notifications/tools/list_changed", {}))
          )
          // A listener, not a stream: it runs before the backend's later replies are delivered, so
          // a call's progress reaches the client before its result.
          // Only what a client can place: progress (it carries the client's own token) and log
          // messages (tagged with the backend). Resource notifications would name resources the
          // gateway does not offer.
          // Log messages are the backend's own text: scrubbed like everything the gateway prints.
          yield* backends.relayNotifications(({ backendId, method, params }) =>
            method === "notifications/message"
              ? connection.notify(method, Secrets.scrubDeep({
                  ...(params as object),
                  logger: (params as { logger?: string } | undefined)?.logger ?? backendId
                }))
              : method === "notifications/progress"
              ? connection.notify(method, params)
              : Effect.void
          )
          yield* Effect.forkScoped(relayToolsChanged)
        })

      return { handlers: { request, notification }, onConnection, exit }
    })
  )
}

/** The client closed its end of stdout: nothing more can reach it, and end of input follows. */
const ignoreStdoutError = (): void => {}

/**
 * Serves the gateway on this process's stdin/stdout until stdin ends or `exit` arrives, then
 * stops every backend. Nothing but frames is ever written to stdout.
 */
export const serveStdio: Effect.Effect<void, never, Server | GatewayConfig | Backends> = Effect.gen(function* () {
  // The writer listens for stdout errors only while it runs: the EPIPE of a last reply written to
  // a client that went away arrives after, and unheard it would crash the process (exit 1, with
  // the backends not yet stopped). Kept for the life of the process.
  if (!process.stdout.listeners("error").includes(ignoreStdoutError)) process.stdout.on("error", ignoreStdoutError)
  const server = yield* Server
  const config = yield* (yield* GatewayConfig).current
  const backends = yield* Backends
  yield* JsonRpc.serve(
    {
      // stdin as an @effect/platform stream (a chunk at a time, so its cost is per chunk, not per
      // frame); replies go straight to stdout, a tick's frames in one write (see
      // JsonRpc.ServeOptions: a Sink per reply measured 2-3x the gateway's CPU per call).
      input: NodeStream.fromReadable(() => process.stdin, (error) => error, { closeOnDone: false }),
      output: process.stdout,
      handlers: server.handlers,
      maxFrameBytes: config.maxFrameBytes,
      stop: server.exit
    },
    server.onConnection
  )
  yield* Effect.logInfo("client disconnected: stopping backends")
  yield* backends.stopAll
})
