/**
 * The gateway for a person in a terminal: `tools` (the whole catalog: every tool, its backend, one
 * line of its description, however many there are, since a terminal is not a model's context;
 * `tools QUERY`, the catalog's tools that match, best first; exit 1 when a backend could not
 * start), `call NAME '{json}'` (one tool call, its
 * result printed; a mistyped name gets "did you mean"), `ask "query"` (one orchestration: the tools
 * offered, the model's first choice, each step as it ran, the result and the model's answer; a
 * step the gateway held says why and what to declare, and in a terminal `ask` asks y/n first).
 *
 * Each waits for the backends it needs to start (at least `TERMINAL_STARTUP_MS`, longer with a
 * longer `startupTimeoutMs`), naming those still starting, and exits 1 when what it ran failed, a
 * backend it needed could not start, or a step was held or declined.
 *
 * Each runs the gateway as a client would see it: the configured backends started, one session
 * opened in process, and the same method table a client's `tools/list`, `tools/call` and
 * `agentify/orchestrateTask` reach, so what a person sees here is what an IDE gets.
 */
import { Effect, Fiber, Layer, PubSub, Schedule } from "effect"
import { randomUUID } from "node:crypto"
import { GatewayConfig, type ConfigSources } from "../config/Config.js"
import { toRpcError } from "../protocol/Errors.js"
import { type OrchestrationRecord, Events } from "../observability/Events.js"
import * as Gateway from "../gateway/Gateway.js"
import { LlmClient } from "../orchestration/model/Llm.js"
import * as Logging from "../observability/Logging.js"
import * as Secrets from "../observability/Secrets.js"
import { type Edge, Session } from "../gateway/session/Session.js"
import { Backends } from "../backend/Backends.js"
import { closest } from "../config/Suggest.js"
import { field, stringField } from "../json/Json.js"
import * as Meta from "../json/Meta.js"
import * as Caller from "../gateway/pipeline/Caller.js"
import { namespaceOf } from "../config/Config.js"
import type { BackendStatus } from "../observability/BackendStatus.js"
import { explainHeld } from "./Held.js"
import { MAX_SEARCH_LIMIT, SEARCH_TOOL_NAME } from "../gateway/methods/Listing.js"
import * as Prompt from "./Prompt.js"

/** The person at the terminal: the local user; results are printed, so no reply bound applies. */
const TERMINAL: Edge = { name: "terminal", localUser: true, boundsReplies: false }

export type Command =
  | { readonly _tag: "Tools"; readonly query?: string }
  | { readonly _tag: "Call"; readonly name: string; readonly arguments: unknown }
  | { readonly _tag: "Ask"; readonly query: string; readonly cwd: string; readonly mode?: "tools" | "code" }

/** A request that failed: its JSON-RPC error. */
class Refused {
  constructor(readonly error: { readonly code: number; readonly message: string; readonly data?: unknown }) {}
}

/**
 * Each step as it ran (`_meta["agentify/steps"]`, or a failure's `data.steps`): tool, time,
 * outcome; a step the gateway held, with why and what to declare so that it runs without asking.
 */
export const showSteps = (steps: unknown): Array<string> =>
  Array.isArray(steps)
    ? steps.flatMap((s: unknown, i) => {
        const held = stringField(s, "held")
        // A hold the user was asked about and declined is theirs: declined.
        const outcome =
          field(s, "declined") === true || held?.includes("and the user declined") === true
            ? "declined, not run"
            : held !== undefined
              ? "held, not run"
              : field(s, "isError") === true
                ? "error"
                : "ok"
        const tool = String(field(s, "tool"))
        return [
          `step ${i + 1}: ${tool}, ${String(field(s, "ms"))} ms, ${outcome}`,
          ...(held === undefined ? [] : explainHeld(tool, held))
        ]
      })
    : []

