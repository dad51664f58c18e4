/**
 * Ranking: which tools to offer the model first when there are more than `maxToolsPerRequest`.
 * Longer than most modules: the vocabulary, the analysis and the index are one scoring policy.
 *
 * Ranking is hand-written rather than built on minisearch or @orama/orama. What decides its quality
 * is not the index but the words: users say "folder", "ls", "save", "rename", "remember" where
 * tools say directory, list, write, move, entities; a library still needs that vocabulary, name
 * splitting, the split of a tool into fields (name, first sentence, parameters, backend) and the
 * query-side hints (paths, globs, URLs, the IDE context) written around it. What a library adds on
 * top, fuzzy and prefix matching, hurts on a corpus this small and terse ("list"~"lint",
 * "file"~"fill"), and its index would be one more dependency for a few hundred short documents that
 * an inverted index of Maps scores in a fraction of a millisecond. So: BM25F over a few fields with
 * a soft document frequency, a light suffix stemmer, a vocabulary mapping synonyms, phrases and
 * idioms to shared concept terms (applied to tools and query alike), hints from the query's shape
 * and the IDE context, and multiplicative priors: coordination (how much of the query a tool
 * matches), name coverage, deprecated and deleting tools last unless asked for, a tool named
 * outright first. test/eval/routing.ts measures it. Deterministic: ties keep the input order.
 */
import type { Tool } from "../protocol/Mcp.js"
import { type CatalogEntry, SEPARATOR } from "./Naming.js"
import { analyze, analyzeQuery, CONCEPT_PREFIX, IDENTIFIER_TOKENS, type RankContext, splitWords, STOP_WORDS } from "./Analysis.js"
import { isObject } from "../json/Json.js"

export { MAX_RANKED_QUERY_CHARS, type RankContext } from "./Analysis.js"

// ---------------------------------------------------------------------------------------------
// Ranking: the index
// ---------------------------------------------------------------------------------------------

/**
 * BM25F fields. The name carries the intent ("read_text_file"); the first sentence of a description
 * says the same in prose; the rest is caveats ("Only works within allowed directories") that
 * should weigh little; the backend id helps only to pick between backends ("on github").
 */
const FIELDS = [
  { weight: 3, b: 0.3 }, // name
  { weight: 1.5, b: 0.5 }, // first sentence
  { weight: 0.8, b: 0.5 }, // parameter names
  { weight: 0.4, b: 0.75 }, // rest of the description, parameter descriptions and enums
  { weight: 0.6, b: 0 } // backend id
] as const
const K1 = 1.2
/**
 * Document frequency is soft: a tool counts fully towards a term's frequency only when the term is
 * in its name or first sentence. Otherwise boilerplate ("Only works within allowed directories")
 * and weak synonyms ("get" for read) make the concepts people actually ask for look common.
 */
const DF_REFERENCE_WEIGHT = 1.5
/** How much a tool gains when the query accounts for all the words of its name. */
const NAME_COVERAGE_BOOST = 0.6
const DEPRECATED_FACTOR = 0.7
/** A tool matching none but one of several aspects of the query keeps this share of its score. */
const COORDINATION_FLOOR = 0.3
/** A tool that deletes should not be the first pick for "link Bob to Acme" just because it matches as well. */
const DESTRUCTIVE_FACTOR = 0.75
/** Words in tool names that name no action or object. */
const GENERIC_NAME_WORDS = new Set(["get", "do", "run", "tool", "mcp", "execute", "perform", "simple"])

interface Document {
  /** Its distinct terms; `counts[t * FIELDS.length + f]` is term t's weighted count in field f. */
  readonly terms: ReadonlyArray<string>
  readonly counts: Float64Array
  /** Term t's field-weighted count, for the soft document frequency. */
  readonly presence: Float64Array
  readonly lengths: ReadonlyArray<number>
  /** Per meaningful word of the tool's name: the terms it stands for. */
  readonly nameSlots: ReadonlyArray<ReadonlyMap<string, number>>
  readonly deprecated: boolean
  /** Its name says it deletes: offered only when deleting is asked for. */
  readonly destructive: boolean
  /** Multi-word identifiers ("read_text_file") the user may type to name the tool outright. */
  readonly mentions: ReadonlyArray<string>
}

