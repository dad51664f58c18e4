/**
 * A semantic ranking of the tools, beside the lexical one (`embeddings: {model, baseUrl?, apiKey?}`):
 * the tools' and the request's vectors from an OpenAI-compatible `/v1/embeddings`, the tools ranked
 * by cosine similarity, and that list fused with the task ranking's others (see catalog/TaskRank).
 *
 * A tool's vector is kept by the hash of what it is embedded from (its name, description and
 * schema): in memory, and in the state directory's `embeddings/` (one file per model and
 * endpoint), so a restart or a list change embeds only the tools that are new or changed, in
 * batches. What is kept is bounded: the vectors of the tools listed now and of at most
 * `MAX_UNLISTED_VECTORS` others (the newest), as pins are (see backend/Pins).
 *
 * It never fails a request, and never holds one beyond its deadline: a request waits for the
 * vectors at most `timeoutMs` in all (else it ranks lexically), and the tools are embedded by one
 * fill at a time, shared by every request, which goes on without them. An endpoint that fails, hangs
 * or answers nonsense (too big, vectors of the wrong length, not finite or all zero, an index out of
 * range) leaves the lexical ranking alone, its answer not kept; it is then not asked for a while (a
 * circuit, see Circuit), and said once in the log per kind of failure. What is sent goes to
 * `baseUrl`'s origin only (see BoundedPost), and a key only where the configuration says (see
 * `keyFor`).
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Option, Redacted } from "effect"
import type { CatalogEntry } from "../ToolCatalog.js"
import type { ResolvedConfig } from "../../config/Config.js"
import { nobody, type Told } from "../../store/WrittenFiles.js"
import { field, objectField } from "../../json/Json.js"
import { EndpointFailed, postJson } from "./BoundedPost.js"
import * as RegularFile from "../../config/RegularFile.js"
import * as Circuit from "./Circuit.js"

export interface Settings {
  readonly model: string
  /** The endpoint's base (`.../v1`). */
  readonly baseUrl: string
  readonly apiKey: string | undefined
  /** Where vectors are kept across runs (the state directory); none: memory only. */
  readonly stateDir: string | undefined
  /** How long a request waits for its vectors in all, and one request to the endpoint may take. */
  readonly timeoutMs: number
  /** Who hears of the vectors' file written (a team's mirror: see store/WrittenFiles); none: nobody. */
  readonly told?: Told | undefined
}

/** Texts embedded per request to the endpoint. */
const BATCH = 64
/** What a tool is embedded from, at most (a description of pages says its purpose first). */
const TEXT_CHARS = 1_000
/** Vectors kept of tools not listed now (the newest): a server that renames its tools does not grow the cache. */
export const MAX_UNLISTED_VECTORS = 200
/** The longest vector taken: OpenAI's largest model has 3,072 dimensions, the largest open ones 4,096. */
export const MAX_DIMENSION = 4_096
/**
 * The largest file of vectors read (a larger one is ignored, said once, and written anew): 2,000
 * tools of the longest vectors, at 32 bytes a number.
 */
export const MAX_VECTORS_FILE_BYTES = 256 * 1024 * 1024
/**
 * The largest answer read for `count` texts: each vector at the longest, a number in JSON taking at
 * most 32 bytes (`-0.012345678901234567,` and some indentation), and 64 KiB for the rest. 8.5 MB
 * for a batch of 64, 197 KB for a request's one vector.
 */
export const answerLimit = (count: number): number => 65_536 + count * (MAX_DIMENSION * 32 + 256)

export interface Embedder {
  /** The `k` tools most like `query`, best first; none when the endpoint cannot say in time. Never fails. */
  readonly rank: (entries: ReadonlyArray<CatalogEntry>, query: string, k: number) => Effect.Effect<ReadonlyArray<CatalogEntry>>
  /** Computes the vectors of the tools listed now that have none yet; never fails. */
  readonly warm: (entries: ReadonlyArray<CatalogEntry>) => Effect.Effect<void>
  /** How many tool texts were sent to the endpoint so far (the cache's measure). */
  readonly embedded: () => number
  /** How many tool vectors are kept now (in memory; the file holds the same). */
  readonly kept: () => number
}

