/**
 * The `requestState`s the input bridge seals for 2026-07-28 clients, and reads back: sealed with
 * the key the gateways of a team share through their store (see store/SharedSecrets; one gateway
 * alone makes its own), each naming the gateway that holds its call (`holder`), so that a retry
 * that reaches another gateway of the team is handed to it. Until the store gives the team's key,
 * this gateway seals with one of its own and asks again.
 */
import { randomBytes } from "node:crypto"
import { Context, Effect, Layer, Schedule } from "effect"
import { SessionDirectory } from "../../store/SessionDirectory.js"
import { SharedSecrets } from "../../store/SharedSecrets.js"
import { sealWith, type State, unsealWith } from "./BridgeTokens.js"

export interface RequestStatesService {
  readonly seal: (state: Omit<State, "holder">) => string
  readonly unseal: (token: unknown) => State | undefined
  /** The gateway of the team that holds the call a sealed state names, when it is not this one. */
  readonly heldElsewhere: (token: unknown) => string | undefined
}

export class RequestStates extends Context.Service<RequestStates, RequestStatesService>()("mcp-agentify/RequestStates") {
  /** Sealed with the team's key once the store gives it (a state sealed before is refused: a round under way asks again). */
  static readonly layer: Layer.Layer<RequestStates, never, SharedSecrets | SessionDirectory> = Layer.effect(
    RequestStates,
    Effect.gen(function* () {
      const { replicaId } = yield* SessionDirectory
      const secrets = yield* SharedSecrets
      let key: Buffer = randomBytes(32)
      const shared = Effect.flatMap(secrets.secret("request-state"), (secret) =>
        secret === undefined ? Effect.fail("not yet") : Effect.sync(() => (key = secret))
      )
      yield* shared.pipe(
        Effect.catch(() => Effect.forkScoped(Effect.retry(shared, Schedule.spaced(2_000)))),
        Effect.asVoid
      )
      return {
        seal: (state) => sealWith(key, { ...state, holder: replicaId }),
        unseal: (token) => unsealWith(key, token),
        heldElsewhere: (token) => {
          const holder = unsealWith(key, token)?.holder
          return holder !== undefined && holder !== replicaId ? holder : undefined
        }
      }
    })
  )
  /** A key of its own, for a bridge alone (tests, an app that embeds it). */
  static readonly layerLocal: Layer.Layer<RequestStates> = Layer.sync(RequestStates, () => {
    const key = randomBytes(32)
    return {
      seal: (state) => sealWith(key, state),
      unseal: (token) => unsealWith(key, token),
      heldElsewhere: () => undefined
    }
  })
}
