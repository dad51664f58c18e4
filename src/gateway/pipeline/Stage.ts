/**
 * A stage of the call pipeline, typed as middleware: what it needs of the call (what an earlier
 * stage provides), what it provides to the stages after it, and how it fails. A stage runs around
 * the rest of the pipeline (`next`) in the call's caller's context (see Caller), so what it asks of
 * a backend is the caller's; it hands the next stage the call with what it provides added (the
 * target `find` found, the consent `decide` asks for), in a new value, and says what it decided on
 * its page of the call's trail (see Trail). A pipeline whose stage needs what no stage before it
 * provides does not compile (see `Unmet`): `forward` cannot meet a call whose tool `find` has not
 * found, on any way of calling.
 *
 * A stage's module gives its `row`: its name, the ways of calling that meet it, and how it is
 * built from the gateway's services and the configuration in force. Adding a stage is its module
 * and its row in the pipeline's table (see Pipeline); the layer's requirements follow from the rows.
 */
import type { Effect } from "effect"
import type { ResolvedConfig } from "../../config/Config.js"
import type { GatewayError } from "../../protocol/Errors.js"
import { type Target, type Way, WAYS } from "../../call/Vocabulary.js"
import type { ToolCall } from "./Call.js"
import type { CurrentCaller } from "./Caller.js"
import type { Page } from "./Trail.js"

/** What a stage that needs nothing of the call needs, and what one that adds nothing to it provides. */
export type Nothing = object

/** What `find` provides: the tool the call names, as this caller may call it. */
export interface Found {
  readonly target: Target
}

/** What `decide` provides: the rules' holds that need the user's consent (`ask` puts the question). */
export interface Consent {
  readonly consent: ReadonlyArray<{ readonly rule: string; readonly why: string }>
}

/** What a stage's run gives: the call's result, or a failure `E`. */
export type Ran<E> = Effect.Effect<unknown, E, CurrentCaller>

/** The rest of the pipeline, as a stage sees it. */
export type Next<C = ToolCall, E extends GatewayError = GatewayError> = (call: C) => Effect.Effect<unknown, E, CurrentCaller>

/** The key of a stage's types (what it needs, what it provides), read by `Unmet`: no value has it. */
export declare const Types: unique symbol

/** A stage's types: a stage that needs something is no stage that needs nothing (`needs` is contravariant). */
interface Typed<Needs, Provides> {
  readonly [Types]?: { readonly needs: (call: Needs) => void; readonly provides: Provides }
}

/**
 * A stage that needs `Needs` of the call, hands the next `Provides` besides, and fails with `E` of
 * its own (beside whatever the rest of the pipeline fails with). A stage that refuses a call fails
 * it without calling `next`, and notes why on its page of the trail.
 */
export interface Stage<
  Needs extends object = Nothing,
  Provides extends object = Nothing,
  E extends GatewayError = never
> extends Typed<Needs, Provides> {
  readonly name: string
  readonly run: <C extends ToolCall & Needs, E2 extends GatewayError>(
    call: C,
    next: Next<C & Provides, E2>,
    trail: Page
  ) => Effect.Effect<unknown, E | E2, CurrentCaller>
}

/** Any stage, as a pipeline runs it once its table is checked. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyStage = Stage<any, any, GatewayError>

/** The configuration in force, read at each call (a reload changes it). */
export type Current = () => ResolvedConfig

export interface Row<
  Name extends string,
  Needs extends object,
  Provides extends object,
  E extends GatewayError,
  R,
  W extends Way
> extends Typed<Needs, Provides> {
  readonly name: Name
  /** The ways of calling that meet this stage; the others pass it by. */
  readonly ways: ReadonlyArray<W>
  readonly build: (current: Current) => Effect.Effect<Stage<Needs, Provides, E>, never, R>
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRow = Row<string, any, any, GatewayError, any, Way>

/** A stage's row; `ways` defaults to every way of calling. */
export const row = <
  const Name extends string,
  Needs extends object,
  Provides extends object,
  E extends GatewayError,
  R,
  const W extends Way = Way
>(
  name: Name,
  build: (current: Current) => Effect.Effect<Stage<Needs, Provides, E>, never, R>,
  ways: ReadonlyArray<W> = WAYS as ReadonlyArray<W>
): Row<Name, Needs, Provides, E, R, W> => ({ name, ways, build })

/** A stage's (or row's) types; one that does not declare them (a test's own) needs and provides nothing. */
type Of<T> = T extends { readonly [Types]?: { readonly needs: (call: infer N) => void; readonly provides: infer P } }
  ? { readonly needs: N; readonly provides: P }
  : { readonly needs: Nothing; readonly provides: Nothing }
type NeedsOf<T> = Of<T>["needs"]
type ProvidesOf<T> = Of<T>["provides"]

/** A stage placed where what it needs is not provided: which fields it misses. */
interface Refused<Missing> {
  readonly "a stage needs what no stage before it provides": Missing
}

/**
 * Whether every stage of `S` (stages or rows, in order) is given what it needs by the stages
 * before it (and `Have`): `unknown` when it is, else what the first such stage misses, so that a
 * pipeline built of `S & Unmet<S>` does not compile. In a list whose order is unknown (an array),
 * each stage must need nothing beyond `Have`.
 */
export type Unmet<S extends ReadonlyArray<unknown>, Have = Nothing> = S extends readonly [infer H, ...infer T]
  ? [Have] extends [NeedsOf<H>]
    ? Unmet<T, Have & ProvidesOf<H>>
    : Refused<Exclude<keyof NeedsOf<H>, keyof Have>>
  : S extends readonly []
    ? unknown
    : [Have] extends [NeedsOf<S[number]>]
      ? unknown
      : Refused<Exclude<keyof NeedsOf<S[number]>, keyof Have>>

/** The rows of table `T` that way `W` meets, in order. */
export type ForWay<T extends ReadonlyArray<unknown>, W extends Way> = T extends readonly [infer H, ...infer Rest]
  ? H extends { readonly ways: ReadonlyArray<infer X> }
    ? W extends X
      ? [H, ...ForWay<Rest, W>]
      : ForWay<Rest, W>
    : ForWay<Rest, W>
  : []

/** `Unmet` for each way's table of rows: every way's stages must be given what they need. */
export type UnmetOnAnyWay<T extends ReadonlyArray<unknown>> = Unmet<ForWay<T, "client">> &
  Unmet<ForWay<T, "planned">> &
  Unmet<ForWay<T, "request">>