const sha = (text: string) => createHash("sha256").update(text).digest("hex")

/** What a tool is embedded from. */
export const textOf = (entry: CatalogEntry): string =>
  `${entry.baseName.replace(/[_-]+/g, " ")}: ${entry.tool.description ?? ""}`.slice(0, TEXT_CHARS)

// Per entry object (kept until its backend lists again): a request does not hash every tool anew.
const keys = new WeakMap<CatalogEntry, string>()
const keyOf = (entry: CatalogEntry): string => {
  let key = keys.get(entry)
  if (key === undefined) keys.set(entry, (key = sha(JSON.stringify([textOf(entry), entry.tool.inputSchema ?? null]))))
  return key
}

/** Why a vector is not one to rank with, or undefined: `dimension` is the model's (its first vector's). */
const flawOf = (value: unknown, dimension: number | undefined): string | undefined => {
  if (!Array.isArray(value) || value.length === 0) return "answered no vector per input"
  if (value.length > MAX_DIMENSION) return `answered vectors longer than ${MAX_DIMENSION}`
  if (dimension !== undefined && value.length !== dimension)
    return `answered vectors of ${value.length} dimensions, not the model's ${dimension}`
  let zero = true
  for (const x of value) {
    if (typeof x !== "number" || !Number.isFinite(x)) return "answered a vector that is not finite numbers"
    if (x !== 0) zero = false
  }
  return zero ? "answered a vector of zeros" : undefined
}

/** Cosine similarity of two vectors of one length, neither all zero (see flawOf). */
const cosine = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): number => {
  let dot = 0
  let na = 0
  let nb = 0
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!
    const y = b[i]!
    dot += x * y
    na += x * x
    nb += y * y
  }
  return dot / Math.sqrt(na * nb)
}

/** Said when a request goes without asking: the circuit is open. */
const RESTING = "failed lately and is not asked for a while"

/** The vectors kept of a model: in memory, in the order they came (the newest last), and in the state directory's file. */
const storeOf = (settings: Settings) => {
  const vectors = new Map<string, ReadonlyArray<number>>()
  const store = {
    vectors,
    /** The model's: its first vector's. */
    dimension: undefined as number | undefined,
    take: (key: string, vector: ReadonlyArray<number>) => {
      if (vectors.has(key)) vectors.delete(key)
      vectors.set(key, vector)
    },
    load: () => {},
    /** The vectors of the tools in `listed`, and the newest `MAX_UNLISTED_VECTORS` of the others. */
    prune: (listed: (key: string) => boolean): boolean => {
      const unlisted = [...vectors.keys()].filter((key) => !listed(key))
      const dropped = unlisted.slice(0, Math.max(0, unlisted.length - MAX_UNLISTED_VECTORS))
      for (const key of dropped) vectors.delete(key)
      return dropped.length > 0
    },
    save: (): Promise<void> => Promise.resolve()
  }
  if (settings.stateDir === undefined) return store
  const file = path.join(
    settings.stateDir,
    "embeddings",
    `${sha(`${settings.model}\u0000${settings.baseUrl}`).slice(0, 16)}.json`
  )
  /** The file's time when it was last read: a newer one (another gateway's, through the store) is read again. */
  let loadedAt: number | undefined
  store.load = () => {
    let at: number
    try {
      // The link itself, not what it names: a link is refused when read, as any state file that is not a regular file.
      at = fs.lstatSync(file).mtimeMs
    } catch {
      return
    }
    if (at === loadedAt) return
    loadedAt = at
    const text = RegularFile.readStateText(file, MAX_VECTORS_FILE_BYTES)
    if (text === undefined) return
    try {
      const stored: unknown = JSON.parse(text)
      for (const [key, vector] of Object.entries(objectField(stored, "vectors") ?? {})) {
        // A file is trusted no more than the endpoint: another gateway's, or an older model's.
        if (vectors.has(key) || flawOf(vector, store.dimension) !== undefined) continue
        store.dimension ??= (vector as ReadonlyArray<number>).length
        store.take(key, vector as ReadonlyArray<number>)
      }
    } catch {
      // none yet, or unreadable: embedded afresh
    }
  }
  // Written whole once per fill, asynchronously but for the text itself.
  store.save = async () => {
    try {
      await fs.promises.mkdir(path.dirname(file), { recursive: true, mode: 0o700 })
      const temporary = `${file}.${process.pid}.tmp`
      const text = JSON.stringify({ model: settings.model, vectors: Object.fromEntries(vectors) })
      await fs.promises.writeFile(temporary, text, { mode: 0o600 })
      await fs.promises.rename(temporary, file)
      loadedAt = (await fs.promises.stat(file)).mtimeMs
      // A team's gateways share them through their store (see gateway/SharedFiles).
      ;(settings.told ?? nobody)("embeddings", path.basename(file, ".json"))
    } catch {
      // a cache that cannot be written is only slower
    }
  }
  return store
}

