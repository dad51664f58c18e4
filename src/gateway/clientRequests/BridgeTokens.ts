/**
 * What the bridge hands a 2026-07-28 client and reads back: the `requestState` it seals (HMAC with
 * a key: see RequestStates; any other state is a stateless backend's, passed on to it) and the
 * keys of the backend's questions in `inputRequests`.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { CAPABILITY_OF } from "./ClientAsk.js"
import * as Meta from "../../json/Meta.js"
import { isObject } from "../../json/Json.js"

/** A state as sealed: the call, the round, the question's method (and name), and the gateway that holds the call. */
export interface State {
  readonly call: string
  readonly round: number
  readonly method: string
  readonly name?: string
  readonly holder?: string
}

/** Marks the gateway's own states: any other `requestState` is a stateless backend's, passed on to it. */
const STATE_PREFIX = "agentify."
export const isOwnState = (token: unknown): boolean => typeof token === "string" && token.startsWith(STATE_PREFIX)

const mac = (key: Buffer, payload: string) => createHmac("sha256", key).update(payload).digest()

/** `state` sealed with `key`: the client can neither forge nor alter it. */
export const sealWith = (key: Buffer, state: State): string => {
  const payload = Buffer.from(JSON.stringify(state)).toString("base64url")
  return `${STATE_PREFIX}${payload}.${mac(key, payload).toString("base64url")}`
}

/** The state `token` holds, when `key` sealed it. */
export const unsealWith = (key: Buffer, token: unknown): State | undefined => {
  if (typeof token !== "string" || token.length > 4_096 || !token.startsWith(STATE_PREFIX)) return undefined
  const [payload, signature, ...rest] = token.slice(STATE_PREFIX.length).split(".")
  if (payload === undefined || signature === undefined || rest.length > 0) return undefined
  const expected = mac(key, payload)
  const given = Buffer.from(signature, "base64url")
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
  try {
    const state: unknown = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"))
    return isObject(state) &&
      typeof state.call === "string" &&
      typeof state.round === "number" &&
      typeof state.method === "string"
      ? {
          call: state.call,
          round: state.round,
          method: state.method,
          ...(typeof state.name === "string" ? { name: state.name } : {}),
          ...(typeof state.holder === "string" ? { holder: state.holder } : {})
        }
      : undefined
  } catch {
    return undefined
  }
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