interface DocumentSource {
  readonly backendId: string | undefined
  readonly toolName: string
  readonly description: string
  readonly inputSchema: unknown
  /** A summary's texts (what its server says it is about, then each of its tools), instead of a description's sentences. */
  readonly parts?: ReadonlyArray<string> | undefined
}

/**
 * How often a word said again in a field counts: once in the name, the first sentence and the
 * parameter names (saying a word again says nothing more about what a tool does, and BM25's K1
 * saturates only relative to other tools, so "file file file read read write ..." would still win),
 * at most REST_REPEATS times in the rest of the description and the parameters' descriptions, where
 * a word several parameters speak of is evidence. Every word still counts in the field's length
 * (BM25's b): stuffing a field makes each of its words weigh less.
 */
const REST_REPEATS = 3

/** A field's terms, each counted at most `repeats` times its strongest weight. */
const termCounts = (text: string, identifier = false, repeats = 2): { terms: Map<string, number>; length: number } => {
  const terms = new Map<string, number>()
  const strongest = new Map<string, number>()
  const length = analyze(
    text,
    (term, weight) => {
      strongest.set(term, Math.max(strongest.get(term) ?? 0, weight))
      terms.set(term, Math.min((terms.get(term) ?? 0) + weight, repeats * (strongest.get(term) ?? 0)))
    },
    1,
    identifier
  )
  return { terms, length }
}

/** Terms of several texts (a server's tools), each counted once per text: how many of them say it. */
const partCounts = (parts: ReadonlyArray<string>): { terms: Map<string, number>; length: number } => {
  const terms = new Map<string, number>()
  let length = 0
  for (const part of parts) {
    const one = termCounts(part)
    length += one.length
    for (const [term, weight] of one.terms) terms.set(term, (terms.get(term) ?? 0) + weight)
  }
  return { terms, length }
}

/** Property names and descriptions of a schema, nested objects and array items included, bounded. */
const schemaText = (schema: unknown): { names: Array<string>; prose: Array<string> } => {
  const names: Array<string> = []
  const prose: Array<string> = []
  const visit = (node: unknown, depth: number) => {
    if (!isObject(node) || depth > 3 || names.length > 64) return
    if (isObject(node.properties)) {
      for (const [key, child] of Object.entries(node.properties)) {
        names.push(key)
        if (isObject(child)) {
          if (typeof child.description === "string") prose.push(child.description)
          if (Array.isArray(child.enum)) prose.push(child.enum.filter((e) => typeof e === "string").join(" "))
        }
        visit(child, depth + 1)
      }
    }
    if (isObject(node.items)) visit(node.items, depth + 1)
  }
  visit(schema, 0)
  return { names, prose }
}