/** Whether a step did not run: held by the gateway, or declined. */
const refusedStep = (steps: unknown): boolean =>
  Array.isArray(steps) && steps.some((s: unknown) => field(s, "declined") === true || stringField(s, "held") !== undefined)

/** The least time the terminal commands give backends to start (a first `npx` download takes a while), as `check` does. */
export const TERMINAL_STARTUP_MS = 30_000

/**
 * Waits until none of the backends `needed` is starting, for at most `boundMs`, saying which it
 * waits for (`say`) when one is; the ones still starting after that.
 */
const settled = (
  states: Effect.Effect<ReadonlyArray<BackendStatus>>,
  needed: (status: BackendStatus) => boolean,
  boundMs: number,
  say: (text: string) => void
): Effect.Effect<ReadonlyArray<string>> => {
  const starting = Effect.map(states, (all) =>
    all.filter((s) => s.enabled && s.state === "starting" && needed(s)).map((s) => s.id)
  )
  return Effect.flatMap(starting, (first) => {
    if (first.length === 0) return Effect.succeed(first)
    say(`mcp-agentify: waiting for ${first.join(", ")} to start (at most ${Math.round(boundMs / 1000)} s)\n`)
    return starting.pipe(
      Effect.repeat({ schedule: Schedule.spaced("100 millis"), until: (still) => still.length === 0 }),
      Effect.timeoutOption(boundMs),
      Effect.flatMap((waited) => (waited._tag === "Some" ? Effect.succeed(waited.value) : starting))
    )
  })
}

/** The backends a command needs: a call's, by its namespace (every backend's for the gateway's own tools); all for the others. */
const neededBy = (
  command: Command,
  configs: ReadonlyArray<{ readonly id: string; readonly namespace?: string | false | undefined }>
) => {
  if (command._tag !== "Call") return () => true
  const owners = configs.filter((c) => namespaceOf(c) === "" || command.name.startsWith(`${namespaceOf(c)}__`)).map((c) => c.id)
  return (status: BackendStatus) => owners.length === 0 || owners.includes(status.id)
}

const oneLine = (text: unknown, width: number): string => {
  const line = String(text ?? "")
    .split("\n")[0]!
    .trim()
  return line.length > width ? `${line.slice(0, width - 1)}…` : line
}

/** The tools of a `tools/list` result, as far as they are well formed. */
const toolsOf = (listed: unknown): Array<{ name: string; description?: string }> => {
  const tools = field(listed, "tools")
  return (Array.isArray(tools) ? tools : []).flatMap((tool: unknown) => {
    const name = stringField(tool, "name")
    const description = stringField(tool, "description")
    return name === undefined ? [] : [description === undefined ? { name } : { name, description }]
  })
}

/** A CallToolResult as a person reads it: text blocks as text, anything else as JSON. */
export const formatResult = (result: unknown): string => {
  const content = field(result, "content")
  const blocks = (Array.isArray(content) ? content : []).map((block: unknown) => {
    const text = stringField(block, "text")
    return field(block, "type") === "text" && text !== undefined ? text : JSON.stringify(block, null, 2)
  })
  const structured = field(result, "structuredContent")
  if (blocks.length === 0 && structured !== undefined) blocks.push(JSON.stringify(structured, null, 2))
  return blocks.join("\n")
}

const showOrchestration = (record: OrchestrationRecord | undefined): Array<string> => {
  if (record === undefined) return []
  const offered = record.offered.slice(0, 10).map((t) => (t.score === undefined ? t.name : `${t.name} (${t.score.toFixed(2)})`))
  const more = record.offered.length > 10 ? `, and ${record.offered.length - 10} more` : ""
  return [
    `offered (${record.offered.length}, in the order the task ranking sent them${
      record.offered.some((t) => t.score !== undefined)
        ? "; in brackets each one's word-match score alone, one input of that ranking"
        : ""
    }): ${offered.join(", ")}${more}`,
    `model: ${record.model ?? "-"}${record.llmMs === undefined ? "" : `, ${record.llmMs} ms`}`,
    `choice: ${record.choice === undefined ? "none" : `${record.choice.name} ${record.choice.arguments}`}`,
    ...(record.explanation ? [`model says: ${record.explanation}`] : []),
    `plan: ${record.plan === undefined ? "none" : `${record.plan.method} on ${record.plan.backendId} ${JSON.stringify(record.plan.params)}`}`
  ]
}

