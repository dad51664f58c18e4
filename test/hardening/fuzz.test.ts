/**
 * Fuzzing the wire: random and malformed frames, written in random chunks, to one long-lived
 * gateway (the built CLI) per framing, with valid pings interleaved.
 *
 * The expected replies come from an oracle written from the JSON-RPC 2.0 spec, not from the
 * gateway's code: a JSON object with a usable id (string or finite number) that is not a response
 * gets exactly one reply carrying that id; a notification gets none; anything unparsable or
 * invalid without a usable id gets one reply with id null (-32700 / -32600); a frame over the size
 * limit gets one -32600 and whatever it held is never answered. Every reply's code must be a
 * JSON-RPC or contract code (-32603, a defect of ours, is not allowed), stdout must hold nothing
 * but frames, the process must stay up and exit 0 at the end, and the backend must be gone after.
 *
 * The generators are Effect's own (`effect/Arbitrary`, see `gen` below); a failure prints its seed,
 * and no shrinking keeps a failing run from shrinking for minutes against a live process.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Arbitrary from "effect/Arbitrary"
import { assertOnlyFrames } from "../support/stdioClient.js"
import { fixtureBackend } from "../support/mcpFixture.js"
import {
  cleanEnv,
  Client,
  contentLengthFrames,
  descendants,
  type Id,
  isAlive,
  type Reply,
  until,
  untilGone,
  writeConfig
} from "./support.js"

// ---------------------------------------------------------------------------------------------
// Generators: Effect's own (`effect/Arbitrary`: values from schemas, `map`, `flatMap`, `all`,
// `array`), with the few combinators the shapes below use that it leaves to its users (a weighted
// choice, one of a list, optional keys, strings of a unit, JSON to a depth).

type Weighted<A> = { readonly weight: number; readonly arbitrary: Arbitrary.Arbitrary<A> }

const gen = (() => {
  /** A whole number in [min, max] (fast-check's default range: a signed 32-bit integer). */
  const integer = (range: { readonly min?: number; readonly max?: number } = {}): Arbitrary.Arbitrary<number> =>
    Arbitrary.schema(
      Schema.Int.pipe(Schema.check(Schema.isBetween({ minimum: range.min ?? -(2 ** 31), maximum: range.max ?? 2 ** 31 - 1 })))
    )
  const constant = <const A>(value: A): Arbitrary.Arbitrary<A> => Arbitrary.Constant(value)
  const constantFrom = <const A extends ReadonlyArray<unknown>>(...values: A): Arbitrary.Arbitrary<A[number]> =>
    Arbitrary.flatMap(integer({ min: 0, max: values.length - 1 }), (at) => Arbitrary.Constant<A[number]>(values[at]))
  /** One of the choices, each as likely as its weight (1 when given bare). */
  const oneof = <A>(...choices: ReadonlyArray<Arbitrary.Arbitrary<A> | Weighted<A>>): Arbitrary.Arbitrary<A> => {
    const weighted = choices.map((choice): Weighted<A> => ("weight" in choice ? choice : { weight: 1, arbitrary: choice }))
    const total = weighted.reduce((sum, choice) => sum + choice.weight, 0)
    return Arbitrary.flatMap(integer({ min: 0, max: total - 1 }), (roll) => {
      let left = roll
      for (const choice of weighted) {
        if (left < choice.weight) return choice.arbitrary
        left -= choice.weight
      }
      return weighted[weighted.length - 1]!.arbitrary
    })
  }
  const record = <const F extends Record<string, Arbitrary.Arbitrary<unknown>>>(fields: F) => Arbitrary.all(fields)
  /** A record whose every key may be absent (fast-check's `requiredKeys: []`). */
  const ABSENT = Symbol("absent")
  const partialRecord = (fields: Record<string, Arbitrary.Arbitrary<unknown>>): Arbitrary.Arbitrary<Record<string, unknown>> =>
    Arbitrary.map(
      Arbitrary.all(
        Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, oneof<unknown>(constant(ABSENT), value)]))
      ),
      (drawn) => Object.fromEntries(Object.entries(drawn).filter(([, value]) => value !== ABSENT))
    )
  const boolean = Arbitrary.schema(Schema.Boolean)
  /** A number in [0, 1], spread evenly (not skewed towards 0 as a schema's doubles are). */
  const fraction = Arbitrary.map(integer({ min: 0, max: 1_000_000 }), (n) => n / 1_000_000)
  /** Any code point but a surrogate (fast-check's "binary" unit). */
  const binaryChar = Arbitrary.map(integer({ min: 0, max: 0x10ffff - 0x800 }), (n) =>
    String.fromCodePoint(n < 0xd800 ? n : n + 0x800)
  )
  const asciiChar = Arbitrary.map(integer({ min: 0x20, max: 0x7e }), (n) => String.fromCharCode(n))
  const string = (options: {
    readonly unit: Arbitrary.Arbitrary<string>
    readonly minLength?: number
    readonly maxLength: number
  }): Arbitrary.Arbitrary<string> =>
    Arbitrary.map(Arbitrary.array(options.unit, { minLength: options.minLength ?? 0, maxLength: options.maxLength }), (units) =>
      units.join("")
    )
  const uint8Array = (options: { readonly minLength?: number; readonly maxLength: number }): Arbitrary.Arbitrary<Uint8Array> =>
    Arbitrary.map(
      Arbitrary.array(integer({ min: 0, max: 255 }), { minLength: options.minLength ?? 0, maxLength: options.maxLength }),
      (bytes) => Uint8Array.from(bytes)
    )
  const dictionary = <V>(
    key: Arbitrary.Arbitrary<string>,
    value: Arbitrary.Arbitrary<V>
  ): Arbitrary.Arbitrary<Record<string, V>> =>
    Arbitrary.map(Arbitrary.array(Arbitrary.all([key, value]), { maxLength: 10 }), (entries) => Object.fromEntries(entries))
  const jsonLeaf = oneof<unknown>(
    constant(null),
    boolean,
    integer(),
    Arbitrary.schema(Schema.Finite),
    string({ unit: asciiChar, maxLength: 10 })
  )
  /** JSON values nested at most `maxDepth` levels. */
  const jsonValue = (options: { readonly maxDepth: number }): Arbitrary.Arbitrary<unknown> =>
    options.maxDepth <= 0
      ? jsonLeaf
      : oneof<unknown>(
          { weight: 2, arbitrary: jsonLeaf },
          { weight: 1, arbitrary: Arbitrary.array(jsonValue({ maxDepth: options.maxDepth - 1 }), { maxLength: 5 }) },
          {
            weight: 1,
            arbitrary: dictionary(string({ unit: asciiChar, maxLength: 10 }), jsonValue({ maxDepth: options.maxDepth - 1 }))
          }
        )
  const hostLabel = string({ unit: constantFrom(..."abcdefghijklmnopqrstuvwxyz0123456789"), minLength: 1, maxLength: 12 })
  const webUrl = Arbitrary.map(
    record({
      scheme: constantFrom("http", "https"),
      host: hostLabel,
      tld: constantFrom("com", "org", "io", "dev"),
      path: Arbitrary.array(hostLabel, { maxLength: 3 })
    }),
    ({ scheme, host, tld, path }) => `${scheme}://${host}.${tld}/${path.join("/")}`
  )
  /** A property of two inputs, run against a live process: one run at a time. */
  const asyncProperty = <A, B>(a: Arbitrary.Arbitrary<A>, b: Arbitrary.Arbitrary<B>, run: (a: A, b: B) => Promise<void>) => ({
    inputs: Arbitrary.all([a, b]),
    run
  })
  /**
   * Runs it, failing with the check's report (its seed, its replay). No shrinking: a failing run
   * must not shrink for minutes against a live process.
   */
  const assert = async <A, B>(
    property: ReturnType<typeof asyncProperty<A, B>>,
    options: { readonly runs: number; readonly seed?: string; readonly replay?: string }
  ): Promise<void> => {
    const result = await Effect.runPromise(
      Arbitrary.checkEffect(
        property.inputs,
        ([a, b]) =>
          Effect.as(
            Effect.tryPromise(() => property.run(a, b)),
            true
          ),
        { concurrency: 1, maxShrinks: 0, ...options }
      )
    )
    const failure = Arbitrary.formatCheckFailure(result)
    if (failure !== undefined) throw new Error(failure)
  }
  return {
    integer,
    constant,
    constantFrom,
    oneof,
    record,
    partialRecord,
    boolean,
    fraction,
    binaryChar,
    string,
    uint8Array,
    dictionary,
    jsonValue,
    webUrl,
    asyncProperty,
    assert
  }
})()

