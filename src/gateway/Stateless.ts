/**
 * MCP 2026-07-28, the stateless era, served beside the session era: no `initialize` and no
 * session; every request carries its protocol version, client capabilities and log level in
 * `_meta`. `server/discover` says what the gateway offers; list results carry caching hints and
 * every result its `resultType`.
 *
 * The bridge to backends of the session era: when a backend asks the client something during a
 * stateless request (`sampling/createMessage`, `elicitation/create`, `roots/list`), the gateway
 * cannot send the client a request. It answers the client's request with an InputRequiredResult
 * instead (the backend's questions as `inputRequests`, and a sealed `requestState`) and keeps the
 * backend's call open; the client's retry with `inputResponses` answers the backend, and the call
 * goes on to its result or to the next question. Calls kept open so are bounded in number and
 * time, and end cleanly (the backend's call cancelled, its questions answered with an error) when
 * the client never comes back.
 *
 * Longer than most modules: serving a request, its rounds and its listen stream share the table of
 * open calls and their questions. What is apart: the sealed tokens (`BridgeTokens`), and what every
 * transport shares of this era (`Dispatch`).
 */
import { Cause, Deferred, Effect, Exit, Fiber, Option, Queue, Scope } from "effect"
import { randomBytes } from "node:crypto"
import type { BackendsService } from "../backend/Backends.js"
import { isOwnState, keyed, seal, unseal } from "./BridgeTokens.js"
import { CAPABILITY_OF } from "./ClientAsk.js"
import { BackendError, ErrorCode, type GatewayError, RpcError, toRpcError } from "../protocol/Errors.js"
import type { GatewayService } from "./Gateway.js"
import { failure, notification, type Request, type Response, success } from "../jsonrpc/JsonRpc.js"
import * as Mcp from "../protocol/Mcp.js"
import type { Outbox, RequestContext } from "../jsonrpc/Peer.js"
import * as Server from "./Server.js"
import { Session, type Target } from "./Session.js"
import * as Json from "../data/Json.js"
import { field, isObject, objectField, objectOr, stringField } from "../data/Json.js"
import * as Meta from "../data/Meta.js"
import * as Era from "./Era.js"
import * as Tasks from "./Tasks.js"

/** What `server/discover` lists: this era, and the session era's versions (served with `initialize`). */
export const SUPPORTED_VERSIONS: ReadonlyArray<string> = [Mcp.STATELESS_PROTOCOL_VERSION, ...Mcp.SUPPORTED_PROTOCOL_VERSIONS]

/**
 * Methods of the session era that 2026-07-28 removed: -32601 (HTTP 404). SEP-1686's `tasks/result`
 * and `tasks/list` too: the tasks extension inlines results in `tasks/get` and lists nothing.
 */
const REMOVED = new Set([
  "initialize",
  "ping",
  "logging/setLevel",
  "resources/subscribe",
  "resources/unsubscribe",
  "shutdown",
  "tasks/result",
  "tasks/list"
])
/**
 * Requests whose result may be an InputRequiredResult: the era's three, and the gateway's own
 * orchestration (it asks for confirmation, and its tool calls may ask what a backend asks).
 */
const MAY_ASK = new Set(["tools/call", "prompts/get", "resources/read", "agentify/orchestrateTask"])

/** Calls kept open across a client's round trips, at most, and for at most this long each. */
export const MAX_OPEN_CALLS = 1_000
export const OPEN_CALL_TTL_MS = 10 * 60_000
/** After a backend's first question, how long its other questions of the same moment are gathered. */
const GATHER_MS = 20

// ---------------------------------------------------------------------------------------------
// Calls kept open across round trips

/** A backend's question, waiting for the client's answer. */
interface Question {
  readonly key: string
  readonly method: string
  readonly params: unknown
  readonly answer: Deferred.Deferred<unknown, RpcError>
  /** The client capability it needs and the client did not declare, if any. */
  readonly unanswerable?: string | undefined
}

