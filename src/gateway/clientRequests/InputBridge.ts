/**
 * The input-required bridge: a 2026-07-28 client cannot be sent requests, so when a backend asks
 * it something during a call (`sampling/createMessage`, `elicitation/create`, `roots/list`), the
 * client's request is answered with an InputRequiredResult (the questions as `inputRequests`, and
 * a sealed `requestState`) while the call is kept open; the client's retry with `inputResponses`
 * answers the backend and the call goes on, to its result or to the next round of questions.
 *
 * A service of its own, beside the server-to-client requests of the session era (ClientAsk): it
 * holds the table of calls kept open, bounded in number and time; a call whose client never comes
 * back is closed (its work interrupted, its questions answered with an error), and so is every
 * call when the gateway stops. It knows nothing of sessions: what a call runs is given to `run`.
 */
import { Cause, Context, Deferred, Effect, Exit, Fiber, Layer, Option, Queue, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { keyed } from "./BridgeTokens.js"
import { RequestStates, type RequestStatesService } from "./RequestStates.js"
import { CAPABILITY_OF } from "./ClientAsk.js"
import * as Era from "../session/Era.js"
import { type AskError, ErrorCode, type GatewayError, InternalError, MethodNotFound } from "../../protocol/Errors.js"
import { StatelessErrorCode } from "../../protocol/Mcp.js"
import { failure, type Request, type Response, success } from "../../jsonrpc/JsonRpc.js"
import type { Outbox } from "../../jsonrpc/Peer.js"
import { isObject, objectField, objectOr, stringField } from "../../json/Json.js"

/** Calls kept open across a client's round trips, at most, and for at most this long each. */
export const MAX_OPEN_CALLS = 1_000
export const OPEN_CALL_TTL_MS = 10 * 60_000
/** After a backend's first question, how long its other questions of the same moment are gathered. */
const GATHER_MS = 20

/**
 * Requests whose result may be an InputRequiredResult: the era's three, and the gateway's own
 * orchestration (it asks for confirmation, and its tool calls may ask what a backend asks).
 */
export const MAY_ASK: ReadonlySet<string> = new Set(["tools/call", "prompts/get", "resources/read", "agentify/orchestrateTask"])

/** A backend's question, waiting for the client's answer. */
interface Question {
  readonly key: string
  readonly method: string
  readonly params: unknown
  readonly answer: Deferred.Deferred<unknown, AskError>
  /** The client capability it needs and the client did not declare, if any. */
  readonly unanswerable?: string | undefined
}

/** A call that may outlive the HTTP exchange (or stdio request) that started it. */
export interface Call {
  readonly id: string
  readonly method: string
  readonly name: string | undefined
  /**
   * Asks the call's client a question (a backend's request): answered by its retry, or at once
   * from the `inputResponses` its first request brought. Given to what the call runs.
   */
  readonly ask: (method: string, params: unknown) => Effect.Effect<unknown, AskError>
  /** Whether the call waits between its client's round trips (it asks nothing new meanwhile). */
  readonly parked: () => boolean
  /** Sends one of the call's notifications where its latest round is answered. */
  readonly send: (message: unknown) => void
}

interface OpenCall extends Call {
  /** What its caller holds. */
  readonly view: Call
  /** Where the call's notifications go: the exchange of its latest round. */
  out: Outbox
  readonly scope: Scope.Closeable
  readonly questions: Queue.Queue<Question>
  /** The questions of the last InputRequiredResult not answered yet. */
  readonly waiting: Map<string, Question>
  fiber: Fiber.Fiber<unknown, GatewayError> | undefined
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

export interface InputBridgeService {
  /**
   * Opens a call for a new request whose client declared `capabilities`: the call (its `ask` for
   * what it runs), or the refusal when too many calls are open.
   */
  readonly open: (
    request: Request,
    capabilities: Readonly<Record<string, unknown>>,
    out: Outbox
  ) => Effect.Effect<Call | Response>
  /** Runs the call's work in its scope (closed with the call). */
  readonly run: (call: Call, work: Effect.Effect<unknown, GatewayError, Scope.Scope>) => Effect.Effect<void>
  /**
   * A retry carrying the gateway's `requestState`: the client's answers given to the open call's
   * questions, and the call (its notifications now to `out`); or the reply refusing the state.
   */
  readonly resume: (request: Request, out: Outbox) => Effect.Effect<Call | Response>
  /**
   * The call's next round for `request`: its result when it finishes (its failure, when it fails),
   * else an InputRequiredResult with its questions. A client that goes away mid-round
   * (interrupting this) ends the call.
   */
  readonly round: (call: Call, request: Request) => Effect.Effect<Response, GatewayError>
  /** Calls open now (between round trips or in one). */
  readonly size: () => number
}

/** The next thing the call does: finish, or ask (its questions of that moment, gathered). */
const nextStep = (call: OpenCall, fiber: Fiber.Fiber<unknown, GatewayError>) =>
  Effect.raceFirst(
    Effect.map(Fiber.await(fiber), (exit) => ({ _tag: "Done" as const, exit })),
    Effect.gen(function* () {
      const first = yield* Queue.take(call.questions)
      yield* Effect.sleep(GATHER_MS)
      // What else is queued by now, without waiting (Effect 4's takeAll waits for one).
      const more = yield* Queue.clear(call.questions)
      return { _tag: "Ask" as const, questions: [first, ...more] }
    })
  )

/**
 * How a call asks its client (`ask`): a question the client can answer is queued for the round,
 * under its key; one the client lacks the capability for is held for the round to decide.
 */
const askerFor = (request: Request, capabilities: Readonly<Record<string, unknown>>, questions: Queue.Queue<Question>) => {
  let asked = 0
  /**
   * `inputResponses` sent with the first request (no `requestState`): answers to questions
   * whose keys the client knows (a backend's named ones), each used once; the rest ignored.
   */
  const responses = objectField(request.params, "inputResponses")
  const presupplied = responses === undefined ? undefined : { ...responses }
  /** Keys the backend named in this call (each once; the gateway's own are `<capability>-<n>`). */
  const named = new Set<string>()
  const ask = (method: string, askParams: unknown): Effect.Effect<unknown, AskError> =>
    Effect.gen(function* () {
      const capability = CAPABILITY_OF[method]
      if (capability === undefined || !MAY_ASK.has(request.method)) {
        return yield* new MethodNotFound({
          message: `Method not found: ${method} cannot be asked during ${request.method}`
        })
      }
      const answer = yield* Deferred.make<unknown, AskError>()
      if (capabilities[capability] === undefined) {
        // The round decides: held while the client answers others, else the call fails -32021.
        yield* Queue.offer(questions, { key: "", method, params: askParams, answer, unanswerable: capability })
        return yield* Deferred.await(answer)
      }
      const { key, params: shown } = keyed(method, askParams, ++asked, named)
      // Answered already: a first request may carry inputResponses for keys it knows.
      const given = presupplied?.[key]
      if (isObject(given)) {
        delete presupplied![key]
        return given
      }
      yield* Queue.offer(questions, { key, method, params: shown, answer })
      return yield* Deferred.await(answer)
    })
  return ask
}

/** The questions held for lack of a capability, refused now that the client answered what it could. */
const refuseHeld = (call: OpenCall) =>
  Effect.forEach(
    call.held.splice(0),
    (q) =>
      Deferred.fail(q.answer, new MethodNotFound({ message: `the client did not declare the ${q.unanswerable} capability` })),
    { discard: true }
  )

/**
 * The reply to the request a finished call was resumed by; a call that failed fails the round with
 * its error, as it is, for the edge to write (see Stateless).
 */
const finished = (
  request: Request,
  call: OpenCall,
  exit: Exit.Exit<unknown, GatewayError>
): Effect.Effect<Response, GatewayError> => {
  if (Exit.isSuccess(exit)) return Effect.succeed(success(request.id, Era.complete(call.method, exit.value)))
  const failed = Cause.findErrorOption(exit.cause)
  return Option.isSome(failed)
    ? Effect.fail(failed.value)
    : Effect.succeed(failure(request.id, { code: ErrorCode.InternalError, message: "Internal error" }))
}

/** The open call a retry's sealed `requestState` names, given its answers; or the reply that refuses the retry. */
const resumeIn = (
  calls: ReadonlyMap<string, OpenCall>,
  unseal: RequestStatesService["unseal"],
  request: Request,
  out: Outbox
): Effect.Effect<Call | Response> =>
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
      if (!isObject(answer)) continue
      call.waiting.delete(key)
      yield* Deferred.succeed(q.answer, answer)
    }
    call.out = out
    call.busy = true
    return call.view
  })