const MAX_FRAME_BYTES = 64 * 1024
/** Codes a fuzzed request may get: plain JSON-RPC ones, LSP's cancel, the contract's -32000..-32004. */
const ALLOWED_CODES = new Set([-32700, -32600, -32601, -32602, -32800, -32000, -32001, -32002, -32003, -32004])

// ---------------------------------------------------------------------------------------------
// The oracle

/** What one frame must produce. Ids: "one" exactly one reply, "maybe" at most one, "none" no reply. */
interface Expected {
  readonly ids: Array<[Id, "one" | "maybe" | "none"]>
  nullMin: number
  nullMax: number
}

const nothing = (): Expected => ({ ids: [], nullMin: 0, nullMax: 0 })
const oneNull = (): Expected => ({ ids: [], nullMin: 1, nullMax: 1 })
const isUsableId = (u: unknown): u is Id => typeof u === "string" || (typeof u === "number" && Number.isFinite(u))
const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const expectMessage = (v: unknown): Expected => {
  if (!isObject(v)) return oneNull()
  const isResponse = !("method" in v) && ("result" in v || "error" in v)
  if (isResponse) {
    // A response to nothing must not be answered; a malformed one may get an Invalid Request.
    if (isUsableId(v.id)) return { ids: [[v.id, v.jsonrpc === "2.0" ? "none" : "maybe"]], nullMin: 0, nullMax: 0 }
    return { ids: [], nullMin: 0, nullMax: 1 }
  }
  if (isUsableId(v.id)) return { ids: [[v.id, "one"]], nullMin: 0, nullMax: 0 }
  if ("id" in v) return oneNull()
  const notification =
    v.jsonrpc === "2.0" &&
    typeof v.method === "string" &&
    v.method !== "" &&
    (!("params" in v) || (typeof v.params === "object" && v.params !== null))
  return notification ? nothing() : oneNull()
}

const combine = (parts: Array<Expected>): Expected => ({
  ids: parts.flatMap((p) => p.ids),
  nullMin: parts.reduce((n, p) => n + p.nullMin, 0),
  nullMax: parts.reduce((n, p) => n + p.nullMax, 0)
})

/** The ids a text holds, if it parses: what an oversized or mis-framed frame must never get answered. */
const idsIn = (text: string): Array<Id> => {
  try {
    const value = JSON.parse(text)
    return (Array.isArray(value) ? value : [value]).flatMap((m) => (isObject(m) && isUsableId(m.id) ? [m.id] : []))
  } catch {
    return []
  }
}