/** A call that may outlive the HTTP exchange (or stdio request) that started it. */
interface OpenCall {
  readonly id: string
  readonly method: string
  readonly name: string | undefined
  readonly scope: Scope.CloseableScope
  readonly questions: Queue.Queue<Question>
  /** The questions of the last InputRequiredResult not answered yet. */
  readonly waiting: Map<string, Question>
  fiber: Fiber.RuntimeFiber<unknown, GatewayError> | undefined
  session: Session | undefined
  /** Where the call's notifications go: the exchange of its latest round. */
  out: Outbox
  round: number
  busy: boolean
  /** Set when the client lacks a capability a backend's question needs: the call fails with -32021. */
  missing: Record<string, unknown> | undefined
  /**
   * Questions the client cannot answer (a capability it did not declare), held while it answers
   * the others it can: they are refused when its answers arrive, so the backend may go on without.
   */
  held: Array<Question>
  timer: ReturnType<typeof setTimeout> | undefined
}

export interface Stateless {
  /**
   * Serves one stateless request (already checked) on `target`: its notifications go to `out`, its
   * one reply is the result (never a failure).
   */
  readonly serve: (
    request: Request,
    /** What its `_meta` says of its client (see Era.decode). */
    context: Era.Context,
    target: Target,
    transport: "stdio" | "http",
    out: Outbox,
    /** Who the request's OAuth access token speaks for (`--http-auth oauth`). */
    subject?: string
  ) => Effect.Effect<Response>
  /**
   * `subscriptions/listen`: acknowledges, then relays the notifications asked for to `out` while
   * the current scope is open (the stream that carries them).
   */
  readonly listen: (
    request: Request,
    target: Target,
    transport: "stdio" | "http",
    out: Outbox
  ) => Effect.Effect<void, never, Scope.Scope>
  /** Calls open now (for tests and the debug UI). */
  readonly openCalls: () => number
}

/** What the aggregate offers a stateless client: no subscribe (subscriptions/listen replaced it), no logging/setLevel. */
const STATELESS_CAPABILITIES = {
  tools: { listChanged: true },
  resources: { listChanged: true },
  prompts: { listChanged: true },
  completions: {}
}

/** Capabilities of a backend as a 2026-07-28 server states them. */
const statelessCapabilities = (capabilities: Readonly<Record<string, unknown>>) => {
  const { logging: _logging, resources, ...rest } = capabilities
  if (!isObject(resources)) return rest
  const { subscribe: _subscribe, ...resourceRest } = resources
  return { ...rest, resources: resourceRest }
}

const describe = (
  backends: BackendsService,
  target: Target
): Effect.Effect<{ capabilities: unknown; instructions?: string; serverInfo: unknown }, GatewayError> => {
  if (target._tag === "Aggregate") {
    // The gateway runs orchestrations and scripts as tasks, and routes its backends' tasks.
    return Effect.succeed({
      capabilities: { ...STATELESS_CAPABILITIES, extensions: { [Tasks.EXTENSION]: {} } },
      instructions: Server.INSTRUCTIONS,
      serverInfo: { name: Server.SERVER_NAME, version: Server.SERVER_VERSION }
    })
  }
  const running = backends.backend(target.backendId)
  if (running === undefined) {
    return Effect.fail(
      new BackendError({ backendId: target.backendId, reason: "not_ready", method: "server/discover", summary: "not running" })
    )
  }
  return Effect.succeed({
    capabilities: statelessCapabilities(running.serverCapabilities),
    ...(running.instructions === undefined ? {} : { instructions: running.instructions }),
    serverInfo: running.serverInfo
  })
}