/**
 * The terminal session's outgoing messages: a request of the gateway's (a confirmation) answered
 * on `terminal` when there is one; nothing else has anywhere to go.
 */
/** `tools`' table: each tool with its backend and description, the count, and what did not start. */
const showTools = (
  tools: ReadonlyArray<{ name: string; description?: string }>,
  failed: ReadonlyArray<{ id: string; state: string; lastError?: string | undefined }>,
  notReady: ReadonlyArray<string>,
  query?: string
): string => {
  const rows = tools.map((t) => {
    const owner = /^\[([^\]]+)\] /.exec(t.description ?? "")
    return {
      name: t.name,
      backend: owner?.[1] ?? "gateway",
      description: oneLine(owner === null ? t.description : t.description!.slice(owner[0].length), 100)
    }
  })
  const width = Math.max(4, ...rows.map((r) => r.name.length))
  const backendWidth = Math.max(7, ...rows.map((r) => r.backend.length))
  return (
    [
      `${"tool".padEnd(width)}  ${"backend".padEnd(backendWidth)}  description`,
      ...rows.map((r) => `${r.name.padEnd(width)}  ${r.backend.padEnd(backendWidth)}  ${r.description}`),
      `${tools.length} ${tools.length === 1 ? "tool" : "tools"}${
        query === undefined
          ? ""
          : ` for "${query}", best first${tools.length >= MAX_SEARCH_LIMIT ? ` (the best ${MAX_SEARCH_LIMIT}; more words narrow it)` : ""}`
      }`,
      ...failed.map(
        (b) => `backend ${b.id} ${b.state === "failed" ? "failed" : "needs auth"}: ${b.lastError ?? "no reason given"}`
      ),
      ...notReady
    ].join("\n") + "\n"
  )
}

const answering =
  (terminal: Prompt.Terminal | undefined, session: () => Session) =>
  (message: unknown): boolean => {
    const id = field(message, "id")
    const method = stringField(message, "method")
    if (terminal === undefined || typeof id !== "number" || method === undefined) return false
    Effect.runFork(
      Prompt.askOn(terminal)(method, field(message, "params")).pipe(
        Effect.match({
          onSuccess: (result) => session().resolve(id, { result }),
          onFailure: (error) => session().resolve(id, { error: { code: error.code, message: error.message } })
        })
      )
    )
    return true
  }

/** A request on the terminal's session, as a client sends it; failing with what the client would get. */
type Request = (method: string, params: unknown) => Effect.Effect<unknown, Refused>

/**
 * The terminal's session, opened and initialized as a client's would be; `asking`: the terminal
 * that answers confirmations, if any. Its `request`s go through the same method table.
 */
const connect = (asking: Prompt.Terminal | undefined) =>
  Effect.gen(function* () {
    const gateway = yield* Gateway.Gateway
    const session: Session = new Session({
      id: `terminal-${randomUUID()}`,
      edge: TERMINAL,
      send: answering(asking, () => session)
    })
    // A person reads the whole catalog: no `maxListedTools` bound, which is for a model's context.
    session.maxListedTools = Number.MAX_SAFE_INTEGER
    const handlers = yield* gateway.open(session)
    let nextId = 1
    const request: Request = (method, params) =>
      Effect.suspend(() => {
        const id = nextId++
        return Caller.as({ session })(
          handlers.request(
            { id, method, params },
            {
              id,
              notify: () => Effect.void,
              notifyUnsafe: () => {},
              send: () => false
            }
          )
        )
      }).pipe(
        // The terminal is this session's edge: what a client would get as the reply is printed.
        Effect.mapError((error) => {
          const wire = toRpcError(error)
          return new Refused({ code: wire.code, message: Secrets.scrub(wire.message), data: wire.data })
        })
      )
    yield* request("initialize", {
      protocolVersion: "2025-11-25",
      // A person at a terminal answers confirmations (see Prompt).
      capabilities: asking === undefined ? {} : { elicitation: { form: {} } },
      clientInfo: { name: "mcp-agentify-terminal", version: "1" }
    })
    yield* Caller.as({ session })(handlers.notification({ method: "notifications/initialized", params: undefined }))
    return request
  })