/** One frame's text (framing removed, decoded as UTF-8 like any JSON reader). */
const expectText = (text: string): Expected => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return oneNull()
  }
  if (Array.isArray(value)) return value.length === 0 ? oneNull() : combine(value.map(expectMessage))
  return expectMessage(value)
}

/** Usable ids written as an `"id"` member within the first or last 600 characters of `text`. */
const idsNearEdges = (text: string): Array<Id> =>
  [...`${text.slice(0, 600)} ${text.slice(-600)}`.matchAll(/"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)/g)].flatMap((m) => {
    try {
      const id: unknown = JSON.parse(m[1]!)
      return isUsableId(id) ? [id as Id] : []
    } catch {
      return []
    }
  })

/** A frame body of `bytes` (no trailing CR/LF) as the gateway must treat it. */
const expectBody = (bytes: Buffer, mode: "ndjson" | "content-length"): Expected => {
  const text = bytes.toString("utf8")
  if (bytes.length > MAX_FRAME_BYTES) {
    // Dropped unread, but the gateway may find the id in the frame's first or last bytes and answer
    // it (-32600); otherwise the one reply has id null. Ids anywhere else are never answered.
    const visible = idsNearEdges(text)
    return {
      ids: [
        ...idsIn(text)
          .filter((id) => !visible.includes(id))
          .map((id): [Id, "none"] => [id, "none"]),
        ...visible.map((id): [Id, "maybe"] => [id, "maybe"])
      ],
      nullMin: visible.length > 0 ? 0 : 1,
      nullMax: 1
    }
  }
  // A line of whitespace is no frame in newline-delimited mode; an empty body is still a frame.
  if (mode === "ndjson" && text.trim() === "") return nothing()
  return expectText(text)
}

// ---------------------------------------------------------------------------------------------
// What is generated: shapes, made concrete (with ids unique per gateway) when sent

type IdShape =
  | { readonly kind: "absent" }
  | { readonly kind: "string"; readonly prefix: string }
  | { readonly kind: "bad-utf8"; readonly bytes: Uint8Array }
  | { readonly kind: "number"; readonly form: "int" | "negative" | "float" | "huge" | "exponent" | "beyond-precision" }
  /** Raw JSON that is not a usable id. */
  | { readonly kind: "unusable"; readonly raw: string }

type ParamsShape =
  | { readonly kind: "absent" }
  | { readonly kind: "json"; readonly value: unknown }
  | { readonly kind: "deep-object"; readonly depth: number }
  | { readonly kind: "deep-array"; readonly depth: number }
  /** tools/call of the echo tool, or an orchestration, with a value nested `depth` deep inside. */
  | { readonly kind: "deep-inside"; readonly depth: number; readonly where: "arguments" | "query" | "context" }

interface MessageShape {
  readonly jsonrpc: unknown
  readonly id: IdShape
  readonly method: unknown
  readonly params: ParamsShape
  readonly response: unknown
}

type FrameShape =
  | { readonly kind: "message"; readonly message: MessageShape }
  | { readonly kind: "batch"; readonly messages: ReadonlyArray<MessageShape | { readonly json: unknown }> }
  | { readonly kind: "json"; readonly value: unknown }
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "bytes"; readonly bytes: Uint8Array }
  | { readonly kind: "oversize"; readonly extra: number; readonly padding: "string" | "spaces" }
  | { readonly kind: "cancel"; readonly back: number }

/** A string unit that also yields lone surrogates (JSON.stringify escapes them; they must round-trip). */
const unit = gen.oneof(
  { weight: 8, arbitrary: gen.binaryChar },
  { weight: 1, arbitrary: Arbitrary.map(gen.integer({ min: 0xd800, max: 0xdfff }), (c) => String.fromCharCode(c)) }
)
const oddString = (maxLength: number) => gen.string({ unit, maxLength })

const idShape: Arbitrary.Arbitrary<IdShape> = gen.oneof<IdShape>(
  { weight: 2, arbitrary: gen.constant({ kind: "absent" as const }) },
  { weight: 4, arbitrary: Arbitrary.map(oddString(40), (prefix) => ({ kind: "string" as const, prefix })) },
  {
    weight: 1,
    arbitrary: Arbitrary.map(gen.integer({ min: 1_000, max: 20_000 }), (n) => ({
      kind: "string" as const,
      prefix: "L".repeat(n)
    }))
  },
  {
    weight: 1,
    arbitrary: Arbitrary.map(
      gen.uint8Array({ minLength: 1, maxLength: 12 }),
      // Bytes >= 0x80 only: no quote, backslash, newline or control character, just invalid UTF-8 (mostly).
      (bytes) => ({ kind: "bad-utf8" as const, bytes: bytes.map((b) => b | 0x80) })
    )
  },
  {
    weight: 4,
    arbitrary: Arbitrary.map(gen.constantFrom("int", "negative", "float", "huge", "exponent", "beyond-precision"), (form) => ({
      kind: "number" as const,
      form
    }))
  },
  {
    weight: 2,
    arbitrary: Arbitrary.map(
      gen.constantFrom("null", "true", "false", "{}", "[]", '{"id":1}', "[1]", "1e400", "-1e999"),
      (raw) => ({ kind: "unusable" as const, raw })
    )
  }
)

/** Random JSON with any top-level "id" renamed: ids must stay unique per gateway to be counted. */
const withoutIds = (value: unknown): unknown => {
  const strip = (v: unknown) =>
    isObject(v) && "id" in v ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k === "id" ? "id_" : k, x])) : v
  return Array.isArray(value) ? value.map(strip) : strip(value)
}

const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`
const deepArray = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`