/** The answer's vectors by their `index`: one per input, each once, each of `dimension` (else the first's), finite, not all zero. */
const vectorsIn = (body: unknown, count: number, dimension: number | undefined): Array<ReadonlyArray<number>> => {
  const data = field(body, "data")
  if (!Array.isArray(data) || data.length !== count) throw new EndpointFailed({ kind: "answered no vector per input" })
  const out: Array<ReadonlyArray<number> | undefined> = new Array(count).fill(undefined)
  let length = dimension
  data.forEach((item: unknown, i) => {
    const index = field(item, "index") ?? i
    if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= count || out[index] !== undefined)
      throw new EndpointFailed({ kind: "answered an index out of range, or one twice" })
    const embedding = field(item, "embedding")
    const flaw = flawOf(embedding, length)
    if (flaw !== undefined) throw new EndpointFailed({ kind: flaw })
    length ??= (embedding as ReadonlyArray<number>).length
    out[index] = embedding as ReadonlyArray<number>
  })
  return out as Array<ReadonlyArray<number>>
}

export const make = (settings: Settings): Embedder => {
  const store = storeOf(settings)
  const { vectors, take, load, save } = store
  const url = `${settings.baseUrl.replace(/\/+$/, "")}/embeddings`
  const circuit = Circuit.make()
  let sent = 0
  const said = new Set<string>()
  /** The tools listed now: the last list warmed, and the last request's. */
  let listed: ReadonlySet<string> = new Set()
  let asked: ReadonlySet<string> = new Set()
  const prune = () => store.prune((key) => listed.has(key) || asked.has(key))

  /** The endpoint's vectors for `inputs`, in order, each checked; through the circuit. */
  const embed = async (inputs: ReadonlyArray<string>, signal: AbortSignal): Promise<Array<ReadonlyArray<number>>> => {
    if (!circuit.admit()) throw new EndpointFailed({ kind: RESTING })
    try {
      const body = await postJson(
        url,
        { model: settings.model, input: inputs },
        {
          headers: settings.apiKey === undefined ? {} : { authorization: `Bearer ${settings.apiKey}` },
          maxBytes: answerLimit(inputs.length),
          signal: AbortSignal.any([signal, AbortSignal.timeout(settings.timeoutMs)])
        }
      )
      const out = vectorsIn(body, inputs.length, store.dimension)
      store.dimension ??= out[0]?.length
      circuit.succeeded()
      return out
    } catch (error) {
      circuit.failed()
      throw error
    }
  }

  /** Tools waiting for a vector, by key; the fill running now, if any. */
  const pending = new Map<string, CatalogEntry>()
  let filling: Promise<void> | undefined

  /** Embeds what is pending, in batches, until nothing is; what it added is then written once. */
  const runFill = async () => {
    let added = false
    try {
      while (pending.size > 0) {
        const batch = [...pending].slice(0, BATCH)
        const got = await embed(
          batch.map(([, e]) => textOf(e)),
          new AbortController().signal
        )
        sent += batch.length
        batch.forEach(([key], j) => {
          take(key, got[j]!)
          pending.delete(key)
        })
        added = true
      }
    } finally {
      pending.clear()
      if (prune() || added) await save()
    }
  }

  /**
   * The tools of `entries` without a vector, embedded by the one fill (started, or joined): no tool
   * is embedded twice, and no request waits for another's turn.
   */
  const fill = (entries: ReadonlyArray<CatalogEntry>): Promise<void> => {
    load()
    for (const entry of entries) {
      const key = keyOf(entry)
      if (!vectors.has(key)) pending.set(key, entry)
    }
    // Joined: what it did not take (added while it was writing) is embedded after it.
    if (filling !== undefined) return filling.then(() => fill(entries))
    if (pending.size === 0) return prune() ? save() : Promise.resolve()
    const run = runFill().finally(() => {
      filling = undefined
    })
    // Heard even when every request waiting for it gave up.
    run.catch(() => undefined)
    filling = run
    return run
  }

  /** Says a failure once per kind; the request goes on without the semantic ranking. */
  const quietly =
    <A>(fallback: A) =>
    <E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, never, R> =>
      Effect.catch(effect, (error) => {
        const kind = error instanceof EndpointFailed ? error.kind : "failed"
        if (said.has(kind)) return Effect.succeed(fallback)
        said.add(kind)
        return Effect.as(
          Effect.logWarning(`embeddings: the endpoint of ${settings.model} ${kind}: the lexical ranking alone is used`),
          fallback
        )
      })

  const rankNow = async (
    entries: ReadonlyArray<CatalogEntry>,
    query: string,
    k: number,
    signal: AbortSignal
  ): Promise<ReadonlyArray<CatalogEntry>> => {
    asked = new Set(entries.map(keyOf))
    const resting = circuit.state() !== "closed"
    const filled = fill(entries)
    // An endpoint that failed lately is tried by the fill alone (the circuit's one trial).
    if (resting) {
      filled.catch(() => undefined)
      throw new EndpointFailed({ kind: RESTING })
    }
    await filled
    const [wanted] = await embed([query], signal)
    return entries
      .flatMap((entry, i) => {
        const vector = vectors.get(keyOf(entry))
        const score = vector === undefined || wanted === undefined ? 0 : cosine(wanted, vector)
        // A tool nothing like the request is not promoted by it.
        return score > 0 ? [{ entry, i, score }] : []
      })
      .sort((a, b) => b.score - a.score || a.i - b.i)
      .slice(0, k)
      .map((s) => s.entry)
  }

  return {
    rank: (entries, query, k) =>
      Effect.tryPromise({ try: (signal) => rankNow(entries, query, k, signal), catch: (error) => error }).pipe(
        // One deadline for the request's whole semantic part: the fill it waits for and its own vector.
        Effect.timeoutOrElse({
          duration: settings.timeoutMs,
          orElse: () => Effect.fail(new EndpointFailed({ kind: "timed out" }))
        }),
        quietly<ReadonlyArray<CatalogEntry>>([]),
        Effect.withSpan("Embeddings.rank")
      ),
    warm: (entries) =>
      Effect.tryPromise({
        try: () => {
          listed = new Set(entries.map(keyOf))
          return fill(entries)
        },
        catch: (error) => error
      }).pipe(quietly<void>(undefined), Effect.withSpan("Embeddings.warm")),
    embedded: () => sent,
    kept: () => vectors.size
  }
}