const internal = (message: string) => new InternalError({ message })

/** Ends a call: its questions left fail with `why`, its work is interrupted. */
const closeIn = (calls: Map<string, OpenCall>, call: OpenCall, why: string) =>
  Effect.suspend(() => {
    if (calls.get(call.id) === call) calls.delete(call.id)
    if (call.timer !== undefined) clearTimeout(call.timer)
    const left = [...call.waiting.values(), ...call.held.splice(0)]
    call.waiting.clear()
    // The work is told first, without waiting: a question failed first would wake it to fail on
    // its own (Effect 4 resumes it at once), ending it failed rather than interrupted; then the
    // questions fail (releasing work that waits on one where it cannot be interrupted), then its end.
    const fiber = call.fiber
    fiber?.interruptUnsafe()
    return Effect.all(
      [
        Effect.forEach(left, (q) => Deferred.fail(q.answer, internal(why)), { discard: true }),
        fiber === undefined ? Effect.void : Fiber.await(fiber),
        Scope.close(call.scope, Exit.void)
      ],
      { discard: true }
    )
  })

const make = Effect.gen(function* () {
  const { seal, unseal } = yield* RequestStates
  const calls = new Map<string, OpenCall>()
  /** The calls handed out, by the view given (what callers hold is not the table's own record). */
  const opened = new WeakMap<Call, OpenCall>()
  let nextCall = 0
  const close = (call: OpenCall, why: string) => closeIn(calls, call, why)
  // A call's timer closes it outside any fiber: with the gateway's services (its loggers on stderr).
  const runFork = Effect.runForkWith(yield* Effect.context<never>())

  // The gateway stops: no call outlives it.
  yield* Effect.addFinalizer(() =>
    Effect.forEach([...calls.values()], (call) => close(call, "the gateway is stopping"), { discard: true })
  )

  const inputRequired = (call: OpenCall) => {
    call.round++
    call.busy = false
    if (call.timer !== undefined) clearTimeout(call.timer)
    call.timer = setTimeout(() => runFork(close(call, "the client did not come back with its answers")), OPEN_CALL_TTL_MS)
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

  const roundOf = (call: OpenCall, request: Request): Effect.Effect<Response, GatewayError> =>
    Effect.gen(function* () {
      // Answers the questions still open again, so the client sees what it left out.
      if (call.waiting.size > 0) return success(request.id, inputRequired(call))
      const fiber = call.fiber
      if (fiber === undefined) {
        yield* close(call, "the call was never run")
        return failure(request.id, { code: ErrorCode.InternalError, message: "Internal error: the call was never run" })
      }
      // The client has answered what it could: what it cannot is refused now.
      yield* refuseHeld(call)
      let step = yield* nextStep(call, fiber)
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
          code: StatelessErrorCode.MissingClientCapability,
          message: `Missing required client capability: ${Object.keys(required).join(", ")}`,
          data: { requiredCapabilities: required }
        })
      }
      if (step._tag === "Done") {
        yield* close(call, "the call finished")
        return yield* finished(request, call, step.exit)
      }
      for (const q of step.questions) call.waiting.set(q.key, q)
      return success(request.id, inputRequired(call))
    })

  const open = (request: Request, capabilities: Readonly<Record<string, unknown>>, out: Outbox): Effect.Effect<Call | Response> =>
    Effect.gen(function* () {
      if (calls.size >= MAX_OPEN_CALLS) {
        return failure(request.id, {
          code: ErrorCode.InternalError,
          message: `${MAX_OPEN_CALLS} calls are waiting for their clients' answers`
        })
      }
      const questions = yield* Queue.unbounded<Question>()
      const scope = yield* Scope.make()
      const ask = askerFor(request, capabilities, questions)
      const id = `${Date.now().toString(36)}-${++nextCall}-${randomBytes(6).toString("hex")}`
      const name = stringField(request.params, "name")
      const view: Call = {
        id,
        method: request.method,
        name,
        ask,
        parked: () => !call.busy,
        send: (message) => call.out.send(message)
      }
      const call: OpenCall = {
        ...view,
        view,
        out,
        scope,
        questions,
        waiting: new Map(),
        fiber: undefined,
        round: 0,
        busy: true,
        missing: undefined,
        held: [],
        timer: undefined
      }
      opened.set(view, call)
      return view
    })

  const run = (call: Call, work: Effect.Effect<unknown, GatewayError, Scope.Scope>) =>
    Effect.suspend(() => {
      const open = opened.get(call)
      if (open === undefined) return Effect.void
      return Effect.map(Effect.forkIn(Scope.provide(work, open.scope), open.scope), (fiber) => {
        open.fiber = fiber
      })
    })

  const resume = (request: Request, out: Outbox) => resumeIn(calls, unseal, request, out)

  const round = (call: Call, request: Request): Effect.Effect<Response, GatewayError> =>
    Effect.suspend(() => {
      const open = opened.get(call)
      if (open === undefined) {
        return Effect.succeed(
          failure(request.id, { code: ErrorCode.InternalError, message: "Internal error: the call is closed" })
        )
      }
      return roundOf(open, request).pipe(Effect.onInterrupt(() => close(open, "the client went away")))
    })

  const service: InputBridgeService = { open, run, resume, round, size: () => calls.size }
  return service
})

export class InputBridge extends Context.Service<InputBridge, InputBridgeService>()("mcp-agentify/InputBridge") {
  /** The bridge's table of open calls, all closed when the layer's scope closes. */
  static readonly layer: Layer.Layer<InputBridge, never, RequestStates> = Layer.effect(InputBridge, make)
}
