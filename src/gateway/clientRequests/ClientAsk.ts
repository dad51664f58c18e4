/**
 * Requests from backends to clients (`sampling/createMessage`, `elicitation/create`,
 * `roots/list`): relayed to the client session they belong to, and the client's answer, error or
 * silence relayed back. Also what the gateway declares to backends it can relay.
 *
 * Which session: the one with a request in flight on that backend (over stdio, the only one). A
 * backend on stdio says nothing about which of its calls a request belongs to, so when several
 * sessions have calls in flight on it the gateway refuses rather than guesses: asking the wrong
 * client would show one client what another is doing.
 *
 * Progress both ways: a backend's progress token is swapped for the gateway's own on the way to
 * the client (two backends may use the same token), and the client's progress goes back to the
 * backend under its own token.
 */
import { Context, Deferred, Effect, Layer } from "effect"
import { type BackendRequest, Backends, type BackendsService } from "../../backend/Backends.js"
import { type AskError, BackendError, InternalError, MethodNotFound, MissingClientCapability } from "../../protocol/Errors.js"
import type { RequestContext } from "../../jsonrpc/Peer.js"
import * as Progress from "../routing/Progress.js"
import type { Session } from "../session/Session.js"
import { Routes, type RoutesService } from "../routing/Routes.js"
import { Sessions, type SessionsService } from "../session/Sessions.js"
import { field, isObject, objectField, objectOr, stringField } from "../../json/Json.js"
import * as Meta from "../../json/Meta.js"
import * as Tasks from "../routing/Tasks.js"
import { Apps } from "../../catalog/ToolCatalog.js"

/** What a shared gateway declares to backends: everything a session may be able to answer. */
export const SHARED_CLIENT_CAPABILITIES: Readonly<Record<string, unknown>> = {
  sampling: {},
  elicitation: { form: {}, url: {} },
  // Apps are relayed to the clients that render them (the gateway keeps their tools from the others).
  extensions: { [Apps.UI_EXTENSION]: Apps.UI_CAPABILITY }
}

/**
 * What the gateway declares to backends on behalf of its one stdio client: the client's own
 * sampling, elicitation and roots (a backend must not be told of roots nobody can give it), and
 * its extensions (MCP Apps: servers offer their UI tools to hosts that render them).
 */