const TOOL_NAMES = [
  "fx__echo",
  "fx__add",
  "fx__slow",
  "fx__fail",
  "fx__log",
  "fx__cancelled",
  "agentify_orchestrate",
  "fx__nope",
  "nope",
  ""
] as const

const toolCallParams: Arbitrary.Arbitrary<ParamsShape> = Arbitrary.map(
  gen.record({
    name: gen.oneof<unknown>(gen.constantFrom(...TOOL_NAMES), oddString(20), gen.integer()),
    arguments: gen.oneof<unknown>(
      gen.constant(undefined),
      gen.dictionary(gen.constantFrom("text", "a", "b", "ms", "query", "x"), gen.jsonValue({ maxDepth: 2 })),
      gen.record({ ms: gen.integer({ min: 0, max: 40 }) }),
      gen.jsonValue({ maxDepth: 2 })
    )
  }),
  (value) => ({ kind: "json" as const, value })
)

const orchestrateParams: Arbitrary.Arbitrary<ParamsShape> = Arbitrary.map(
  gen.record({
    query: gen.oneof<unknown>(oddString(60), gen.constant(""), gen.integer(), gen.constant(null)),
    context: gen.oneof<unknown>(
      gen.constant(undefined),
      gen.constant(null),
      gen.partialRecord({
        activeDocumentURI: gen.oneof<unknown>(gen.webUrl, gen.constant(null), gen.integer(), oddString(10)),
        currentWorkingDirectory: gen.oneof<unknown>(gen.constant("/tmp"), gen.constant(null), gen.jsonValue({ maxDepth: 2 })),
        selectionText: gen.oneof<unknown>(oddString(30), gen.constant(null))
      })
    )
  }),
  (value) => ({ kind: "json" as const, value })
)

const deepInside = gen.record({
  depth: gen.integer({ min: 1, max: 10_000 }),
  where: gen.constantFrom("arguments", "query", "context")
})

const paramsShape: Arbitrary.Arbitrary<ParamsShape> = gen.oneof<ParamsShape>(
  { weight: 3, arbitrary: gen.constant({ kind: "absent" as const }) },
  { weight: 4, arbitrary: Arbitrary.map(gen.jsonValue({ maxDepth: 4 }), (value) => ({ kind: "json" as const, value })) },
  { weight: 4, arbitrary: toolCallParams },
  { weight: 3, arbitrary: orchestrateParams },
  {
    weight: 1,
    arbitrary: Arbitrary.map(gen.integer({ min: 1, max: 10_000 }), (depth) => ({ kind: "deep-object" as const, depth }))
  },
  {
    weight: 1,
    arbitrary: Arbitrary.map(gen.integer({ min: 1, max: 30_000 }), (depth) => ({ kind: "deep-array" as const, depth }))
  },
  { weight: 1, arbitrary: Arbitrary.map(deepInside, (o) => ({ kind: "deep-inside" as const, ...o })) }
)

const methodShape = gen.oneof<unknown>(
  {
    weight: 10,
    arbitrary: gen.constantFrom(
      "ping",
      "tools/list",
      "tools/call",
      "tools/call",
      "agentify/orchestrateTask",
      "initialize",
      "resources/list",
      "resources/read",
      "prompts/list",
      "prompts/get",
      "completion/complete",
      "logging/setLevel",
      "notifications/initialized",
      "notifications/cancelled",
      "$/cancelRequest",
      "notifications/progress"
    )
  },
  // Never "exit" or "shutdown" (those end the session); random names stay under a prefix.
  { weight: 2, arbitrary: Arbitrary.map(oddString(20), (s) => `fz/${s}`) },
  { weight: 1, arbitrary: gen.constantFrom("", 5, null, true, {}, []) }
)

/** A method with params that fit it (so calls reach the backend and the orchestrator), or any mix. */
const callShape: Arbitrary.Arbitrary<{ readonly method: unknown; readonly params: ParamsShape }> = gen.oneof<{
  readonly method: unknown
  readonly params: ParamsShape
}>(
  { weight: 3, arbitrary: gen.record({ method: gen.constant("tools/call"), params: toolCallParams }) },
  { weight: 2, arbitrary: gen.record({ method: gen.constant("agentify/orchestrateTask"), params: orchestrateParams }) },
  {
    weight: 1,
    arbitrary: gen.record({
      method: gen.constantFrom("ping", "tools/list"),
      params: gen.constant<ParamsShape>({ kind: "absent" as const })
    })
  },
  {
    weight: 1,
    arbitrary: Arbitrary.map(deepInside, ({ depth, where }) => ({
      method: where === "arguments" ? "tools/call" : "agentify/orchestrateTask",
      params: { kind: "deep-inside" as const, depth, where }
    }))
  },
  {
    weight: 4,
    arbitrary: gen.record({
      method: gen.oneof<unknown>({ weight: 12, arbitrary: methodShape }, { weight: 1, arbitrary: gen.constant(undefined) }),
      params: paramsShape
    })
  }
)

const messageShape: Arbitrary.Arbitrary<MessageShape> = Arbitrary.map(
  gen.record({
    jsonrpc: gen.oneof<unknown>(
      { weight: 12, arbitrary: gen.constant("2.0") },
      { weight: 1, arbitrary: gen.constantFrom(undefined, "1.0", 2, null, "2.0 ") }
    ),
    id: idShape,
    call: callShape,
    response: gen.oneof<unknown>(
      { weight: 12, arbitrary: gen.constant(undefined) },
      { weight: 1, arbitrary: gen.constantFrom({ result: {} }, { error: { code: -1, message: "x" } }, { result: null }) }
    )
  }),
  ({ call, ...rest }) => ({ ...rest, method: call.method, params: call.params })
)

