/**
 * A semantic ranking of the tools, beside the lexical one (`embeddings: {model, baseUrl?}`): the
 * tools' and the request's vectors from an OpenAI-compatible `/v1/embeddings`, the tools ranked by
 * cosine similarity, and that list fused with the task ranking's others (see catalog/TaskRank).
 *
 * A tool's vector is kept by the hash of what it is embedded from (its name, description and
 * schema): in memory, and in the state directory's `embeddings/` (one file per model and
 * endpoint), so a restart or a list change embeds only the tools that are new or changed, in
 * batches. The endpoint is asked with the model's key, bounded in time. It never fails a request:
 * an endpoint that fails, is slow or answers nonsense leaves the lexical ranking alone (said once
 * in the log per kind of failure, the key never in it).
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Option, Redacted } from "effect"
import type { CatalogEntry } from "../catalog/ToolCatalog.js"
import type { ResolvedConfig } from "../config/Config.js"
import { nobody, type Told } from "../store/WrittenFiles.js"
import { field, objectField } from "../values/Json.js"

export interface Settings {
  readonly model: string
  /** The endpoint's base (`.../v1`). */
  readonly baseUrl: string
  readonly apiKey: string | undefined
  /** Where vectors are kept across runs (the state directory); none: memory only. */
  readonly stateDir: string | undefined
  readonly timeoutMs: number
  /** Who hears of the vectors' file written (a team's mirror: see store/WrittenFiles); none: nobody. */
  readonly told?: Told | undefined
}

/** Texts embedded per request to the endpoint. */
const BATCH = 64
/** What a tool is embedded from, at most (a description of pages says its purpose first). */
const TEXT_CHARS = 1_000

export interface Embedder {
  /** The `k` tools most like `query`, best first; none when the endpoint cannot say. Never fails. */
  readonly rank: (entries: ReadonlyArray<CatalogEntry>, query: string, k: number) => Effect.Effect<ReadonlyArray<CatalogEntry>>
  /** Computes the vectors of the tools that have none yet (as lists change); never fails. */
  readonly warm: (entries: ReadonlyArray<CatalogEntry>) => Effect.Effect<void>
  /** How many tool texts were sent to the endpoint so far (the cache's measure). */
  readonly embedded: () => number
}

/** A vector as an embeddings endpoint gives it. */
const isVector = (value: unknown): value is ReadonlyArray<number> =>
  Array.isArray(value) && value.every((x) => typeof x === "number")

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

const cosine = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): number => {
  let dot = 0
  let na = 0
  let nb = 0
  for (let i = 0; i < a.length && i < b.length; i++) {
    const x = a[i] ?? 0
    const y = b[i] ?? 0
    dot += x * y
    na += x * x
    nb += y * y
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb)
}

class EmbeddingFailed extends Error {
  constructor(readonly kind: string) {
    super(kind)
  }
}

