/**
 * What the bridge hands a 2026-07-28 client and reads back: the `requestState` it seals (HMAC with
 * a key of this process, or the one the gateways of a team share through their store, so a client
 * can neither forge nor alter it; any other state is a stateless backend's, passed on to it) and
 * the keys of the backend's questions in `inputRequests`. A state names the gateway that holds its
 * call (`holder`): a retry that reaches another gateway of the team is handed to it.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { CAPABILITY_OF } from "./ClientAsk.js"
import * as Meta from "../../values/Meta.js"

let key: Buffer = randomBytes(32)
/** The gateway that seals (and holds the calls), among a team's; none on its own. */
let holder: string | undefined
const mac = (payload: string) => createHmac("sha256", key).update(payload).digest()

/**
 * Seal with the team's shared key from now on, naming this gateway (`replicaId`) as the holder of
 * the calls it seals: a state sealed before is refused (a round under way asks again).
 */
export const share = (sharedKey: Buffer, replicaId: string): void => {
  key = sharedKey
  holder = replicaId
}

/** Marks the gateway's own states: any other `requestState` is a stateless backend's, passed on to it. */
const STATE_PREFIX = "agentify."
export const isOwnState = (token: unknown): boolean => typeof token === "string" && token.startsWith(STATE_PREFIX)

export const seal = (state: {
  readonly call: string
  readonly round: number
  readonly method: string
  readonly name?: string
}) => {
  const payload = Buffer.from(JSON.stringify(holder === undefined ? state : { ...state, holder })).toString("base64url")
  return `${STATE_PREFIX}${payload}.${mac(payload).toString("base64url")}`
}

export const unseal = (
  token: unknown
): { call: string; round: number; method: string; name?: string; holder?: string } | undefined => {
  if (typeof token !== "string" || token.length > 4_096 || !token.startsWith(STATE_PREFIX)) return undefined
  const [payload, signature, ...rest] = token.slice(STATE_PREFIX.length).split(".")
  if (payload === undefined || signature === undefined || rest.length > 0) return undefined
  const expected = mac(payload)
  const given = Buffer.from(signature, "base64url")
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
  try {
    return JSON.parse(Buffer.from(payload, "base64url").toString("utf8"))
  } catch {
    return undefined
  }
}

/** The gateway of a team that holds the call a sealed state names, when it is not this one. */
export const heldElsewhere = (token: unknown): string | undefined => {
  const holderOfState = unseal(token)?.holder
  return holderOfState !== undefined && holderOfState !== holder ? holderOfState : undefined
}

/**
 * `_meta` key by which a backend of the session era may name its question in the stateless era's
 * `inputRequests` (a key that stays the same whichever era the client speaks); the gateway's own,
 * removed before the client sees the question.
 */
export const INPUT_KEY_META = "agentify/inputKey"
const INPUT_KEY = /^[A-Za-z0-9_.-]{1,64}$/

const keyPrefix = (method: string) => CAPABILITY_OF[method] ?? "input"

/**
 * A question's key in `inputRequests`: the one its backend named (`_meta["agentify/inputKey"]`,
 * when valid and not taken in this call), else the gateway's own; the naming key leaves `_meta`.
 */
export const keyed = (method: string, params: unknown, n: number, taken: Set<string>): { key: string; params: unknown } => {
  const named = Meta.get(params, INPUT_KEY_META)
  const fallback = `${keyPrefix(method)}-${n}`
  if (named === undefined) return { key: fallback, params }
  const shown = Meta.without(params, (key) => key === INPUT_KEY_META)
  const usable = typeof named === "string" && INPUT_KEY.test(named) && !taken.has(named) && !/^[a-z]+-\d+$/.test(named)
  if (usable) taken.add(named)
  return { key: usable ? named : fallback, params: shown }
}