const frameShape: Arbitrary.Arbitrary<FrameShape> = gen.oneof<FrameShape>(
  { weight: 12, arbitrary: Arbitrary.map(messageShape, (message) => ({ kind: "message" as const, message })) },
  {
    weight: 2,
    arbitrary: Arbitrary.map(
      Arbitrary.array(
        gen.oneof<MessageShape | { readonly json: unknown }>(
          { weight: 4, arbitrary: messageShape },
          { weight: 1, arbitrary: Arbitrary.map(gen.jsonValue({ maxDepth: 2 }), (json) => ({ json: withoutIds(json) })) }
        ),
        { maxLength: 5 }
      ),
      (messages) => ({ kind: "batch" as const, messages })
    )
  },
  {
    weight: 2,
    arbitrary: Arbitrary.map(gen.jsonValue({ maxDepth: 3 }), (value) => ({ kind: "json" as const, value: withoutIds(value) }))
  },
  { weight: 2, arbitrary: Arbitrary.map(oddString(200), (text) => ({ kind: "text" as const, text })) },
  { weight: 1, arbitrary: Arbitrary.map(gen.uint8Array({ maxLength: 200 }), (bytes) => ({ kind: "bytes" as const, bytes })) },
  {
    weight: 1,
    arbitrary: Arbitrary.map(
      gen.record({ extra: gen.integer({ min: 1, max: 3_000 }), padding: gen.constantFrom("string", "spaces") }),
      (o) => ({ kind: "oversize" as const, ...o })
    )
  },
  { weight: 1, arbitrary: Arbitrary.map(gen.integer({ min: 1, max: 8 }), (back) => ({ kind: "cancel" as const, back })) }
)

/** Makes shapes concrete. Ids are unique per gateway (a counter), so replies can be counted per id. */
class Builder {
  private n = 0
  /** Usable ids sent so far, for `cancel` frames that target a recent request. */
  readonly recent: Array<Id> = []

  idText(shape: IdShape): Buffer | undefined {
    const n = ++this.n
    switch (shape.kind) {
      case "absent":
        return undefined
      case "string":
        return Buffer.from(JSON.stringify(`${shape.prefix}#fz${n}`), "utf8")
      case "bad-utf8":
        return Buffer.concat([Buffer.from('"'), Buffer.from(shape.bytes), Buffer.from(`#fz${n}"`)])
      case "number":
        switch (shape.form) {
          case "int":
            return Buffer.from(String(1_000_000 + n))
          case "negative":
            return Buffer.from(String(-n))
          case "float":
            return Buffer.from(`${n}.25`)
          case "huge":
            return Buffer.from(String(Number.MAX_SAFE_INTEGER - n))
          case "exponent":
            return Buffer.from(`${n}e250`)
          case "beyond-precision":
            return Buffer.from(`${n}000000000000000000000000000000000001`)
        }
        break
      case "unusable":
        // An object id holding an id: numbered, so that two of them in a run never share one.
        return Buffer.from(shape.raw.replace('{"id":1}', `{"id":${3_000_000 + n}}`))
    }
  }

  params(shape: ParamsShape): Buffer | undefined {
    switch (shape.kind) {
      case "absent":
        return undefined
      case "json":
        return shape.value === undefined ? undefined : Buffer.from(JSON.stringify(shape.value), "utf8")
      case "deep-object":
        return Buffer.from(deepObject(shape.depth))
      case "deep-array":
        return Buffer.from(deepArray(shape.depth))
      case "deep-inside": {
        const deep = deepObject(shape.depth)
        return Buffer.from(
          shape.where === "arguments"
            ? `{"name":"fx__echo","arguments":${deep}}`
            : shape.where === "query"
              ? `{"query":${deep}}`
              : `{"query":"q","context":{"activeDocumentURI":${deep}}}`
        )
      }
    }
  }

  message(shape: MessageShape): Buffer {
    const parts: Array<Buffer> = []
    const field = (name: string, value: Buffer | undefined) => {
      if (value !== undefined) parts.push(Buffer.concat([Buffer.from(`${JSON.stringify(name)}:`), value]))
    }
    if (shape.jsonrpc !== undefined) field("jsonrpc", Buffer.from(JSON.stringify(shape.jsonrpc)))
    const id = this.idText(shape.id)
    field("id", id)
    if (shape.method !== undefined) field("method", Buffer.from(JSON.stringify(shape.method)))
    field("params", this.params(shape.params))
    if (shape.response !== undefined) {
      for (const [k, v] of Object.entries(shape.response as object)) field(k, Buffer.from(JSON.stringify(v)))
    }
    const bytes = Buffer.concat([
      Buffer.from("{"),
      ...parts.flatMap((p, i) => (i === 0 ? [p] : [Buffer.from(","), p])),
      Buffer.from("}")
    ])
    for (const found of idsIn(bytes.toString("utf8"))) this.recent.push(found)
    return bytes
  }