const analyzeDocument = (source: DocumentSource): Document => {
  const description = source.description.trim()
  const firstSentence = /^[\s\S]*?[.!?](?=\s|$)/.exec(description)?.[0] ?? description
  const rest = description.slice(firstSentence.length)
  const schema = schemaText(source.inputSchema)
  // In the order of FIELDS. A summary's parts (its server's tools) each count once.
  const parts = [
    termCounts(source.toolName, true),
    termCounts(source.parts === undefined ? firstSentence : (source.parts[0] ?? "")),
    termCounts(schema.names.join(" "), true),
    source.parts === undefined
      ? termCounts(`${rest} ${schema.prose.join(" ")}`, false, REST_REPEATS)
      : partCounts(source.parts.slice(1)),
    termCounts(source.backendId ?? "", true)
  ]
  const backendWords = new Set(splitWords(source.backendId ?? "", true))
  const nameSlots = splitWords(source.toolName, true)
    .filter((w) => !GENERIC_NAME_WORDS.has(w) && !backendWords.has(w) && !STOP_WORDS.has(w) && w.length > 1)
    .map((word) => {
      const slot = new Map<string, number>()
      analyze(word, (term, weight) => slot.set(term, Math.max(slot.get(term) ?? 0, weight)), 1, true)
      return slot
    })
    .filter((slot) => slot.size > 0)
  const identifiers = [source.toolName, source.backendId ? `${source.backendId}${SEPARATOR}${source.toolName}` : ""]
  // Flattened once here so that indexing a list (per list, not per tool) allocates almost nothing.
  const termIds = new Map<string, number>()
  parts.forEach((part) => part.terms.forEach((_, term) => termIds.has(term) || termIds.set(term, termIds.size)))
  const counts = new Float64Array(termIds.size * FIELDS.length)
  const presence = new Float64Array(termIds.size)
  parts.forEach((part, f) =>
    part.terms.forEach((count, term) => {
      const t = termIds.get(term) ?? 0
      counts[t * FIELDS.length + f] = count
      presence[t] = (presence[t] ?? 0) + (FIELDS[f]?.weight ?? 0) * count
    })
  )
  return {
    terms: [...termIds.keys()],
    counts,
    presence,
    lengths: parts.map((p) => p.length),
    nameSlots,
    deprecated: /\bdeprecated\b/i.test(description),
    destructive: nameSlots.some((slot) => (slot.get(`${CONCEPT_PREFIX}delete`) ?? 0) >= 0.8),
    mentions: identifiers.filter((id) => /[a-z0-9][_-]|[a-z][A-Z]/.test(id)).map((id) => id.toLowerCase())
  }
}

/** The tool's own parts: the backend prefix of an exposed name and description taken back off. */
const sourceOfTool = (tool: Tool): DocumentSource => {
  const at = tool.name.indexOf(SEPARATOR)
  const backendId = at > 0 ? tool.name.slice(0, at) : undefined
  const description = tool.description ?? ""
  return {
    backendId,
    toolName: backendId === undefined ? tool.name : tool.name.slice(at + SEPARATOR.length),
    description:
      backendId !== undefined && description.startsWith(`[${backendId}] `)
        ? description.slice(backendId.length + 3)
        : description,
    inputSchema: tool.inputSchema
  }
}

const sourceOfEntry = (entry: CatalogEntry): DocumentSource => {
  const description = entry.tool.description ?? ""
  const prefix = `[${entry.backendId}] `
  return {
    backendId: entry.backendId,
    toolName: entry.baseName,
    description: description.startsWith(prefix) ? description.slice(prefix.length) : description,
    inputSchema: entry.tool.inputSchema
  }
}

interface Index {
  readonly items: ReadonlyArray<object>
  readonly documents: ReadonlyArray<Document>
  /**
   * Every term of the list (its documents' terms and their names' slots) -> its id: the postings,
   * idf and the query's weights of a pass are arrays by id, so a pass hashes each query term once.
   */
  readonly termIds: ReadonlyMap<string, number>
  /** By term id: the documents holding it and their pseudo term frequencies (none for a term only in a name's slot). */
  readonly postings: ReadonlyArray<{ readonly docs: Int32Array; readonly tfs: Float64Array } | undefined>
  readonly idf: Float64Array
  /**
   * The documents' name slots, flattened: document d's slots are `slotStart[d]..slotStart[d + 1]`,
   * slot s's terms `slotTermStart[s]..slotTermStart[s + 1]` of `slotTerms` (ids) and `slotWeights`.
   */
  readonly slotStart: Int32Array
  readonly slotTermStart: Int32Array
  readonly slotTerms: Int32Array
  readonly slotWeights: Float64Array
  /** A tool's identifier made of one query token (`read_text_file`) -> the documents it names. */
  readonly named: ReadonlyMap<string, ReadonlyArray<number>>
  /** Identifiers of other characters (`a.b`): looked for in the text, when their first and last tokens are in it. */
  readonly namedOtherwise: ReadonlyArray<{ readonly doc: number; readonly id: string; readonly ends: ReadonlyArray<string> }>
  /**
   * Per-pass scratch arrays, one per index (ranking is synchronous): zeroed where a pass wrote.
   * `weights`: the query's weight of each term id.
   */
  readonly scratch: {
    readonly scores: Float64Array
    readonly coordination: Float64Array
    readonly stamp: Int32Array
    readonly weights: Float64Array
  }
}