/**
 * The backends starting, waited for silently within startupTimeoutMs (as a client's first
 * request waits); then those `command` needs, longer and saying so (a first `npx` download takes a
 * while). What is still not ready, as a sentence (none: empty).
 */
const awaitBackends = (command: Command) =>
  Effect.gen(function* () {
    const backends = yield* Backends
    yield* backends.settle
    const config = yield* (yield* GatewayConfig).current
    const stillStarting = yield* settled(
      backends.states,
      neededBy(command, config.backends),
      Math.max(config.startupTimeoutMs, TERMINAL_STARTUP_MS),
      (text) => void process.stderr.write(text)
    )
    return stillStarting.length === 0
      ? []
      : [
          `backend${stillStarting.length === 1 ? "" : "s"} still starting: ${stillStarting.join(", ")} (raise startupTimeoutMs, or run mcp-agentify check to see why)`
        ]
  })

/** `tools [QUERY]`: every tool, or the catalog's best matches; exit 1 when a backend is not there to list its own. */
const listTools = (
  command: Extract<Command, { readonly _tag: "Tools" }>,
  request: Request,
  notReady: ReadonlyArray<string>,
  print: (text: string) => void
) =>
  Effect.gen(function* () {
    const backends = yield* Backends
    const tools: Array<{ name: string; description?: string }> = []
    if (command.query === undefined) {
      let cursor: string | undefined
      do {
        const page = yield* request("tools/list", cursor === undefined ? {} : { cursor })
        tools.push(...toolsOf(page))
        cursor = stringField(page, "nextCursor")
      } while (cursor !== undefined)
    } else {
      // The search a client's model makes, at its largest: the catalog's best matches.
      const found = yield* request("tools/call", {
        name: SEARCH_TOOL_NAME,
        arguments: { query: command.query, limit: MAX_SEARCH_LIMIT }
      })
      tools.push(...toolsOf(field(found, "structuredContent")))
    }
    // A backend that could not start lists nothing: that is a failure, as `check` says.
    const failed = (yield* backends.states).filter((b) => b.state === "failed" || b.state === "needs auth")
    print(showTools(tools, failed, notReady, command.query))
    return failed.length === 0 && notReady.length === 0 ? 0 : 1
  })

/** `call NAME '{json}'`: the result printed; an unknown name refused with the closest one. */
const callTool = (command: Extract<Command, { readonly _tag: "Call" }>, request: Request, print: (text: string) => void) =>
  Effect.gen(function* () {
    const result = yield* request("tools/call", { name: command.name, arguments: command.arguments }).pipe(
      Effect.catchIf(
        (refused) => refused.error.code === -32602 && refused.error.message.startsWith("Unknown tool"),
        (refused) =>
          Effect.flatMap(request("tools/list", {}), (listed) => {
            const names = toolsOf(listed).map((t) => t.name)
            const best = closest(command.name, names)
            const hint = best === undefined ? " (mcp-agentify tools lists them)" : ` (did you mean '${best}'?)`
            return Effect.fail(new Refused({ ...refused.error, message: `${refused.error.message}${hint}` }))
          })
      )
    )
    print(`${formatResult(result)}\n`)
    return field(result, "isError") === true ? 1 : 0
  })