  frame(shape: FrameShape): Buffer {
    switch (shape.kind) {
      case "message":
        return this.message(shape.message)
      case "batch":
        return Buffer.concat([
          Buffer.from("["),
          ...shape.messages.flatMap((m, i) => [
            ...(i === 0 ? [] : [Buffer.from(",")]),
            "json" in m ? Buffer.from(JSON.stringify(m.json)) : this.message(m)
          ]),
          Buffer.from("]")
        ])
      case "json":
        return Buffer.from(JSON.stringify(shape.value), "utf8")
      case "text":
        return Buffer.from(shape.text, "utf8")
      case "bytes":
        return Buffer.from(shape.bytes)
      case "oversize": {
        const head = `{"jsonrpc":"2.0","id":"oversize#fz${++this.n}","method":"ping","params":{"pad":"`
        const size = MAX_FRAME_BYTES + shape.extra
        const body =
          shape.padding === "string"
            ? `${head}${"p".repeat(size - head.length - 3)}"}}`
            : `${head}"}}${" ".repeat(size - head.length - 3)}`
        return Buffer.from(body)
      }
      case "cancel": {
        const target = this.recent[Math.max(0, this.recent.length - shape.back)] ?? "nothing"
        return Buffer.from(
          JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: target, reason: "fuzz" } }),
          "utf8"
        )
      }
    }
  }

  pingId(): string {
    return `ping#fz${++this.n}`
  }
}

// ---------------------------------------------------------------------------------------------
// Running and checking

interface Tally {
  frames: number
  bytes: number
  readonly roles: Map<Id, "one" | "maybe" | "none">
  readonly pings: Set<Id>
  nullMin: number
  nullMax: number
}

/** FUZZ_SEED (or FUZZ_REPLAY, the "Replay:" line) replays a failure the check printed. */
const replay = {
  ...(process.env.FUZZ_SEED === undefined ? {} : { seed: process.env.FUZZ_SEED }),
  ...(process.env.FUZZ_REPLAY === undefined ? {} : { replay: process.env.FUZZ_REPLAY })
}

const newTally = (): Tally => ({ frames: 0, bytes: 0, roles: new Map(), pings: new Set(), nullMin: 0, nullMax: 0 })

const record = (tally: Tally, expected: Expected) => {
  for (const [id, role] of expected.ids) {
    if (tally.roles.has(id)) throw new Error(`the generator repeated id ${JSON.stringify(id)}`)
    tally.roles.set(id, role)
  }
  tally.nullMin += expected.nullMin
  tally.nullMax += expected.nullMax
}