// Per item (tool or entry object): analysing text is the costly part and does not depend on the list.
const documentCache = new WeakMap<object, Document>()
// Per list: lengths and frequencies depend on the whole list; a catalog is ranked many times.
const indexCache = new WeakMap<ReadonlyArray<object>, Index>()

/** The documents' name slots as flat arrays of term ids (see Index), ids given to new terms. */
const flattenSlots = (documents: ReadonlyArray<Document>, termIds: Map<string, number>) => {
  const slotStart = new Int32Array(documents.length + 1)
  const starts: Array<number> = [0]
  const ids: Array<number> = []
  const weights: Array<number> = []
  documents.forEach((document, d) => {
    for (const slot of document.nameSlots) {
      for (const [term, weight] of slot) {
        let id = termIds.get(term)
        if (id === undefined) termIds.set(term, (id = termIds.size))
        ids.push(id)
        weights.push(weight)
      }
      starts.push(ids.length)
    }
    slotStart[d + 1] = starts.length - 1
  })
  return {
    slotStart,
    slotTermStart: Int32Array.from(starts),
    slotTerms: Int32Array.from(ids),
    slotWeights: Float64Array.from(weights)
  }
}

const buildIndex = <T extends object>(items: ReadonlyArray<T>, sourceOf: (item: T) => DocumentSource): Index => {
  const documents = items.map((item) => {
    let document = documentCache.get(item)
    if (document === undefined) {
      document = analyzeDocument(sourceOf(item))
      documentCache.set(item, document)
    }
    return document
  })
  const n = documents.length
  const averages = FIELDS.map((_, f) => Math.max(1, documents.reduce((sum, d) => sum + (d.lengths[f] ?? 0), 0) / Math.max(1, n)))
  const termIds = new Map<string, number>()
  const building: Array<{ docs: Array<number>; tfs: Array<number> }> = []
  const df: Array<number> = []
  const fieldCount = FIELDS.length
  const scale = new Float64Array(fieldCount)
  documents.forEach((document, i) => {
    // BM25F: each field's count weighted and length-normalised, then summed into one pseudo-frequency.
    for (let f = 0; f < fieldCount; f++) {
      const { weight, b } = FIELDS[f] ?? { weight: 0, b: 0 }
      scale[f] = weight / (1 - b + (b * (document.lengths[f] ?? 0)) / (averages[f] ?? 1))
    }
    document.terms.forEach((term, t) => {
      let tf = 0
      for (let f = 0; f < fieldCount; f++) tf += (document.counts[t * fieldCount + f] ?? 0) * (scale[f] ?? 0)
      let id = termIds.get(term)
      if (id === undefined) {
        termIds.set(term, (id = termIds.size))
        building.push({ docs: [], tfs: [] })
        df.push(0)
      }
      const posting = building[id]
      posting?.docs.push(i)
      posting?.tfs.push(tf)
      df[id] = (df[id] ?? 0) + Math.min(1, (document.presence[t] ?? 0) / DF_REFERENCE_WEIGHT)
    })
  })
  const postings = building.map((p) => ({ docs: Int32Array.from(p.docs), tfs: Float64Array.from(p.tfs) }))
  const idf = new Float64Array(df.length)
  df.forEach((count, id) => (idf[id] = Math.log(1 + (n - count + 0.5) / (count + 0.5))))
  // After the postings' terms: a term only in a name's slot has an id and no posting.
  const slots = flattenSlots(documents, termIds)
  const named = new Map<string, Array<number>>()
  const namedOtherwise: Array<{ doc: number; id: string; ends: Array<string> }> = []
  documents.forEach((document, i) => {
    for (const id of document.mentions) {
      const tokens = id.match(IDENTIFIER_TOKENS) ?? []
      if (tokens.length === 1 && tokens[0] === id) {
        const docs = named.get(id)
        if (docs === undefined) named.set(id, [i])
        else if (docs[docs.length - 1] !== i) docs.push(i)
      } else {
        // An occurrence bounded by other characters starts (ends) with a whole token of the query.
        const ends = [
          IDENTIFIER_CHAR.test(id.charAt(0)) ? tokens[0] : undefined,
          IDENTIFIER_CHAR.test(id.charAt(id.length - 1)) ? tokens[tokens.length - 1] : undefined
        ]
        namedOtherwise.push({ doc: i, id, ends: ends.filter((t): t is string => t !== undefined) })
      }
    }
  })
  const scratch = {
    scores: new Float64Array(n),
    coordination: new Float64Array(n),
    stamp: new Int32Array(n),
    weights: new Float64Array(termIds.size)
  }
  return { items: [...items], documents, termIds, postings, idf, ...slots, named, namedOtherwise, scratch }
}

