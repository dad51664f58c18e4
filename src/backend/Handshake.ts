/**
 * The MCP session with a backend: `server/discover` or `initialize` with version fallback, the tool
 * list, its requests served, a lost session noticed, and its stderr logged.
 */
import { Cause, Effect, Exit, Option, Queue } from "effect"
import { type AskError, BackendError, InternalError, toRpcError } from "../protocol/Errors.js"
import * as Inbound from "../jsonrpc/Inbound.js"
import { failure, type Id, success } from "../jsonrpc/JsonRpc.js"
import * as Mcp from "../protocol/Mcp.js"
import { httpStatusOf } from "./Channel.js"
import { ClientInfo, paramsFor } from "./Contract.js"
import { Connection, LogLine } from "./Connection.js"
import { field, isObject, objectField, stringField } from "../json/Json.js"
import * as Meta from "../json/Meta.js"

// The session

const MAX_TOOL_PAGES = 1_000

export type Requester = (method: string, params: unknown, timeoutMs: number) => Effect.Effect<unknown, BackendError>

export const listAllTools = (request: Requester, timeoutMs: number): Effect.Effect<ReadonlyArray<Mcp.Tool>, BackendError> =>
  Effect.gen(function* () {
    const tools: Array<Mcp.Tool> = []
    const seen = new Set<string>()
    let cursor: string | undefined = undefined
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const result = yield* request("tools/list", cursor === undefined ? {} : { cursor }, timeoutMs)
      const listed = field(result, "tools")
      for (const tool of Array.isArray(listed) ? listed : []) {
        const name = stringField(tool, "name")
        if (!isObject(tool) || name === undefined) continue
        // A tool without a schema still takes an object (the MCP default).
        const inputSchema = objectField(tool, "inputSchema") ?? { type: "object" }
        tools.push({ ...tool, name, inputSchema })
      }
      const next = field(result, "nextCursor")
      if (typeof next !== "string" || next === "" || seen.has(next)) break
      seen.add(next)
      cursor = next
    }
    return tools
  })

interface Session {
  readonly protocolVersion: string
  readonly capabilities: Readonly<Record<string, unknown>>
  readonly serverInfo: unknown
  readonly instructions: string | undefined
}

/**
 * `initialize`, offering the newest version first. A server that rejects the offer with an error,
 * or answers with a version we do not speak, is asked again with the next older one.
 */
export const initialize = (
  connection: Connection,
  clientInfo: ClientInfo,
  capabilities: Readonly<Record<string, unknown>>,
  timeoutMs: number,
  versions: ReadonlyArray<string> = Mcp.SUPPORTED_PROTOCOL_VERSIONS
): Effect.Effect<Session, BackendError> =>
  Effect.gen(function* () {
    const problems: Array<string> = []
    for (const version of versions) {
      const outcome = yield* connection
        .request("initialize", { protocolVersion: version, capabilities, clientInfo }, timeoutMs)
        .pipe(Effect.result)
      if (outcome._tag === "Failure") {
        // A transport failure (HTTP 401, 503...) is not about the version: no use offering another.
        if (outcome.failure.reason !== "call_failed" || httpStatusOf(outcome.failure.detail) !== undefined) {
          return yield* outcome.failure
        }
        problems.push(`${version}: ${outcome.failure.summary}`)
        continue
      }
      const result = outcome.success
      const answered = field(result, "protocolVersion")
      if (Mcp.isSupportedProtocolVersion(answered) && (versions.length > 1 || answered === version)) {
        return {
          protocolVersion: answered,
          capabilities: objectField(result, "capabilities") ?? {},
          serverInfo: field(result, "serverInfo"),
          instructions: stringField(result, "instructions")
        }
      }
      problems.push(`${version}: answered with unsupported version ${JSON.stringify(answered)}`)
    }
    return yield* new BackendError({
      backendId: connection.backendId,
      reason: "call_failed",
      method: "initialize",
      summary: `no common MCP protocol version (${problems.join("; ")})`
    })
  })