/** Writes `bytes` cut at `cuts` (fractions), yielding to the event loop between pieces. */
const writeInPieces = async (client: Client, bytes: Buffer, cuts: ReadonlyArray<number>) => {
  const points = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b)
  let from = 0
  for (const p of [...points, bytes.length]) {
    if (p <= from) continue
    client.write(bytes.subarray(from, p))
    from = p
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** Waits for every "one" id and ping of a run, then checks what can be checked at once. */
const settle = async (client: Client, tally: Tally, waitFor: ReadonlyArray<Id>) => {
  await until(
    `replies to ${waitFor
      .filter((id) => !client.counts.has(id))
      .slice(0, 5)
      .map((id) => JSON.stringify(id).slice(0, 60))
      .join(", ")}`,
    () => waitFor.every((id) => client.counts.has(id)) && client.nullReplies.length >= tally.nullMin,
    20_000,
    5
  )
  expect(client.running).toBe(true)
}

/** The final accounting over everything the gateway wrote. */
const checkAll = (client: Client, tally: Tally, replies: ReadonlyArray<Reply>) => {
  for (const reply of replies) {
    if (reply.id === null) {
      expect([-32700, -32600]).toContain(reply.error?.code)
      continue
    }
    const role = tally.pings.has(reply.id) ? "one" : tally.roles.get(reply.id)
    if (role === undefined) throw new Error(`a reply for an id never sent: ${JSON.stringify(reply).slice(0, 200)}`)
    if (role === "none") throw new Error(`a reply for an id that must get none: ${JSON.stringify(reply).slice(0, 200)}`)
    if (tally.pings.has(reply.id)) expect(reply).toEqual({ jsonrpc: "2.0", id: reply.id, result: {} })
    else if ("error" in reply) {
      if (!ALLOWED_CODES.has(reply.error!.code)) throw new Error(`unexpected error code: ${JSON.stringify(reply).slice(0, 400)}`)
    } else {
      // A success is a well-formed JSON-RPC 2.0 response: exactly these members, and a result.
      expect(Object.keys(reply).sort()).toEqual(["id", "jsonrpc", "result"])
      expect(reply.jsonrpc).toBe("2.0")
      expect((reply as { result?: unknown }).result).not.toBeUndefined()
    }
  }
  for (const id of tally.pings) expect(client.counts.get(id)).toBe(1)
  for (const [id, role] of tally.roles) {
    const count = client.counts.get(id) ?? 0
    if (role === "one" && count !== 1)
      throw new Error(`id ${JSON.stringify(id).slice(0, 80)} got ${count} replies, expected exactly one`)
    if (role === "maybe" && count > 1) throw new Error(`id ${JSON.stringify(id).slice(0, 80)} got ${count} replies`)
  }
  expect(client.nullReplies.length).toBeGreaterThanOrEqual(tally.nullMin)
  expect(client.nullReplies.length).toBeLessThanOrEqual(tally.nullMax)
}

/** "code: count" for every reply, for the printed summary. */
const histogram = (replies: ReadonlyArray<Reply>): string => {
  const counts = new Map<string, number>()
  for (const r of replies) {
    const key = r.error === undefined ? "result" : String(r.error.code)
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k}: ${n}`)
    .join(", ")
}

const flatten = (messages: ReadonlyArray<any>): Array<Reply> =>
  messages.flatMap((m) => (Array.isArray(m) ? m : [m])).filter((m) => "result" in m || "error" in m)

const startFuzzGateway = (framing: "ndjson" | "content-length") =>
  new Client({
    framing,
    args: ["--config", writeConfig({ backends: [fixtureBackend("fx")], requestTimeoutMs: 10_000 })],
    env: cleanEnv({ AGENTIFY_MAX_FRAME_BYTES: String(MAX_FRAME_BYTES) })
  })

// ---------------------------------------------------------------------------------------------

describe("fuzzing the wire: odd ids", () => {
  it("odd ids come back as the same value: -0, beyond double precision, lone surrogates, invalid UTF-8", async () => {
    // A gateway of its own: the random test below ends its gateway, and test order is not fixed.
    const client = startFuzzGateway("ndjson")
    const tally = newTally()
    const init = await client.initialize()
    tally.roles.set(init.id!, "one")
    const cases: Array<[string, Id | null]> = [
      ["-0", 0],
      ["123456789012345678901234567890", Number("123456789012345678901234567890")],
      ['"\\ud800 lone"', "\ud800 lone"],
      ["1e400", null]
    ]
    for (const [raw, expected] of cases) {
      client.write(`{"jsonrpc":"2.0","id":${raw},"method":"ping"}\n`)
      if (expected === null) {
        record(tally, oneNull())
        await until("the null-id reply", () => client.nullReplies.length >= tally.nullMin)
      } else {
        tally.pings.add(expected)
        expect(await client.reply(expected)).toEqual({ jsonrpc: "2.0", id: expected, result: {} })
      }
      tally.frames++
    }
    client.write(
      Buffer.concat([
        Buffer.from('{"jsonrpc":"2.0","id":"'),
        Buffer.from([0xc3, 0x28, 0xff]),
        Buffer.from('#utf8","method":"ping"}\n')
      ])
    )
    const replacement = "\ufffd(\ufffd#utf8"
    tally.pings.add(replacement)
    expect(await client.reply(replacement)).toMatchObject({ result: {} })
    tally.frames++
    const { code, signal } = await client.close()
    expect({ code, signal }).toEqual({ code: 0, signal: null })
    checkAll(client, tally, flatten(assertOnlyFrames(client.stdout())))
  })
})

describe("fuzzing the wire: newline-delimited JSON", () => {
  let client: Client
  let backendPids: Array<number> = []
  const tally = newTally()
  const builder = new Builder()

  beforeAll(async () => {
    client = startFuzzGateway("ndjson")
    const init = await client.initialize()
    expect(init.result?.serverInfo?.name).toBe("mcp-agentify")
    tally.roles.set(init.id!, "one")
    // initialize does not wait for the backends; a first request does.
    tally.roles.set((await client.request("tools/list")).id!, "one")
    backendPids = descendants(client.pid)
    expect(backendPids.length).toBeGreaterThan(0)
  })

  afterAll(async () => {
    if (client.running) await client.close()
  })

  it("random frames in random chunks: one reply per id, valid codes, pings still answered", async () => {
    const run = gen.asyncProperty(
      Arbitrary.array(gen.record({ frame: frameShape, ping: gen.boolean }), { minLength: 1, maxLength: 20 }),
      Arbitrary.array(gen.fraction, { maxLength: 6 }),
      async (items, cuts) => {
        const pieces: Array<Buffer> = []
        const waitFor: Array<Id> = []
        for (const item of items) {
          let body = builder.frame(item.frame)
          // One frame per line: newlines inside generated text or bytes would cut it in two.
          if (body.includes(0x0a)) body = Buffer.from(body.map((b) => (b === 0x0a ? 0x20 : b)))
          const expected = expectBody(body.length > 0 && body[body.length - 1] === 0x0d ? body.subarray(0, -1) : body, "ndjson")
          record(tally, expected)
          for (const [id, role] of expected.ids) if (role === "one") waitFor.push(id)
          pieces.push(body, Buffer.from("\n"))
          tally.frames++
          if (item.ping) {
            const id = builder.pingId()
            tally.pings.add(id)
            waitFor.push(id)
            pieces.push(Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"ping"}\n`))
            tally.frames++
          }
        }
        const sentinel = builder.pingId()
        tally.pings.add(sentinel)
        waitFor.push(sentinel)
        pieces.push(Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(sentinel)},"method":"ping"}\n`))
        tally.frames++
        const bytes = Buffer.concat(pieces)
        tally.bytes += bytes.length
        await writeInPieces(client, bytes, cuts)
        await settle(client, tally, waitFor)
      }
    )
    await gen.assert(run, { runs: 300, ...replay })

    const { code, signal } = await client.close()
    expect({ code, signal }).toEqual({ code: 0, signal: null })
    const frames = assertOnlyFrames(client.stdout())
    checkAll(client, tally, flatten(frames))
    await untilGone(backendPids)
    expect(backendPids.filter(isAlive)).toEqual([])
    console.log(
      `fuzz (ndjson): ${tally.frames} frames (${(tally.bytes / 1024 / 1024).toFixed(1)} MiB) sent, ${tally.roles.size} fuzzed ids, ` +
        `${frames.length} frames back; replies by code: ${histogram(flatten(frames))}`
    )
  }, 120_000)
})

// ---------------------------------------------------------------------------------------------
// Content-Length framing: header variants and lies

type HeaderShape =
  | { readonly kind: "proper"; readonly style: number; readonly leadingBlank: boolean }
  /** Says fewer bytes than the body has: the rest is junk before the next header. */
  | { readonly kind: "short"; readonly by: number }
  /** Says more: `by` filler bytes follow, and the body read is the message plus filler. */
  | { readonly kind: "long"; readonly by: number }
  /** No usable Content-Length: the block is rejected and the body is skipped with the next header. */
  | { readonly kind: "bad"; readonly header: string }

const headerShape: Arbitrary.Arbitrary<HeaderShape> = gen.oneof<HeaderShape>(
  {
    weight: 10,
    arbitrary: gen.record({
      kind: gen.constant("proper" as const),
      style: gen.integer({ min: 0, max: 4 }),
      leadingBlank: gen.boolean
    })
  },
  { weight: 1, arbitrary: Arbitrary.map(gen.integer({ min: 1, max: 50 }), (by) => ({ kind: "short" as const, by })) },
  { weight: 1, arbitrary: Arbitrary.map(gen.integer({ min: 1, max: 50 }), (by) => ({ kind: "long" as const, by })) },
  {
    weight: 1,
    arbitrary: Arbitrary.map(
      gen.constantFrom(
        "Content-Type: application/json",
        "Content-Length: -5",
        "Content-Length: abc",
        "Content-Length:",
        "X-Length: 12"
      ),
      (header) => ({ kind: "bad" as const, header })
    )
  }
)

const properHeader = (length: number, style: number): string =>
  [
    `Content-Length: ${length}\r\n\r\n`,
    `content-length:${length}\r\n\r\n`,
    `Content-Length: ${length}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n`,
    `Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: ${length}\r\n\r\n`,
    `Content-Length: ${length}\n\n`
  ][style]!

/** A body that may be mis-framed must not look like a header block itself. */
/**
 * A body whose framing may lie: one line, no header name in it, and not ending like the start of a
 * hyphenated header name (`X-`): glued before the next header, that is `X-Content-Length`, another
 * header by design, and the frame after it would be lost with it.
 */
const safeToMisframe = (body: Buffer) => {
  const text = body.toString("latin1")
  return (
    body.length > 0 && body.length < 4_000 && !body.includes("\n") && !/content-length/i.test(text) && !/[A-Za-z0-9]-$/.test(text)
  )
}

describe("fuzzing the wire: Content-Length framing", () => {
  let client: Client
  let backendPids: Array<number> = []
  const tally = newTally()
  const builder = new Builder()

  beforeAll(async () => {
    client = startFuzzGateway("content-length")
    const init = await client.initialize()
    expect(init.result?.serverInfo?.name).toBe("mcp-agentify")
    tally.roles.set(init.id!, "one")
    // initialize does not wait for the backends; a first request does.
    tally.roles.set((await client.request("tools/list")).id!, "one")
    backendPids = descendants(client.pid)
  })

  afterAll(async () => {
    if (client.running) await client.close()
  })

  it("random frames, header variants and lying lengths: one reply per framed id, pings still answered", async () => {
    const run = gen.asyncProperty(
      Arbitrary.array(gen.record({ frame: frameShape, header: headerShape, ping: gen.boolean }), { minLength: 1, maxLength: 15 }),
      Arbitrary.array(gen.fraction, { maxLength: 6 }),
      async (items, cuts) => {
        const pieces: Array<Buffer> = []
        const waitFor: Array<Id> = []
        const ping = () => {
          const id = builder.pingId()
          tally.pings.add(id)
          waitFor.push(id)
          pieces.push(client.frame({ jsonrpc: "2.0", id, method: "ping" }))
          tally.frames++
        }
        for (const item of items) {
          const body = builder.frame(item.frame)
          let header = item.header
          if (header.kind !== "proper" && !safeToMisframe(body)) header = { kind: "proper", style: 0, leadingBlank: false }
          let expected: Expected
          switch (header.kind) {
            case "proper":
              pieces.push(
                Buffer.from(`${header.leadingBlank ? "\r\n" : ""}${properHeader(body.length, header.style)}`, "latin1"),
                body
              )
              expected = expectBody(body, "content-length")
              break
            case "short": {
              const length = Math.max(1, body.length - header.by)
              pieces.push(Buffer.from(`Content-Length: ${length}\r\n\r\n`), body)
              expected = expectBody(body.subarray(0, length), "content-length")
              break
            }
            case "long":
              pieces.push(
                Buffer.from(`Content-Length: ${body.length + header.by}\r\n\r\n`),
                body,
                Buffer.from("x".repeat(header.by))
              )
              expected = expectBody(Buffer.concat([body, Buffer.from("x".repeat(header.by))]), "content-length")
              break
            case "bad":
              pieces.push(Buffer.from(`${header.header}\r\n\r\n`), body)
              expected = { ids: [], nullMin: 1, nullMax: 1 }
              break
          }
          // Whatever the frame held but was not framed as sent is never answered.
          const answered = new Set(expected.ids.map(([id]) => id))
          const lost = idsIn(body.toString("utf8")).filter((id) => !answered.has(id))
          record(tally, { ...expected, ids: [...expected.ids, ...lost.map((id): [Id, "none"] => [id, "none"])] })
          for (const [id, role] of expected.ids) if (role === "one") waitFor.push(id)
          tally.frames++
          // A ping right after a mis-framed frame is what absorbs its leftovers: always send one then.
          if (item.ping || header.kind !== "proper") ping()
        }
        ping()
        const bytes = Buffer.concat(pieces)
        tally.bytes += bytes.length
        await writeInPieces(client, bytes, cuts)
        await settle(client, tally, waitFor)
      }
    )
    await gen.assert(run, { runs: 150, ...replay })

    const { code, signal } = await client.close()
    expect({ code, signal }).toEqual({ code: 0, signal: null })
    const frames = contentLengthFrames(client.stdout())
    checkAll(client, tally, flatten(frames))
    await untilGone(backendPids)
    console.log(
      `fuzz (Content-Length): ${tally.frames} frames (${(tally.bytes / 1024 / 1024).toFixed(1)} MiB) sent, ${tally.roles.size} fuzzed ids, ` +
        `${frames.length} frames back; replies by code: ${histogram(flatten(frames))}`
    )
  }, 120_000)
})