export const make = (gateway: GatewayService, backends: BackendsService): Effect.Effect<Stateless> =>
  Effect.sync(() => {
    const calls = new Map<string, OpenCall>()
    let nextCall = 0

    const close = (call: OpenCall, why: string) =>
      Effect.suspend(() => {
        if (calls.get(call.id) === call) calls.delete(call.id)
        if (call.timer !== undefined) clearTimeout(call.timer)
        const left = [...call.waiting.values()]
        call.waiting.clear()
        return Effect.all(
          [
            Effect.forEach(left, (q) => Deferred.fail(q.answer, new RpcError({ code: ErrorCode.InternalError, message: why })), {
              discard: true
            }),
            call.fiber === undefined ? Effect.void : Fiber.interrupt(call.fiber),
            Scope.close(call.scope, Exit.void)
          ],
          { discard: true }
        )
      })

    /** The next thing the call does: finish, or ask (its questions of that moment, gathered). */
    const nextStep = (call: OpenCall) =>
      Effect.raceFirst(
        Effect.map(Fiber.await(call.fiber!), (exit) => ({ _tag: "Done" as const, exit })),
        Effect.gen(function* () {
          const first = yield* Queue.take(call.questions)
          yield* Effect.sleep(GATHER_MS)
          const more = yield* Queue.takeAll(call.questions)
          return { _tag: "Ask" as const, questions: [first, ...more] }
        })
      )

    /** Runs the call until it finishes or asks, and answers the client's request accordingly. */
    const round = (call: OpenCall, request: Request): Effect.Effect<Response> =>
      Effect.gen(function* () {
        // The client has answered what it could: what it cannot is refused now.
        const held = call.held.splice(0)
        yield* Effect.forEach(
          held,
          (q) =>
            Deferred.fail(
              q.answer,
              new RpcError({
                code: ErrorCode.MethodNotFound,
                message: `the client did not declare the ${q.unanswerable} capability`
              })
            ),
          { discard: true }
        )
        let step = yield* nextStep(call)
        if (step._tag === "Ask") {
          const answerable = step.questions.filter((q) => q.unanswerable === undefined)
          const unanswerable = step.questions.filter((q) => q.unanswerable !== undefined)
          // Only questions the client cannot answer: the backend needs what the client lacks.
          if (answerable.length === 0) {
            call.missing = Object.fromEntries(unanswerable.map((q) => [q.unanswerable!, {}]))
          } else {
            call.held.push(...unanswerable)
            step = { _tag: "Ask", questions: answerable }
          }
        }
        if (call.missing !== undefined) {
          const required = call.missing
          yield* close(call, "the client lacks a capability")
          return failure(request.id, {
            code: Mcp.StatelessErrorCode.MissingClientCapability,
            message: `Missing required client capability: ${Object.keys(required).join(", ")}`,
            data: { requiredCapabilities: required }
          })
        }
        if (step._tag === "Done") {
          yield* close(call, "the call finished")
          const exit = step.exit
          if (Exit.isSuccess(exit)) return success(request.id, Era.complete(call.method, exit.value))
          const failed = Cause.failureOption(exit.cause)
          return Option.isSome(failed)
            ? failure(request.id, toRpcError(failed.value))
            : failure(request.id, { code: ErrorCode.InternalError, message: "Internal error" })
        }
        for (const q of step.questions) call.waiting.set(q.key, q)
        return success(request.id, inputRequired(call))
      })

    const inputRequired = (call: OpenCall) => {
      call.round++
      call.busy = false
      if (call.session !== undefined) call.session.parked = true
      if (call.timer !== undefined) clearTimeout(call.timer)
      call.timer = setTimeout(
        () => Effect.runFork(close(call, "the client did not come back with its answers")),
        OPEN_CALL_TTL_MS
      )
      call.timer.unref?.()
      calls.set(call.id, call)
      return {
        resultType: "input_required",
        inputRequests: Object.fromEntries([...call.waiting.values()].map((q) => [q.key, { method: q.method, params: q.params }])),
        requestState: seal({
          call: call.id,
          round: call.round,
          method: call.method,
          ...(call.name === undefined ? {} : { name: call.name })
        })
      }
    }

    /** A new stateless request: an ephemeral session on the gateway, its call run in a scope of its own. */
    const start = (
      request: Request,
      client: Era.Context,
      target: Target,
      transport: "stdio" | "http",
      out: Outbox,
      subject?: string
    ) =>
      Effect.gen(function* () {
        const capabilities = client.clientCapabilities
        const name = stringField(request.params, "name")
        const scope = yield* Scope.make()
        const call: OpenCall = {
          id: `${Date.now().toString(36)}-${++nextCall}-${randomBytes(6).toString("hex")}`,
          method: request.method,
          name,
          scope,
          questions: yield* Queue.unbounded<Question>(),
          waiting: new Map(),
          fiber: undefined,
          session: undefined,
          out,
          round: 0,
          busy: true,
          missing: undefined,
          held: [],
          timer: undefined
        }
        let asked = 0
        /**
         * `inputResponses` sent with the first request (no `requestState`): answers to questions
         * whose keys the client knows (a backend's named ones), each used once; the rest ignored.
         */
        const responses = objectField(request.params, "inputResponses")
        const presupplied = responses === undefined ? undefined : { ...responses }
        /** Keys the backend named in this call (each once; the gateway's own are `<capability>-<n>`). */
        const named = new Set<string>()
        const ask = (method: string, askParams: unknown): Effect.Effect<unknown, RpcError> =>
          Effect.gen(function* () {
            const capability = CAPABILITY_OF[method]
            const mayAsk = MAY_ASK.has(request.method)
            if (capability === undefined || !mayAsk) {
              return yield* new RpcError({
                code: ErrorCode.MethodNotFound,
                message: `Method not found: ${method} cannot be asked during ${request.method}`
              })
            }
            const answer = yield* Deferred.make<unknown, RpcError>()
            if (capabilities[capability] === undefined) {
              // The round decides: held while the client answers others, else the call fails -32021.
              yield* Queue.offer(call.questions, { key: "", method, params: askParams, answer, unanswerable: capability })
              return yield* Deferred.await(answer)
            }
            const { key, params: shown } = keyed(method, askParams, ++asked, named)
            // Answered already: a first request may carry inputResponses for keys it knows.
            const given = presupplied?.[key]
            if (typeof given === "object" && given !== null && !Array.isArray(given)) {
              delete presupplied![key]
              return given
            }
            yield* Queue.offer(call.questions, { key, method, params: shown, answer })
            return yield* Deferred.await(answer)
          })
        const session = new Session({ id: `stateless-${call.id}`, transport, target, subject, send: () => false, ask })
        call.session = session
        session.describe({ protocolVersion: client.protocolVersion, clientInfo: client.clientInfo, capabilities })
        session.advance("served")
        // No level: no log messages for this request (2026-07-28 makes them opt-in per request).
        session.logLevel = client.logLevel
        session.markInitialized()
        const handlers = yield* Scope.extend(gateway.open(session), scope)
        const context: RequestContext = {
          id: request.id,
          notifyUnsafe: (method, p) => call.out.send(notification(method, p)),
          notify: (method, p) => Effect.sync(() => call.out.send(notification(method, p))),
          send: () => false
        }
        call.fiber = yield* Effect.forkIn(
          // Passed as the client sent it: a stateless backend gets its _meta (and a requestState of
          // its own, on a retry); a session-era backend never sees the era's _meta keys (Backend).
          Effect.suspend(() => handlers.request(request, context)),
          scope
        )
        return call
      })

    /** A retry with `requestState`: the client's answers to the open call's questions. */
    const resume = (request: Request, out: Outbox): Effect.Effect<Response | OpenCall> =>
      Effect.gen(function* () {
        const params = objectOr(request.params)
        const state = unseal(params.requestState)
        const invalid = (message: string) =>
          failure(request.id, { code: ErrorCode.InvalidParams, message: `Invalid params: ${message}` })
        if (state === undefined) return invalid("requestState failed its integrity check")
        const call = calls.get(state.call)
        if (call === undefined) return invalid("requestState names no open call (it finished, or expired)")
        if (
          state.round !== call.round ||
          state.method !== request.method ||
          state.name !== (typeof params.name === "string" ? params.name : undefined)
        ) {
          return invalid("requestState belongs to another request or round")
        }
        if (call.busy) return invalid("this call is already being resumed")
        const responses = params.inputResponses
        if (!isObject(responses)) return invalid("inputResponses must be an object keyed by the inputRequests' keys")
        for (const [key, q] of call.waiting) {
          const answer = responses[key]
          if (typeof answer !== "object" || answer === null || Array.isArray(answer)) continue
          call.waiting.delete(key)
          yield* Deferred.succeed(q.answer, answer)
        }
        call.out = out
        call.busy = true
        if (call.session !== undefined) call.session.parked = false
        return call
      })

    const discover = (request: Request, target: Target) =>
      Effect.map(describe(backends, target), (d) => {
        return success(request.id, {
          supportedVersions: SUPPORTED_VERSIONS,
          capabilities: d.capabilities,
          ...(d.instructions === undefined ? {} : { instructions: d.instructions }),
          resultType: "complete",
          ttlMs: 0,
          cacheScope: "public",
          _meta: { [Mcp.Meta.serverInfo]: d.serverInfo }
        })
      })

    const serve = (
      request: Request,
      context: Era.Context,
      target: Target,
      transport: "stdio" | "http",
      out: Outbox,
      subject?: string
    ): Effect.Effect<Response> =>
      Effect.gen(function* () {
        if (REMOVED.has(request.method)) {
          return failure(request.id, {
            code: ErrorCode.MethodNotFound,
            message: `Method not found: ${request.method} (removed in ${Mcp.STATELESS_PROTOCOL_VERSION})`
          })
        }
        if (request.method === "server/discover") {
          return yield* discover(request, target).pipe(Effect.catchAll((e) => Effect.succeed(failure(request.id, toRpcError(e)))))
        }
        const params = objectOr(request.params)
        let call: OpenCall
        if (isOwnState(params.requestState) && MAY_ASK.has(request.method)) {
          const resumed = yield* resume(request, out)
          if ("jsonrpc" in resumed) return resumed
          call = resumed
          // Answers the questions still open again, so the client sees what it left out.
          if (call.waiting.size > 0) return success(request.id, inputRequired(call))
        } else {
          if (calls.size >= MAX_OPEN_CALLS) {
            return failure(request.id, {
              code: ErrorCode.InternalError,
              message: `${MAX_OPEN_CALLS} calls are waiting for their clients' answers`
            })
          }
          call = yield* start(request, context, target, transport, out, subject)
        }
        // A client that goes away mid-round (not between rounds) ends the call.
        const reply = yield* round(call, request).pipe(Effect.onInterrupt(() => close(call, "the client went away")))
        return reply
      })

    /**
     * `subscriptions/listen`: the acknowledgement, then the notifications the client opted in to,
     * each tagged with the subscription's id, for as long as the current scope is open (the
     * transport's stream).
     */
    const listen = (request: Request, target: Target, transport: "stdio" | "http", out: Outbox) =>
      Effect.gen(function* () {
        const wanted = objectField(request.params, "notifications")
        if (wanted === undefined) {
          return out.send(
            failure(request.id, { code: ErrorCode.InvalidParams, message: "Invalid params: notifications must be an object" })
          )
        }
        const described = yield* Effect.either(describe(backends, target))
        if (described._tag === "Left") return out.send(failure(request.id, toRpcError(described.left)))
        const capabilities = described.right.capabilities
        const honored: Record<string, string> = {}
        for (const [field, capability, method] of [
          ["toolsListChanged", "tools", "notifications/tools/list_changed"],
          ["promptsListChanged", "prompts", "notifications/prompts/list_changed"],
          ["resourcesListChanged", "resources", "notifications/resources/list_changed"]
        ] as const) {
          if (wanted[field] === true && Json.field(Json.field(capabilities, capability), "listChanged") === true) {
            honored[method] = field
          }
        }
        const subscriptionId = randomBytes(12).toString("hex")
        const tagged = (params: unknown) => Meta.merge(params, { [Mcp.Meta.subscriptionId]: subscriptionId })
        out.send(
          notification("notifications/subscriptions/acknowledged", {
            notifications: Object.fromEntries(Object.values(honored).map((field) => [field, true])),
            _meta: { [Mcp.Meta.subscriptionId]: subscriptionId }
          })
        )
        const session = new Session({
          id: `listen-${subscriptionId}`,
          transport,
          target,
          send: (message) => {
            const method = stringField(message, "method")
            // Only what the client asked for, whatever the gateway broadcasts.
            if (method === undefined || honored[method] === undefined) return true
            out.send(notification(method, tagged(field(message, "params"))))
            return true
          }
        })
        session.describe({ protocolVersion: Mcp.STATELESS_PROTOCOL_VERSION, clientInfo: undefined, capabilities: {} })
        session.advance("served")
        session.logLevel = "none"
        yield* gateway.open(session)
      })

    const service: Stateless = { serve, listen, openCalls: () => calls.size }
    return service
  })