/**
 * Answers the backend's requests with `handler`, each in a fiber of the current scope: the
 * backend's `notifications/cancelled` interrupts it (no reply then, as MCP says), and so does the
 * backend stopping.
 */
export const serveRequests = (
  connection: Connection,
  handler: (method: string, params: unknown) => Effect.Effect<unknown, AskError>
) =>
  Effect.gen(function* () {
    const inbound = yield* Inbound.make<Id, unknown, AskError>({
      duplicates: "refuse",
      reply: (id, exit) => {
        if (Exit.isSuccess(exit)) return success(id, exit.value === undefined ? {} : exit.value)
        const failed = Cause.findErrorOption(exit.cause)
        // The reply to the backend is written here: a client's answer it relays is scrubbed like any reply.
        if (Option.isSome(failed)) return failure(id, toRpcError(failed.value))
        // Cancelled by the backend, or the backend stopping: MCP sends no reply then.
        return undefined
      }
    })
    connection.requestHandler = (id, method, params) => {
      const answer = Effect.suspend(() => handler(method, params)).pipe(
        Effect.catchDefect((defect) =>
          Effect.andThen(
            Effect.logError(`answering the backend's ${method} failed with a defect`, defect),
            new InternalError({ message: `Internal error while answering ${method}` })
          )
        )
      )
      inbound.run(id, id, answer, (response) => connection.reply(response))
    }
    connection.cancelHandler = (id) => {
      inbound.cancel(id)
    }
  })

/** A reply that says the server no longer knows this client's session. */
export const isSessionLost = (error: BackendError): boolean =>
  error.reason === "call_failed" &&
  error.method !== "initialize" &&
  /not initiali[sz]ed|session not found|no valid session/i.test(error.summary)

/** How long `server/discover` may take before a backend is taken to be of the session era. */
const DISCOVER_TIMEOUT_MS = 3_000

/**
 * `server/discover`: the backend's session in the stateless era, or undefined when it does not
 * speak it (an error reply, a timeout, or no 2026-07-28 among its versions).
 */
export const discover = (
  connection: Connection,
  clientInfo: ClientInfo,
  capabilities: Readonly<Record<string, unknown>>,
  timeoutMs: number
): Effect.Effect<Session | undefined, BackendError> =>
  Effect.gen(function* () {
    const outcome = yield* connection
      .request("server/discover", paramsFor(true, {}, capabilities, clientInfo), Math.min(timeoutMs, DISCOVER_TIMEOUT_MS))
      .pipe(Effect.result)
    if (outcome._tag === "Failure") {
      // A process that died cannot be asked again; anything else means "not this era".
      if (outcome.failure.reason === "crashed") return yield* outcome.failure
      return undefined
    }
    const result = outcome.success
    const supported = field(result, "supportedVersions")
    if (!Array.isArray(supported) || !supported.includes(Mcp.STATELESS_PROTOCOL_VERSION)) return undefined
    return {
      protocolVersion: Mcp.STATELESS_PROTOCOL_VERSION,
      capabilities: objectField(result, "capabilities") ?? {},
      serverInfo: Meta.get(result, Mcp.Meta.serverInfo) ?? field(result, "serverInfo"),
      instructions: stringField(result, "instructions")
    }
  })

/** Logs what the synchronous callbacks queued, so stderr floods cost a bounded queue and nothing more. */
export const logPump = (connection: Connection, logs: Queue.Queue<LogLine>) =>
  Effect.forever(
    Effect.gen(function* () {
      const lines = yield* Queue.takeBetween(logs, 1, 256)
      for (const line of lines) {
        const annotations = line.stream === undefined ? {} : { stream: line.stream }
        yield* (line.level === "warn" ? Effect.logWarning(line.message) : Effect.logDebug(line.message)).pipe(
          Effect.annotateLogs(annotations)
        )
      }
      if (connection.droppedLogLines > 0) {
        yield* Effect.logDebug(`dropped ${connection.droppedLogLines} output lines (logging could not keep up)`)
        connection.droppedLogLines = 0
      }
    })
  )