/** How long the endpoint may take for a request's vectors before the lexical ranking goes alone. */
const TIMEOUT_MS = 10_000

/** The OpenAI API's, where the model is asked when `openaiBaseUrl` is not set. */
const OPENAI_BASE_URL = "https://api.openai.com/v1"

const originOf = (url: string): string => {
  try {
    return new URL(url).origin
  } catch {
    return url
  }
}

/** Where the vectors come from, and with which key: the configuration's `embeddings`, or none. */
export interface Endpoint {
  readonly model: string
  readonly baseUrl: string
  readonly apiKey: string | undefined
  /** Whose key is sent: `embeddings.apiKey`'s, the model's (the same origin as its endpoint), or none. */
  readonly key: "embeddings.apiKey" | "the model's" | "none"
}

/**
 * The `embeddings` endpoint of `config`. A key goes only where the configuration says: its own
 * `apiKey`, else the model's key when `baseUrl` is on the model endpoint's origin (`openaiBaseUrl`,
 * or OpenAI's); an endpoint elsewhere gets no key.
 */
export const endpointOf = (config: ResolvedConfig): Endpoint | undefined => {
  if (config.embeddings === undefined) return undefined
  const modelBase = Option.getOrElse(config.openaiBaseUrl, () => OPENAI_BASE_URL)
  const baseUrl = config.embeddings.baseUrl ?? modelBase
  const own = config.embeddings.apiKey
  const modelKey = Option.getOrUndefined(Option.map(config.openaiApiKey, Redacted.value))
  if (own !== undefined) return { model: config.embeddings.model, baseUrl, apiKey: Redacted.value(own), key: "embeddings.apiKey" }
  if (modelKey !== undefined && originOf(baseUrl) === originOf(modelBase))
    return { model: config.embeddings.model, baseUrl, apiKey: modelKey, key: "the model's" }
  return { model: config.embeddings.model, baseUrl, apiKey: undefined, key: "none" }
}