export const make = (settings: Settings): Embedder => {
  const vectors = new Map<string, ReadonlyArray<number>>()
  const file =
    settings.stateDir === undefined
      ? undefined
      : path.join(settings.stateDir, "embeddings", `${sha(`${settings.model}\u0000${settings.baseUrl}`).slice(0, 16)}.json`)
  /** The file's time when it was last read: a newer one (another gateway's, through the store) is read again. */
  let loadedAt: number | undefined
  let sent = 0
  const said = new Set<string>()

  const load = () => {
    if (file === undefined) return
    let at: number
    try {
      at = fs.statSync(file).mtimeMs
    } catch {
      return
    }
    if (at === loadedAt) return
    loadedAt = at
    try {
      const stored: unknown = JSON.parse(fs.readFileSync(file, "utf8"))
      for (const [key, vector] of Object.entries(objectField(stored, "vectors") ?? {})) {
        if (isVector(vector)) vectors.set(key, vector)
      }
    } catch {
      // none yet, or unreadable: embedded afresh
    }
  }
  const save = () => {
    if (file === undefined) return
    try {
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
      const temporary = `${file}.${process.pid}.tmp`
      fs.writeFileSync(temporary, JSON.stringify({ model: settings.model, vectors: Object.fromEntries(vectors) }), {
        mode: 0o600
      })
      fs.renameSync(temporary, file)
      loadedAt = fs.statSync(file).mtimeMs
      // A team's gateways share them through their store (see gateway/SharedFiles).
      ;(settings.told ?? nobody)("embeddings", path.basename(file, ".json"))
    } catch {
      // a cache that cannot be written is only slower
    }
  }

  /** The endpoint's vectors for `inputs`, in order. */
  const embed = async (inputs: ReadonlyArray<string>): Promise<Array<ReadonlyArray<number>>> => {
    let response: Response
    try {
      response = await fetch(`${settings.baseUrl.replace(/\/+$/, "")}/embeddings`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(settings.apiKey === undefined ? {} : { authorization: `Bearer ${settings.apiKey}` })
        },
        body: JSON.stringify({ model: settings.model, input: inputs }),
        signal: AbortSignal.timeout(settings.timeoutMs)
      })
    } catch (error) {
      throw new EmbeddingFailed(error instanceof Error && error.name === "TimeoutError" ? "timed out" : "unreachable")
    }
    if (!response.ok) throw new EmbeddingFailed(`HTTP ${response.status}`)
    const body: unknown = await response.json().catch(() => undefined)
    const data = field(body, "data")
    if (!Array.isArray(data) || data.length !== inputs.length) throw new EmbeddingFailed("an answer without a vector per input")
    const out: Array<ReadonlyArray<number>> = new Array(inputs.length)
    data.forEach((item: unknown, i) => {
      const index = field(item, "index")
      const embedding = field(item, "embedding")
      if (!isVector(embedding)) throw new EmbeddingFailed("an answer without a vector per input")
      out[typeof index === "number" ? index : i] = embedding
    })
    return out
  }

  /** Embeds the tools that have no vector yet, in batches; one at a time, so no tool is embedded twice. */
  let embedding: Promise<void> = Promise.resolve()
  const fill = (entries: ReadonlyArray<CatalogEntry>): Promise<void> => {
    const run = embedding.then(async () => {
      load()
      const missing = [...new Map(entries.map((e) => [keyOf(e), e])).entries()].filter(([key]) => !vectors.has(key))
      for (let i = 0; i < missing.length; i += BATCH) {
        const batch = missing.slice(i, i + BATCH)
        const got = await embed(batch.map(([, e]) => textOf(e)))
        sent += batch.length
        batch.forEach(([key], j) => vectors.set(key, got[j] ?? []))
      }
      if (missing.length > 0) save()
    })
    embedding = run.catch(() => undefined)
    return run
  }

  /** Says a failure once per kind; the request goes on without the semantic ranking. */
  const quietly =
    <A>(fallback: A) =>
    <E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, never, R> =>
      Effect.catchAll(effect, (error) => {
        const kind = error instanceof EmbeddingFailed ? error.kind : "failed"
        if (said.has(kind)) return Effect.succeed(fallback)
        said.add(kind)
        return Effect.as(
          Effect.logWarning(`embeddings: the endpoint's ${settings.model} ${kind}: the lexical ranking alone is used`),
          fallback
        )
      })

  const rankNow = async (
    entries: ReadonlyArray<CatalogEntry>,
    query: string,
    k: number
  ): Promise<ReadonlyArray<CatalogEntry>> => {
    await fill(entries)
    const [wanted = []] = await embed([query])
    return entries
      .map((entry, i) => ({ entry, i, score: cosine(wanted, vectors.get(keyOf(entry)) ?? []) }))
      .sort((a, b) => b.score - a.score || a.i - b.i)
      .slice(0, k)
      .map((s) => s.entry)
  }

  return {
    rank: (entries, query, k) =>
      Effect.tryPromise({ try: () => rankNow(entries, query, k), catch: (error) => error }).pipe(
        quietly<ReadonlyArray<CatalogEntry>>([]),
        Effect.withSpan("Embeddings.rank")
      ),
    warm: (entries) =>
      Effect.tryPromise({ try: () => fill(entries), catch: (error) => error }).pipe(
        quietly<void>(undefined),
        Effect.withSpan("Embeddings.warm")
      ),
    embedded: () => sent
  }
}

/** How long the endpoint may take for a request's vectors before the lexical ranking goes alone. */
const TIMEOUT_MS = 10_000

/**
 * The embedder of a configuration's `embeddings` (none without them), made again when they change:
 * its vectors are kept while the model, endpoint and state directory stay.
 */
export const forConfig = (told: Told = nobody): ((config: ResolvedConfig) => Embedder | undefined) => {
  let current: { readonly key: string; readonly embedder: Embedder } | undefined
  return (config) => {
    if (config.embeddings === undefined) return undefined
    const settings: Settings = {
      model: config.embeddings.model,
      baseUrl: config.embeddings.baseUrl ?? Option.getOrElse(config.openaiBaseUrl, () => "https://api.openai.com/v1"),
      apiKey: Option.getOrUndefined(Option.map(config.openaiApiKey, Redacted.value)),
      stateDir: config.stateDir,
      timeoutMs: Math.min(config.requestTimeoutMs, TIMEOUT_MS),
      told
    }
    const key = JSON.stringify([settings.model, settings.baseUrl, settings.stateDir])
    if (current?.key !== key) current = { key, embedder: make(settings) }
    return current.embedder
  }
}

/** Two gateways' vectors of one model made one (see store/Mirror): every tool's, the store's where both have one. */
export const merge = (local: string, shared: string): string => {
  try {
    const mine: unknown = JSON.parse(local)
    const theirs: unknown = JSON.parse(shared)
    return JSON.stringify({
      model: field(theirs, "model") ?? field(mine, "model"),
      vectors: { ...objectField(mine, "vectors"), ...objectField(theirs, "vectors") }
    })
  } catch {
    return shared
  }
}