/** `ask "query"`: one orchestration, its record, steps, result and answer printed. */
const ask = (command: Extract<Command, { readonly _tag: "Ask" }>, request: Request, print: (text: string) => void) =>
  Effect.gen(function* () {
    const events = yield* Events
    // The orchestration's own record (offer, choice, plan) comes from the events hub.
    const records = yield* events.subscribe
    const asked = yield* Effect.forkChild(
      request("agentify/orchestrateTask", {
        query: command.query,
        context: { currentWorkingDirectory: command.cwd },
        ...(command.mode === undefined ? {} : { mode: command.mode })
      })
    )
    const outcome = yield* Fiber.join(asked).pipe(Effect.result)
    // What the hub holds now, none included: `PubSub.takeAll` would wait for one.
    const seen = yield* PubSub.takeUpTo(records, Number.POSITIVE_INFINITY)
    let record: OrchestrationRecord | undefined
    for (const event of seen) if (event._tag === "Orchestration") record = event
    const lines = showOrchestration(record)
    if (outcome._tag === "Failure") {
      const { code, message, data } = outcome.failure.error
      const ran = showSteps(field(data, "steps"))
      print([...lines, ...ran, `error ${code}: ${message}`].join("\n") + "\n")
      return 1
    }
    const answer = Meta.get(outcome.success, "agentify/answer")
    const script = Meta.get(outcome.success, "agentify/code")
    const steps = Meta.get(outcome.success, "agentify/steps")
    print(
      [
        ...lines,
        ...(typeof script === "string" ? ["script:", script] : []),
        ...showSteps(steps),
        "result:",
        formatResult(outcome.success),
        ...(typeof answer === "string" && answer.trim() !== "" ? ["answer:", answer] : [])
      ].join("\n") + "\n"
    )
    // A step that did not run leaves the request half done, whatever the model answered.
    return field(outcome.success, "isError") === true || refusedStep(steps) ? 1 : 0
  })

/**
 * Runs `command`; succeeds with the exit code (0, or 1 when the call failed). What a person
 * asked for goes to `print` (stdout), the gateway's log to stderr as always. With a `terminal`
 * (stdin is one), `ask` asks there before a call that needs consent; without, such a call is held.
 */
export const run = (
  command: Command,
  sources: ConfigSources,
  print: (text: string) => void,
  llm: Layer.Layer<LlmClient, never, GatewayConfig> = LlmClient.layerOpenAI,
  terminal: Prompt.Terminal | undefined = process.stdin.isTTY === true ? Prompt.processTerminal : undefined
): Effect.Effect<number> =>
  Effect.gen(function* () {
    const request = yield* connect(command._tag === "Ask" ? terminal : undefined)
    const notReady = yield* awaitBackends(command)
    if (command._tag !== "Tools" && notReady.length > 0) process.stderr.write(`mcp-agentify: ${notReady[0]}\n`)
    switch (command._tag) {
      case "Tools":
        return yield* listTools(command, request, notReady, print)
      case "Call":
        return yield* callTool(command, request, print)
      case "Ask":
        return yield* ask(command, request, print)
    }
  }).pipe(
    Effect.catch((refused) =>
      Effect.sync(() => {
        print(`error ${refused.error.code}: ${refused.error.message}\n`)
        return 1
      })
    ),
    Effect.scoped,
    Effect.provide(
      Gateway.layerShared.pipe(
        Layer.provide(llm),
        // The level is set before the backends start (they start while the layer builds).
        Layer.provide(
          Layer.effectDiscard(
            Effect.flatMap(GatewayConfig, (config) => Effect.flatMap(config.current, (c) => Logging.applyLevel(c.logLevel)))
          )
        ),
        Layer.provideMerge(GatewayConfig.layer(sources))
      )
    ),
    // A person reads what the gateway says here: sentences, not JSON lines.
    Effect.provide(Logging.layer(Logging.personSink))
  )
