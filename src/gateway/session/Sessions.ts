/**
 * The sessions open on a gateway, and how they relate to its backends: "single" (one client owns
 * the gateway, over stdio: its `initialize` may reconfigure it and its end stops the backends) or
 * "shared" (the backends started with the gateway serve every session, over HTTP).
 *
 * A service of its own so that what needs every session (the routing of backend notifications in
 * the Gateway, the choice of whom a backend's request goes to in ClientAsk) reads one registry,
 * and a test can build either of them against a registry it fills itself.
 */
import { Context, Layer } from "effect"
import type { Session } from "./Session.js"

export type Mode = "single" | "shared"

export interface SessionsService {
  readonly mode: Mode
  readonly add: (session: Session) => void
  readonly remove: (session: Session) => void
  /** The sessions open now (a live view: iterate it, do not keep it). */
  readonly all: () => Iterable<Session>
}

const make = (mode: Mode): SessionsService => {
  const open = new Set<Session>()
  return {
    mode,
    add: (session) => void open.add(session),
    remove: (session) => void open.delete(session),
    all: () => open
  }
}

export class Sessions extends Context.Service<Sessions, SessionsService>()("mcp-agentify/Sessions") {
  /** One client owns the gateway (stdio). */
  static readonly layerSingle: Layer.Layer<Sessions> = Layer.sync(Sessions, () => make("single"))
  /** Every session shares the backends (HTTP). */
  static readonly layerShared: Layer.Layer<Sessions> = Layer.sync(Sessions, () => make("shared"))
}