export const relayableCapabilities = (client: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> => {
  const declared: Record<string, unknown> = {}
  for (const key of ["sampling", "elicitation", "roots", "extensions"]) {
    const value = client[key]
    if (typeof value === "object" && value !== null && !Array.isArray(value)) declared[key] = value
  }
  return declared
}

/** The client capability each question a backend may ask needs. */
export const CAPABILITY_OF: Readonly<Record<string, string>> = {
  "sampling/createMessage": "sampling",
  "elicitation/create": "elicitation",
  "roots/list": "roots"
}

/** Whether a result is a stateless backend's InputRequiredResult. */
export const isInputRequired = (result: unknown): boolean =>
  typeof result === "object" && result !== null && field(result, "resultType") === "input_required"

/** Rounds of questions a stateless backend may ask a session-era client for one request. */
const MAX_INPUT_ROUNDS = 16

/** How long a backend's request waits for its client to finish initializing. */
const INITIALIZED_WAIT_MS = 10_000

const capability = (session: Session, name: string): Record<string, unknown> | undefined => {
  const value = session.clientCapabilities[name]
  return isObject(value) ? value : undefined
}

/** Whether the client can answer an elicitation in `mode` ("form" when the request names none). */
const elicits = (session: Session, mode: unknown): boolean => {
  const declared = capability(session, "elicitation")
  if (declared === undefined) return false
  // `elicitation: {}` (before modes existed) means form.
  const form = "form" in declared || !("url" in declared)
  return mode === "url" ? "url" in declared : mode === undefined || mode === "form" ? form : false
}

const notFound = (message: string) => new MethodNotFound({ message })

/** The session a backend's request belongs to, and the request of its that is in flight there. */
const ownerIn = (
  sessions: SessionsService,
  routes: RoutesService,
  backendId: string,
  method: string,
  params?: unknown
): { readonly session: Session; readonly via: RequestContext | undefined } | string => {
  const { mode } = sessions
  // A request for one of its tasks (SEP-1686's related-task) belongs to the task's session.
  const related = stringField(Meta.get(params, Tasks.RELATED_TASK), "taskId")
  const owner = related === undefined ? undefined : routes.taskOf(backendId, related)?.owner.session
  if (owner !== undefined && owner.phase !== "shutdown") return { session: owner, via: routes.callOf(owner, backendId) }
  const inFlight = routes.busyOn(backendId).filter((s) => s.phase !== "shutdown" && s.serves(backendId))
  // A call parked between a stateless client's round trips is not running: it asks nothing now.
  const running = inFlight.filter((s) => !s.parked())
  const busy = running.length > 0 ? running : inFlight
  const [only] = busy
  if (busy.length === 1 && only !== undefined) return { session: only, via: routes.callOf(only, backendId) }
  if (busy.length > 1) {
    return `${busy.length} client sessions have requests in flight on backend '${backendId}': the gateway cannot tell which one this ${method} belongs to`
  }
  // Over stdio the one client is the owner of everything, calls in flight or not.
  if (mode === "single") {
    for (const s of sessions.all()) if (s.phase !== "shutdown" && s.serves(backendId)) return { session: s, via: undefined }
  }
  return `no client session has a request in flight on backend '${backendId}' to relay ${method} to`
}

/** The backend's request, sent to the session's client (once it is initialized) as part of `via`. */
const relayTo = (routes: RoutesService, session: Session, via: RequestContext | undefined, request: BackendRequest) =>
  Effect.gen(function* () {
    // The client may not be asked anything before it said it is initialized (over stdio the
    // backends start during its `initialize`, and ask for roots at once).
    yield* Deferred.await(session.initialized).pipe(
      Effect.timeoutOrElse({
        duration: INITIALIZED_WAIT_MS,
        orElse: () =>
          Effect.fail(
            new InternalError({
              message: `the client session did not finish initializing within ${INITIALIZED_WAIT_MS} ms`
            })
          )
      })
    )
    const token = Progress.tokenOf(request.params)
    let key: string | undefined
    // Its task named as the client knows it.
    const related = stringField(Meta.get(request.params, Tasks.RELATED_TASK), "taskId")
    const task = related === undefined ? undefined : routes.taskOf(request.backendId, related)
    let params = task === undefined ? request.params : Tasks.toClient(task, request.params)
    if (token !== undefined) {
      key = routes.openBackendAsk({ session, backendId: request.backendId, token })
      params = Progress.withToken(request.params, key)
    }
    const elicitationId =
      request.method === "elicitation/create" && field(request.params, "mode") === "url"
        ? field(request.params, "elicitationId")
        : undefined
    if (typeof elicitationId === "string") routes.elicited(elicitationId, session)
    return yield* session
      .request(request.method, params, via)
      .pipe(Effect.ensuring(Effect.sync(() => key !== undefined && routes.close(key))))
  })

/**
 * A stateless backend's InputRequiredResult, answered for a session-era client: each of its
 * `inputRequests` sent to the client as a real request, and the backend's request retried with
 * the answers (and its `requestState`), round after round, until a result.
 */
const answerRounds = (
  askClient: (request: BackendRequest) => Effect.Effect<unknown, AskError>,
  backendId: string,
  method: string,
  first: unknown,
  retry: (inputResponses: Record<string, unknown>, requestState: unknown) => Effect.Effect<unknown, BackendError>
): Effect.Effect<unknown, BackendError> =>
  Effect.gen(function* () {
    let result = first
    for (let round = 0; round < MAX_INPUT_ROUNDS; round++) {
      const asked = Object.entries(objectField(result, "inputRequests") ?? {})
      const answers = yield* Effect.forEach(
        asked,
        ([key, question]) => {
          const questionMethod = stringField(question, "method") ?? ""
          return Effect.map(
            askClient({ backendId, method: questionMethod, params: field(question, "params"), roots: [] }),
            (answer) => [key, answer] as const
          ).pipe(
            Effect.mapError(
              (error) =>
                new BackendError({
                  backendId,
                  reason: "call_failed",
                  method,
                  summary: `the client could not answer the backend's ${questionMethod || "question"}: ${error.message}`,
                  detail: {
                    code: error.code,
                    message: error.message,
                    ...(error.data === undefined ? {} : { data: error.data })
                  }
                })
            )
          )
        },
        { concurrency: "unbounded" }
      )
      result = yield* retry(Object.fromEntries(answers), field(result, "requestState"))
      if (!isInputRequired(result)) return result
    }
    return yield* new BackendError({
      backendId,
      reason: "call_failed",
      method,
      summary: `it still asked for input after ${MAX_INPUT_ROUNDS} rounds`
    })
  })

const make = (sessions: SessionsService, backends: BackendsService, routes: RoutesService) => {
  const { mode } = sessions

  const owner = (backendId: string, method: string, params?: unknown) => ownerIn(sessions, routes, backendId, method, params)

  const relay = (session: Session, via: RequestContext | undefined, request: BackendRequest) =>
    relayTo(routes, session, via, request)

  /** A request the client answers only if it declared the capability (sampling, elicitation). */
  const askOwner = (request: BackendRequest): Effect.Effect<unknown, AskError> => {
    const { method } = request
    const found = owner(request.backendId, method, request.params)
    if (typeof found === "string") return Effect.fail(notFound(`Method not found: ${found}`))
    // A stateless request's client is asked by the gateway's own means, which check its capabilities.
    if (found.session.ask !== undefined) return relay(found.session, found.via, request)
    const mode = field(request.params, "mode")
    const able =
      method === "sampling/createMessage" ? capability(found.session, "sampling") !== undefined : elicits(found.session, mode)
    if (!able) {
      const what = method === "sampling/createMessage" ? "sampling" : `elicitation (${mode === "url" ? "url" : "form"} mode)`
      return Effect.fail(notFound(`Method not found: the client session did not declare the ${what} capability`))
    }
    return relay(found.session, found.via, request)
  }

  /** What the gateway does with each request a backend may send: a table, one row per method. */
  const rows = new Map<string, (request: BackendRequest) => Effect.Effect<unknown, AskError>>([
    [
      "roots/list",
      (request) => {
        const found = owner(request.backendId, request.method, request.params)
        if (typeof found !== "string" && capability(found.session, "roots") !== undefined) {
          return relay(found.session, found.via, request)
        }
        // Nobody to ask: the backend's configured roots (none: an empty list).
        return Effect.succeed({ roots: request.roots })
      }
    ],
    ["sampling/createMessage", askOwner],
    ["elicitation/create", askOwner]
  ])

  /** Answers one backend request (see `Backends.serveRequests`). */
  const handle = (request: BackendRequest): Effect.Effect<unknown, AskError> =>
    Effect.suspend(() => {
      const row = rows.get(request.method)
      return row === undefined ? Effect.fail(notFound(`Method not found: ${request.method}`)) : row(request)
    })

  /** A stateless backend's InputRequiredResult, answered for a session-era client (see `answerRounds`). */
  const answerInputRequired = (
    session: Session,
    via: RequestContext | undefined,
    backendId: string,
    method: string,
    first: unknown,
    retry: (inputResponses: Record<string, unknown>, requestState: unknown) => Effect.Effect<unknown, BackendError>
  ) => answerRounds((request) => askClient(session, via, request), backendId, method, first, retry)

  /** One question for the client, as a session-era request, if it declared what it needs. */
  const askClient = (
    session: Session,
    via: RequestContext | undefined,
    request: BackendRequest
  ): Effect.Effect<unknown, AskError> => {
    const name = CAPABILITY_OF[request.method]
    if (name === undefined) return Effect.fail(notFound(`Method not found: ${request.method}`))
    const mode = field(request.params, "mode")
    const able = request.method === "elicitation/create" ? elicits(session, mode) : capability(session, name) !== undefined
    if (!able) {
      return Effect.fail(
        new MissingClientCapability({
          message: `Missing required client capability: ${name}`,
          requiredCapabilities: { [name]: {} }
        })
      )
    }
    return relay(session, via, request)
  }

  /** A client's progress on a request a backend made: back to that backend, under its own token. */
  const clientProgress = (session: Session, params: unknown): Effect.Effect<void> =>
    Effect.suspend(() => {
      const token = stringField(params, "progressToken")
      const route = token === undefined ? undefined : routes.backendAsk(token)
      // Only the session that was asked may report progress on it.
      if (route === undefined || route.session !== session) return Effect.void
      const backend = backends.backend(route.backendId)
      return backend === undefined
        ? Effect.void
        : backend.notify("notifications/progress", { ...objectOr(params), progressToken: route.token })
    })

  /** The client's roots changed: the backends it owns ask again (over stdio only, see docs/eras.md). */
  const rootsChanged = (session: Session): Effect.Effect<void> =>
    mode !== "single" || capability(session, "roots") === undefined
      ? Effect.logDebug("roots/list_changed not relayed: backends are shared by every session", { session: session.id })
      : Effect.forEach(
          backends.toolsSync(),
          ({ backendId }) => backends.backend(backendId)?.notify("notifications/roots/list_changed") ?? Effect.void,
          { discard: true }
        )

  return { handle, clientProgress, rootsChanged, answerInputRequired }
}

export type ClientAskService = ReturnType<typeof make>

/**
 * What the gateway asks of clients for backends, as a service: backends' requests relayed to the
 * session they belong to, the client's progress on them, its roots changing, and a stateless
 * backend's input requests answered by a session-era client.
 */
export class ClientAsk extends Context.Service<ClientAsk, ClientAskService>()("mcp-agentify/ClientAsk") {
  static readonly layer: Layer.Layer<ClientAsk, never, Sessions | Backends | Routes> = Layer.effect(
    ClientAsk,
    Effect.gen(function* () {
      return make(yield* Sessions, yield* Backends, yield* Routes)
    })
  )
}