/** The `embeddings` setting as the debug UI and the start-up log show it: model, origin, whose key (never the key). */
export const summaryOf = (
  config: ResolvedConfig
): { readonly model: string; readonly origin: string; readonly key: Endpoint["key"] } | undefined => {
  const endpoint = endpointOf(config)
  return endpoint === undefined ? undefined : { model: endpoint.model, origin: originOf(endpoint.baseUrl), key: endpoint.key }
}

/** The `embeddings` setting in words, as `check` prints it. */
export const describe = (config: ResolvedConfig): string => {
  const summary = summaryOf(config)
  if (summary === undefined) return "off (the lexical ranking alone)"
  const key =
    summary.key !== "none"
      ? `key: ${summary.key}`
      : config.openaiApiKeySource === "none"
        ? "no key"
        : "no key (not the model's origin: set embeddings.apiKey to send one)"
  return `${summary.model} at ${summary.origin}, ${key}`
}

/**
 * The embedder of a configuration's `embeddings` (none without them), made again when they change:
 * its vectors are kept while the model, endpoint, key and state directory stay.
 */
export const forConfig = (told: Told = nobody): ((config: ResolvedConfig) => Embedder | undefined) => {
  let current: { readonly key: string; readonly embedder: Embedder } | undefined
  return (config) => {
    const endpoint = endpointOf(config)
    if (endpoint === undefined) return undefined
    const settings: Settings = {
      model: endpoint.model,
      baseUrl: endpoint.baseUrl,
      apiKey: endpoint.apiKey,
      stateDir: config.stateDir,
      timeoutMs: Math.min(config.requestTimeoutMs, TIMEOUT_MS),
      told
    }
    const key = JSON.stringify([settings.model, settings.baseUrl, settings.stateDir, sha(settings.apiKey ?? "")])
    if (current?.key !== key) current = { key, embedder: make(settings) }
    return current.embedder
  }
}

/**
 * Two gateways' vectors of one model made one (see store/Mirror): this one's, and the newest
 * `MAX_UNLISTED_VECTORS` of the store's others (a team's file stays bounded as each gateway's is).
 */
export const merge = (local: string, shared: string): string => {
  try {
    const ours: unknown = JSON.parse(local)
    const mine = objectField(ours, "vectors") ?? {}
    const theirs: unknown = JSON.parse(shared)
    const others = Object.entries(objectField(theirs, "vectors") ?? {}).filter(([key]) => !Object.hasOwn(mine, key))
    return JSON.stringify({
      model: field(theirs, "model") ?? field(ours, "model"),
      vectors: { ...Object.fromEntries(others.slice(-MAX_UNLISTED_VECTORS)), ...mine }
    })
  } catch {
    return shared
  }
}