const indexOf = <T extends object>(items: ReadonlyArray<T>, sourceOf: (item: T) => DocumentSource): Index => {
  const cached = indexCache.get(items)
  // A caller that mutated its array after ranking gets a fresh index rather than a wrong one.
  if (cached !== undefined && cached.items.length === items.length && cached.items.every((item, i) => item === items[i])) {
    return cached
  }
  const index = buildIndex(items, sourceOf)
  indexCache.set(items, index)
  return index
}

const IDENTIFIER_CHAR = /[a-z0-9_-]/

/** Whether `identifier` is in `text` between characters that cannot continue it. */
const mentioned = (text: string, identifier: string): boolean => {
  let from = 0
  for (;;) {
    const at = text.indexOf(identifier, from)
    if (at < 0) return false
    const before = text.charAt(at - 1)
    const after = text.charAt(at + identifier.length)
    if ((before === "" || !IDENTIFIER_CHAR.test(before)) && (after === "" || !IDENTIFIER_CHAR.test(after))) return true
    from = at + 1
  }
}

/** The documents the query names outright: a lookup per token of the query, not a scan of it per tool. */
const namedIn = (index: Index, text: string, tokens: ReadonlySet<string>): Set<number> => {
  const docs = new Set<number>()
  for (const token of tokens) for (const doc of index.named.get(token) ?? []) docs.add(doc)
  for (const { doc, id, ends } of index.namedOtherwise) {
    if (!docs.has(doc) && ends.every((t) => tokens.has(t)) && mentioned(text, id)) docs.add(doc)
  }
  return docs
}

/** The `limit` best of `candidates` by score (ties: the listed order), best first, without sorting them all. */
const best = (candidates: ReadonlyArray<number>, scores: Float64Array, limit: number): Array<number> => {
  const before = (a: number, b: number) => (scores[a] ?? 0) > (scores[b] ?? 0) || ((scores[a] ?? 0) === (scores[b] ?? 0) && a < b)
  if (candidates.length <= limit * 4) return [...candidates].sort((a, b) => (before(a, b) ? -1 : 1)).slice(0, limit)
  const top: Array<number> = []
  for (const c of candidates) {
    if (top.length === limit && !before(c, top[limit - 1] ?? 0)) continue
    let lo = 0
    let hi = top.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (before(top[mid] ?? 0, c)) lo = mid + 1
      else hi = mid
    }
    top.splice(lo, 0, c)
    if (top.length > limit) top.pop()
  }
  return top
}

const normalizeLimit = (k: number): number => (Number.isNaN(k) || k <= 0 ? 0 : Math.floor(Math.min(k, Number.MAX_SAFE_INTEGER)))

/**
 * One ranking pass. Linear in what the query matches, not in the catalog: only the documents the
 * query's terms reach (its postings) and those it names are scored, the best `k` kept without a
 * sort of all; the catalog is walked only to fill the places left with unmatched tools.
 */
