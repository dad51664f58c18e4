/**
 * The rules of a session's lifecycle that both method tables keep: which methods may run in each
 * phase, `initialize` at most once with every exit landing in a defined phase, what the client
 * said of itself recorded, and what a session of a shared gateway may set for itself.
 */
import { Effect } from "effect"
import { objectOr } from "../../json/Json.js"
import { type GatewayError, InvalidParams, InvalidRequest, NotInitialized } from "../../protocol/Errors.js"
import { negotiateProtocolVersion } from "../../protocol/Mcp.js"
import * as Params from "./Params.js"
import { mcpLevelOf, type Session } from "../session/Session.js"

/** Methods a client may call before `initialize` has completed. */
const BEFORE_INIT = new Set(["initialize", "ping", "shutdown"])

/** Methods answered without the backends: never held up by a backend still starting. */
const WITHOUT_BACKENDS = new Set(["initialize", "ping", "shutdown"])

/**
 * Whether a request for `method` waits for the backends still starting (within their start-up
 * timeout, see Backends' `settle`) when it is its session's first: a client that reads the list
 * once gets it whole, and a tool called at once finds its backend.
 */
export const waitsForStart = (method: string): boolean => !WITHOUT_BACKENDS.has(method)

/** Why the session cannot run `method` now (-32001 before initialize, -32600 after shutdown). */
export const outOfPhase = (session: Session, method: string): GatewayError | undefined => {
  if (session.phase === "ready" || BEFORE_INIT.has(method)) return undefined
  return session.phase === "shutdown"
    ? new InvalidRequest({ message: "The session is shutting down" })
    : new NotInitialized({ method })
}

/** `initializationOptions` a session may pass when the gateway is shared: they concern it alone. */
const PER_SESSION_OPTIONS = new Set(["logLevel", "maxListedTools"])

/**
 * Runs `initialize` under the session's lifecycle rules: at most once, and every exit lands in a
 * defined phase (failure or interruption back in "new", so the client may try again).
 */
export const guardInitialize = (
  session: Session,
  run: Effect.Effect<unknown, GatewayError>,
  onFailure: Effect.Effect<void>
): Effect.Effect<unknown, GatewayError> =>
  Effect.suspend((): Effect.Effect<unknown, GatewayError> => {
    if (!session.advance("initialize")) {
      return Effect.fail(
        new InvalidRequest({
          message: session.phase === "shutdown" ? "The session is shutting down" : "initialize was already called"
        })
      )
    }
    return Effect.uninterruptibleMask((restore) =>
      restore(run).pipe(
        // From shutdown neither event moves it: a session shut down during initialize stays so.
        Effect.onExit((exit) => {
          if (exit._tag === "Success") return Effect.sync(() => void session.advance("initialized"))
          return session.advance("initializeFailed") ? onFailure : Effect.void
        })
      )
    )
  })

/** Records who the client is and what it declared. */
export const recordClient = (session: Session, p: typeof Params.InitializeParams.Type): string => {
  const protocolVersion = negotiateProtocolVersion(p.protocolVersion)
  session.describe({ protocolVersion, clientInfo: p.clientInfo, capabilities: objectOr(p.capabilities) })
  return protocolVersion
}

const decodeSessionOptions = Params.decode(Params.SessionOptions)

/** Over a shared gateway only per-session options are accepted; anything else is a clear -32602. */
export const sessionOptions = (session: Session, options: unknown): Effect.Effect<void, InvalidParams> => {
  if (options === undefined || options === null) return Effect.void
  if (typeof options !== "object" || Array.isArray(options)) {
    return Effect.fail(
      new InvalidParams({
        message: "Invalid params: initializationOptions: must be an object",
        issues: ["initializationOptions: must be an object"]
      })
    )
  }
  const shared = Object.keys(options).filter((key) => !PER_SESSION_OPTIONS.has(key))
  if (shared.length > 0) {
    const message =
      `initializationOptions cannot reconfigure a shared gateway: ${shared.join(", ")} ` +
      "apply to every session and are set in the gateway's configuration file or environment; " +
      "a session may set only logLevel and maxListedTools"
    return Effect.fail(
      new InvalidParams({
        message: `Invalid params: ${message}`,
        issues: shared.map((key) => `initializationOptions.${key}: ${message}`)
      })
    )
  }
  return Effect.map(Effect.fromResult(decodeSessionOptions(options)), ({ logLevel, maxListedTools }) => {
    if (logLevel !== undefined) session.setLogLevel(mcpLevelOf(logLevel))
    if (maxListedTools !== undefined) session.maxListedTools = maxListedTools
  })
}