const rankWith = <T extends object>(
  items: ReadonlyArray<T>,
  sourceOf: (item: T) => DocumentSource,
  query: string,
  k: number,
  context: RankContext | null | undefined,
  /** Filled with the picked items' scores (0 for a tool that matched nothing), when given. */
  scoresOut?: Map<T, number>,
  /** Only tools that match: no unmatched ones fill the places left. */
  matchedOnly = false
): Array<T> => {
  const limit = Math.min(normalizeLimit(k), items.length)
  if (limit === 0) return []
  const index = indexOf(items, sourceOf)
  const { aspects, terms, text, tokens } = analyzeQuery(typeof query === "string" ? query : String(query ?? ""), context)
  const { scores, coordination, stamp, weights } = index.scratch
  const { postings, termIds } = index
  // The documents this pass writes to (each once), whose scratch entries are zeroed again at its end.
  const touched: Array<number> = []
  // The query's terms the list knows, by id, in the query's order (each weight in `weights` meanwhile).
  const known: Array<{ readonly id: number; readonly weight: number }> = []
  for (const [term, weight] of terms) {
    const id = termIds.get(term)
    if (id === undefined) continue
    weights[id] = weight
    known.push({ id, weight })
  }
  try {
    // Coordination: how much of what the query asks for a tool matches at all, each aspect counted
    // by its strongest term the tool has. Summed BM25 alone lets one strong word ("open" in
    // open_nodes) outweigh a tool that matches everything asked for.
    let askedFor = 0
    aspects.forEach((aspect, a) => {
      let found = false
      for (const [term, weight] of [...aspect].sort((x, y) => y[1] - x[1])) {
        const id = termIds.get(term)
        const posting = id === undefined ? undefined : postings[id]
        if (posting === undefined) continue
        found = true
        const docs = posting.docs
        for (let j = 0; j < docs.length; j++) {
          const doc = docs[j] ?? 0
          if (stamp[doc] === a + 1) continue
          if (stamp[doc] === 0) touched.push(doc)
          stamp[doc] = a + 1
          coordination[doc] = (coordination[doc] ?? 0) + weight
        }
      }
      // Words no tool knows (names, "webpack") are arguments: they neither help nor hurt.
      if (found) askedFor += Math.max(...aspect.values())
    })
    for (const { id, weight: queryWeight } of known) {
      const posting = postings[id]
      if (posting === undefined) continue
      const idf = index.idf[id] ?? 0
      const { docs, tfs } = posting
      for (let j = 0; j < docs.length; j++) {
        const tf = tfs[j] ?? 0
        const doc = docs[j] ?? 0
        if (stamp[doc] === 0) touched.push(doc)
        stamp[doc] = -1
        scores[doc] = (scores[doc] ?? 0) + (queryWeight * idf * tf * (K1 + 1)) / (tf + K1)
      }
    }
    const named = namedIn(index, text, tokens)
    for (const doc of named) {
      if (stamp[doc] === 0) touched.push(doc)
      stamp[doc] = -1
    }
    const wantsDeletion = (terms.get(`${CONCEPT_PREFIX}delete`) ?? 0) >= 0.5
    const scored: Array<number> = []
    for (const i of touched) {
      const document = index.documents[i]
      let score = scores[i] ?? 0
      if (document === undefined) continue
      if (score > 0) {
        if (askedFor > 0) score *= COORDINATION_FLOOR + ((1 - COORDINATION_FLOOR) * (coordination[i] ?? 0)) / askedFor
        const firstSlot = index.slotStart[i] ?? 0
        const slotCount = (index.slotStart[i + 1] ?? 0) - firstSlot
        if (slotCount > 0) {
          let covered = 0
          for (let slot = firstSlot; slot < firstSlot + slotCount; slot++) {
            let best = 0
            const last = index.slotTermStart[slot + 1] ?? 0
            for (let at = index.slotTermStart[slot] ?? 0; at < last; at++) {
              best = Math.max(best, Math.min(1, (index.slotWeights[at] ?? 0) * (weights[index.slotTerms[at] ?? 0] ?? 0)))
            }
            covered += best
          }
          score *= 1 + (NAME_COVERAGE_BOOST * covered) / slotCount
        }
        if (document.deprecated) score *= DEPRECATED_FACTOR
        if (document.destructive && !wantsDeletion) score *= DESTRUCTIVE_FACTOR
      }
      // Naming the tool outright beats any amount of word overlap.
      if (named.has(i)) score = (score + 1) * 3
      scores[i] = score
      if (score > 0) scored.push(i)
    }
    const picked = best(scored, scores, limit)
    const chosen = picked.flatMap((i) => {
      const item = items[i]
      return item === undefined ? [] : [{ item, score: Math.max(0, scores[i] ?? 0) }]
    })
    if (!matchedOnly && chosen.length < limit) {
      // Unmatched tools still fill the request, in their listed order.
      const matched = new Set(picked)
      for (let i = 0; i < items.length && chosen.length < limit; i++) {
        const item = items[i]
        if (item !== undefined && !matched.has(i) && !((scores[i] ?? 0) > 0)) chosen.push({ item, score: 0 })
      }
    }
    if (scoresOut !== undefined) for (const { item, score } of chosen) scoresOut.set(item, score)
    return chosen.map(({ item }) => item)
  } finally {
    for (const doc of touched) {
      scores[doc] = 0
      coordination[doc] = 0
      stamp[doc] = 0
    }
    for (const { id } of known) weights[id] = 0
  }
}

/**
 * The `k` tools that best match `query` (all of them, ranked, when there are fewer), best first;
 * tools that match nothing follow in their listed order. `context` (the orchestration request's)
 * only hints. Pure and deterministic. Exposed names (`<backendId>__<tool>`) and `[<backendId>] `
 * description prefixes are understood. The index is cached per array (and per tool object), so
 * pass the same array for the same list.
 */
export const rank = <T extends Tool>(tools: ReadonlyArray<T>, query: string, k: number, context?: RankContext | null): Array<T> =>
  rankWith(tools, sourceOfTool, query, k, context)

/** `rank` for catalog entries: what the orchestrator uses to pick the tools it offers the model. */
export const rankEntries = (
  entries: ReadonlyArray<CatalogEntry>,
  query: string,
  k: number,
  context?: RankContext | null
): Array<CatalogEntry> => rankWith(entries, sourceOfEntry, query, k, context)

/** `rankEntries` with each entry's score, best first: what the debug UI shows of a ranking. */
export const scoreEntries = (
  entries: ReadonlyArray<CatalogEntry>,
  query: string,
  k: number,
  context?: RankContext | null
): Array<{ readonly name: string; readonly score: number }> => {
  const scores = new Map<CatalogEntry, number>()
  return rankWith(entries, sourceOfEntry, query, k, context, scores).map((entry) => ({
    name: entry.name,
    score: Math.round((scores.get(entry) ?? 0) * 1_000) / 1_000
  }))
}

/** The entries that match `query` at all (score above 0), best first, at most `k`: one list of a task's ranking. */
export const matchingEntries = (
  entries: ReadonlyArray<CatalogEntry>,
  query: string,
  k: number,
  context?: RankContext | null
): Array<CatalogEntry> => {
  return rankWith(entries, sourceOfEntry, query, k, context, undefined, true)
}

/** A document of one's own (a server's summary), ranked as tools are. */
export interface Summary {
  readonly name: string
  /** What it is about, then one text per tool: each counts a word once. */
  readonly parts: ReadonlyArray<string>
}

const sourceOfSummary = (summary: Summary): DocumentSource => ({
  backendId: undefined,
  toolName: summary.name,
  description: summary.parts.join(" "),
  inputSchema: undefined,
  parts: summary.parts
})

/** The summaries that match `query`, with their scores, best first (the index cached per array). */
export const scoreSummaries = (
  summaries: ReadonlyArray<Summary>,
  query: string,
  k: number
): Array<{ readonly summary: Summary; readonly score: number }> => {
  const scores = new Map<Summary, number>()
  return rankWith(summaries, sourceOfSummary, query, k, undefined, scores, true).map((summary) => ({
    summary,
    score: scores.get(summary) ?? 0
  }))
}

/**
 * Builds and caches the ranking index of `entries` now (tens of milliseconds per thousand tools),
 * so that the first query after the tool list changes does not wait for it. Optional.
 */
export const prepareRanking = (entries: ReadonlyArray<CatalogEntry>): void => {
  indexOf(entries, sourceOfEntry)
}
