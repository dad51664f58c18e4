/**
 * ToolCatalog: the gateway's view of its backends' tools.
 *
 * Owns, as pure synchronous functions over the backends' tool lists:
 *  - naming: `<backendId>__<toolName>` kept within `^[a-zA-Z0-9_-]{1,64}$` and unique, and the
 *    exposed MCP tool (`[<backendId>] ` description prefix, inputSchema untouched);
 *  - the LLM function definitions for both routing modes: one per tool ("tool") or one per backend
 *    with `{mcp_method, mcp_params}` ("backend", the seed PoC's shape);
 *  - ranking: which tools to offer the model first when there are more than `maxToolsPerRequest`.
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
import type { BackendTools } from "../backend/Backends.js"
import type { JsonObject, Tool } from "../protocol/Mcp.js"

// ---------------------------------------------------------------------------------------------
// Naming
// ---------------------------------------------------------------------------------------------

/** MCP clients and the OpenAI API both reject tool names outside `^[a-zA-Z0-9_-]{1,64}$`. */
const NAME_MAX = 64
const SEPARATOR = "__"
/** `_` + 6 hex characters. */
const HASH_SUFFIX_LENGTH = 7

const fnv1a = (text: string): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}

const shortHash = (text: string): string => fnv1a(text).toString(16).padStart(8, "0").slice(0, 6)

// `u` so that one astral character (an emoji) becomes one `_`, not two.
const sanitize = (name: string): string => name.replace(/[^a-zA-Z0-9_-]/gu, "_")

// The hash is of the original (unsanitised) name, so two names that sanitise or cut alike still differ.
const withHash = (sanitized: string, hashInput: string): string =>
  `${sanitized.slice(0, NAME_MAX - HASH_SUFFIX_LENGTH)}_${shortHash(hashInput)}`

/**
 * The name a backend tool is exposed under: `<backendId>__<toolName>`, other characters replaced by
 * `_`, an over-long name cut and suffixed with a hash of the full name. Stable across runs.
 * Two tools can still map to the same name; `buildCatalog` resolves that.
 */
export const exposedName = (backendId: string, toolName: string): string => {
  const original = `${backendId}${SEPARATOR}${toolName}`
  const clean = sanitize(original)
  return clean.length <= NAME_MAX ? clean : withHash(clean, original)
}

export interface CatalogEntry {
  /** The exposed name (`tools/list`, LLM function name). */
  readonly name: string
  readonly backendId: string
  /** The backend's own name for the tool, what `tools/call` sends to the backend. */
  readonly toolName: string
  /** The exposed MCP tool: `name` exposed, description prefixed, everything else as the backend sent it. */
  readonly tool: Tool
}

export interface Catalog {
  readonly entries: ReadonlyArray<CatalogEntry>
  readonly byName: ReadonlyMap<string, CatalogEntry>
}

/** One backend's tools, as the backends service lists them (declared there). */
export type { BackendTools } from "../backend/Backends.js"

/**
 * Namespaces every backend's tools, backends in the given order and tools in theirs. When two tools
 * end up with the same exposed name, the first keeps it and the later one gets a hash suffix, so a
 * name never moves from one tool to another as long as the lists keep their order.
 */
const catalogs = new WeakMap<ReadonlyArray<BackendTools>, Catalog>()

/**
 * `buildCatalog`, once per tool list: `Backends` hands out the same array until a backend's tools
 * change, so the method table and the orchestrator share one catalog (and its ranking index).
 */
export const catalogOf = (backends: ReadonlyArray<BackendTools>): Catalog => {
  let catalog = catalogs.get(backends)
  if (catalog === undefined) catalogs.set(backends, (catalog = buildCatalog(backends)))
  return catalog
}

export const buildCatalog = (backends: ReadonlyArray<BackendTools>): Catalog => {
  const planned = backends.flatMap((backend) =>
    backend.tools.map((tool) => ({ backendId: backend.backendId, tool, name: exposedName(backend.backendId, tool.name) }))
  )
  // A suffixed name must not take the plain name a later tool is entitled to either.
  const plainNames = new Set(planned.map((p) => p.name))
  const taken = new Set<string>()
  const entries = planned.map(({ backendId, name: plainName, tool }): CatalogEntry => {
    let name = plainName
    if (taken.has(name)) {
      const original = `${backendId}${SEPARATOR}${tool.name}`
      const clean = sanitize(original)
      // Salted so that even an exact duplicate (a backend listing one name twice) gets a fresh name.
      for (let salt = 1; taken.has(name) || plainNames.has(name); salt++) {
        name = withHash(clean, `${original}#${salt}`)
      }
    }
    taken.add(name)
    return {
      name,
      backendId,
      toolName: tool.name,
      // Always prefixed, even when the backend gave no description, so clients can rely on the shape.
      tool: { ...tool, name, description: `[${backendId}] ${tool.description ?? ""}` }
    }
  })
  return { entries, byName: new Map(entries.map((entry) => [entry.name, entry])) }
}

// ---------------------------------------------------------------------------------------------
// LLM function definitions
// ---------------------------------------------------------------------------------------------

/** OpenAI's `ChatCompletionFunctionTool`, structurally, so this module does not import `openai`. */
export interface ChatTool {
  type: "function"
  function: {
    name: string
    description?: string
    parameters?: Record<string, unknown>
    strict?: boolean | null
  }
}

/** The Chat Completions API rejects a function description longer than this. */
const MAX_FUNCTION_DESCRIPTION = 1024
/** Room left for the model's other input: a generated backend description stays below this. */
const BACKEND_SUMMARY_BUDGET = 1000

const clip = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`)

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * An MCP inputSchema as Chat Completions `parameters`. Only what the API insists on is changed: it
 * wants an object schema with `properties`, and some OpenAI-compatible servers choke on `$schema`.
 */
const functionParameters = (schema: JsonObject): Record<string, unknown> => {
  const parameters: Record<string, unknown> = { ...schema, type: "object" }
  delete parameters.$schema
  if (!isRecord(parameters.properties)) parameters.properties = {}
  return parameters
}

/** Routing "tool": one function per catalog entry, named as in `tools/list`. */
export const toolFunctions = (entries: ReadonlyArray<CatalogEntry>): Array<ChatTool> =>
  entries.map((entry) => ({
    type: "function",
    function: {
      name: entry.name,
      description: clip(entry.tool.description ?? `[${entry.backendId}]`, MAX_FUNCTION_DESCRIPTION),
      parameters: functionParameters(entry.tool.inputSchema)
    }
  }))

const propertyNames = (tool: Tool): { all: Array<string>; required: ReadonlySet<string> } => {
  const properties = isRecord(tool.inputSchema.properties) ? Object.keys(tool.inputSchema.properties) : []
  const required = Array.isArray(tool.inputSchema.required)
    ? new Set(tool.inputSchema.required.filter((r): r is string => typeof r === "string"))
    : new Set<string>()
  return { all: properties, required }
}

type SignatureStyle = "full" | "required" | "bare"

const signature = (tool: Tool, style: SignatureStyle): string => {
  if (style === "bare") return tool.name
  const { all, required } = propertyNames(tool)
  const shown = style === "full" ? all.map((p) => (required.has(p) ? p : `${p}?`)) : all.filter((p) => required.has(p))
  return `${tool.name}(${shown.join(", ")})`
}

const usage = `Use mcp_method "tools/call" with mcp_params {"name": <tool name>, "arguments": {...}}.`

/** Lists the tools as compactly as it takes to stay in budget, and says how many did not fit. */
const describeBackend = (backend: BackendTools): string => {
  const head = `MCP server "${backend.backendId}". ${usage}`
  if (backend.tools.length === 0) return `${head} It lists no tools yet.`
  for (const style of ["full", "required", "bare"] as const) {
    const text = `${head} Tools: ${backend.tools.map((t) => signature(t, style)).join(", ")}.`
    if (text.length <= BACKEND_SUMMARY_BUDGET) return text
  }
  let text = `${head} Tools: `
  let shown = 0
  for (const tool of backend.tools) {
    const more = `, ... (${backend.tools.length - shown - 1} more)`
    if (text.length + tool.name.length + 2 + more.length > BACKEND_SUMMARY_BUDGET) break
    text += (shown === 0 ? "" : ", ") + tool.name
    shown++
  }
  return `${text}, ... (${backend.tools.length - shown} more).`
}

/**
 * Routing "backend" (the seed PoC's shape): one function per backend, named by its id (config
 * validation keeps ids within the function-name pattern), described by its config description or
 * else by a generated list of its tools.
 */
export const backendFunctions = (backends: ReadonlyArray<BackendTools>): Array<ChatTool> =>
  backends.map((backend) => {
    const names = backend.tools.map((t) => t.name).join(", ")
    return {
      type: "function",
      function: {
        name: backend.backendId,
        description: clip(backend.description?.trim() || describeBackend(backend), MAX_FUNCTION_DESCRIPTION),
        parameters: {
          type: "object",
          properties: {
            mcp_method: {
              type: "string",
              description: `The MCP method to call on this backend; normally "tools/call".`
            },
            mcp_params: {
              type: "object",
              description: clip(
                `The method's params. For "tools/call": {"name": <tool name>, "arguments": {...the tool's arguments}}` +
                  (names ? `, where the tool name is one of: ${names}.` : "."),
                BACKEND_SUMMARY_BUDGET
              )
            }
          },
          required: ["mcp_method", "mcp_params"]
        }
      }
    }
  })

// ---------------------------------------------------------------------------------------------
// Ranking: text analysis
// ---------------------------------------------------------------------------------------------

/** The parts of the orchestration context (`TaskContext`) that hint at the kind of tool wanted. */
export interface RankContext {
  readonly activeDocumentURI?: string | null | undefined
  readonly currentWorkingDirectory?: string | null | undefined
  readonly selectionText?: string | null | undefined
}

/**
 * Concepts shared by tools and queries: every word listed under a concept also yields the concept's
 * term (with the weight after `:`, default 1). `+` joins the words of a phrase whose words keep
 * their own meaning ("knowledge graph"); `~` joins an idiom whose words but the last lose theirs
 * ("pull up" is not about pull requests, "open an issue" creates one). Phrases match words as
 * written, unstemmed, with or without stop words between them. Kept general (tool verbs and nouns
 * as people say them), never tuned to single queries.
 */
const VOCABULARY: ReadonlyArray<readonly [concept: string, words: string]> = [
  // verbs
  [
    "read",
    "read show open view display cat print see load inspect examine peek preview retrieve:0.6 content:0.4 contents:0.4 get:0.3 fetch:0.4 head:0.5 tail:0.5 look:0.6 look~at:0.8 pull~up:0.8 check:0.3 say:0.3 output:0.3 less:0.3 contain inside:0.6 written~in:0.8"
  ],
  ["write", "write wrote written save store:0.8 put:0.6 overwrite persist dump:0.6 write+out export:0.5 record:0.4 output:0.3"],
  [
    "create",
    "create make new:0.5 add:0.6 init initialize generate:0.5 touch:0.6 mkdir insert:0.4 register:0.5 set~up:0.8 setup:0.8 scaffold:0.6 establish:0.5 link:0.4 connect:0.4 open~issue open~ticket open~pr open~bug file~issue file~bug file~ticket raise~issue raise~pr"
  ],
  [
    "edit",
    "edit modify change replace patch update fix:0.6 tweak alter amend adjust correct:0.5 rewrite:0.6 substitute refactor:0.5 sed:0.8 find~and~replace"
  ],
  [
    "delete",
    "delete remove rm erase drop destroy purge discard forget unlink rmdir wipe trash:0.6 clear:0.5 get~rid prune:0.6 clean:0.4"
  ],
  ["move", "move rename mv relocate transfer:0.5 transition:0.5 new~name"],
  ["copy", "copy cp duplicate clone:0.6"],
  ["list", "list ls enumerate browse:0.5 whats+in:0.6 are+in:0.5 files+in:0.5 dir:0.6 inventory:0.6 overview:0.4"],
  ["tree", "tree recursive recursively hierarchy structure nested layout:0.6 outline:0.6 overview:0.4"],
  [
    "search",
    "search find grep locate lookup look~up look~for query:0.5 match:0.5 filter:0.4 seek hunt where+is:0.8 about:0.3 glob pattern:0.6 discover:0.6 scan:0.5"
  ],
  [
    "info",
    "info information metadata stat stats detail:0.5 details:0.5 property:0.6 properties:0.6 attribute:0.6 permission permissions owner:0.3 mode:0.3 how+big:0.8 how+large:0.8 how+old:0.8"
  ],
  ["size", "size sizes big bigger biggest large largest bytes byte space:0.7 du kb mb gb heavy huge small:0.5 weigh"],
  ["time", "time date when timestamp modified mtime ctime age:0.7 old:0.5 recent:0.5 last+modified"],
  ["compress", "compress compression zip gzip gz archive tar pack:0.6 shrink deflate"],
  ["sum", "sum add:0.4 plus total calculate compute math arithmetic addition add~up"],
  ["number", "number numbers numeric"],
  ["echo", "echo repeat parrot say~back mirror:0.6 ping:0.4"],
  ["env", "env environment variable:0.8 variables:0.8 vars var"],
  ["toggle", "toggle enable disable turn~on turn~off switch~on switch~off switch:0.6 activate deactivate on+or+off stop:0.5"],
  ["subscribe", "subscribe subscription subscriber subscriptions updates:0.5 notification notifications watch:0.6"],
  ["progress", "progress long+running slow:0.6 wait:0.6 sleep:0.5 delay:0.5 long:0.4 duration:0.6 step:0.4 steps:0.4"],
  ["research", "research investigate study deep+dive analyze:0.6 analyse:0.6 report:0.4"],
  ["annotation", "annotation annotations annotated annotate"],
  ["structured", "structured schema:0.6 typed:0.6 json:0.3"],
  ["navigate", "navigate go~to visit browse:0.6"],
  ["click", "click press tap button"],
  ["type", "type:0.6 fill input:0.5 enter:0.5"],
  ["screenshot", "screenshot capture snap snapshot"],
  ["message", "message messages msg post send chat dm notify announce slack:0.5"],
  ["comment", "comment comments reply respond"],
  ["download", "download"],
  ["diff", "diff changes:0.6 changed:0.6 uncommitted unstaged staged"],
  ["status", "status state:0.5 transition:0.5"],
  // nouns
  [
    "dir",
    "directory directories folder folders dir dirs subdirectory subdirectories subfolder subfolders mkdir rmdir ls tree:0.4 path:0.3 cwd"
  ],
  [
    "file",
    "file files document documents doc:0.6 cat:0.5 touch:0.5 rm:0.5 readme:0.8 license:0.8 changelog:0.8 dockerfile:0.8 makefile:0.8 gitignore:0.8 config:0.3 configuration:0.3"
  ],
  ["text", "text txt plain string:0.5 utf8 encoding:0.6 markdown:0.6 md:0.6"],
  ["multiple", "multiple many several batch bulk both few:0.6 couple:0.6 files:0.4 at+once simultaneously together:0.5 two:0.5"],
  ["local", "local disk filesystem file+system machine:0.5 workspace:0.5"],
  ["allowed", "allowed allow permitted accessible access:0.7 root:0.6 roots:0.6 sandbox:0.6"],
  [
    "image",
    "image images picture pictures photo photos pic png jpg jpeg gif webp svg icon logo media audio sound mp3 wav video mp4 clip:0.5 screenshot:0.4"
  ],
  ["log", "log logs logging trace:0.5 verbose:0.5"],
  ["resource", "resource resources uri:0.6 link:0.4 links:0.4 reference:0.6"],
  [
    "memory",
    "memory memories remember memorize recall knowledge graph:0.8 knowledge+graph knowledge+base kb brain:0.6 note:0.6 notes:0.6 forget:0.8 know:0.4"
  ],
  ["entity", "entity entities node nodes person people:0.8 thing:0.4 concept:0.5 contact:0.5"],
  ["observation", "observation observations fact facts note:0.6 notes:0.6 detail:0.3"],
  [
    "relation",
    "relation relations relationship relationships related link:0.6 connect connection association associate edge between:0.4 depends:0.5 dependency:0.5"
  ],
  ["url", "url urls website web page:0.6 site http https link:0.4 internet online:0.6"],
  ["browser", "browser playwright puppeteer chrome chromium firefox selenium tab:0.6"],
  ["issue", "issue issues ticket tickets bug bugs task:0.4 story:0.5 jira:0.5"],
  ["pr", "pull+request pr prs merge+request mr"],
  ["repo", "repo repos repository repositories github:0.5 gitlab:0.5 remote:0.4 git:0.5"],
  ["branch", "branch branches"],
  ["commit", "commit commits check~in git:0.5"],
  ["sql", "sql database db table tables select postgres postgresql mysql sqlite rows row"],
  ["channel", "channel channels room"],
  ["user", "user users member members teammate teammates people:0.4"]
]

/**
 * Words that say nothing about which tool is meant. Phrases are matched before these are dropped,
 * so "look up", "turn on" and "what's in" still count.
 */
const STOP_WORDS = new Set(
  (
    "a an the and or but nor of to in on off at by for from with into onto as is are was were be been being am " +
    "do does did doing done have has had having i me my mine myself we us our ours you your yours it its itself " +
    "this that these those there here he she they them his her their what whats which who whom whose why how " +
    "can could would should will shall may might must please pls kindly just also then than so too very really " +
    "now some any each every all not no yes ok okay let lets want wanna need needs like hey hi thanks thank via " +
    "using use up down out over again well else other another something anything everything one im ive id dont " +
    "tell give get got gets if only same such own whether while within without across per"
  ).split(" ")
)

/** Words that point at "the thing I'm looking at", which makes the IDE context a strong hint. */
const DEICTIC = new Set(["this", "it", "current", "here", "active", "opened"])

/**
 * A light suffix stemmer (plural, -ing, -ed, -ation, final e). Its only job is to make the inflections
 * of one word meet; the vocabulary is stemmed with it too, so odd stems do no harm.
 */
const stem = (word: string): string => {
  let stemmed = stems.get(word)
  if (stemmed === undefined) {
    // Bounded: words come from tool lists and queries, but a long-running gateway sees many queries.
    if (stems.size > 50_000) stems.clear()
    stems.set(word, (stemmed = stemUncached(word)))
  }
  return stemmed
}

const stems = new Map<string, string>()

const stemUncached = (word: string): string => {
  if (word.length <= 3 || /\d/.test(word)) return word
  let s = word
  if (s.endsWith("ies") && s.length > 4) s = `${s.slice(0, -3)}y`
  else if (s.endsWith("sses")) s = s.slice(0, -2)
  else if (s.endsWith("s") && !/(ss|us|is)$/.test(s)) s = s.slice(0, -1)
  let stripped = false
  if (s.endsWith("ing") && s.length > 5 && /[aeiouy]/.test(s.slice(0, -3))) {
    s = s.slice(0, -3)
    stripped = true
  } else if (s.endsWith("ed") && s.length > 4 && /[aeiouy]/.test(s.slice(0, -2))) {
    s = s.slice(0, -2)
    stripped = true
  } else if (s.endsWith("ation") && s.length > 6) {
    s = s.slice(0, -3)
  }
  // "stopped"/"mapping": undo the doubled consonant, but not "called"/"passed"/"buzzed".
  if (stripped && /([^aeiouylsz])\1$/.test(s)) s = s.slice(0, -1)
  if (s.endsWith("e") && s.length > 3) s = s.slice(0, -1)
  return s
}

const CONCEPT_PREFIX = "#"
/**
 * A query word the vocabulary knows counts mostly through its concept: "show" should find a tool
 * that reads, not one whose description happens to say "Shows".
 */
const MAPPED_WORD_WEIGHT = 0.6
const IDIOM_WORD_WEIGHT = 0.2

type Concepts = ReadonlyArray<readonly [term: string, weight: number]>

const buildVocabulary = () => {
  const words = new Map<string, Map<string, number>>()
  const phrases = new Map<string, Map<string, number>>()
  const idioms = new Set<string>()
  for (const [concept, list] of VOCABULARY) {
    for (const item of list.split(" ")) {
      const [key = "", weightText] = item.split(":")
      const weight = weightText === undefined ? 1 : Number(weightText)
      const parts = key.split(/[+~]/)
      if (key.includes("~")) idioms.add(parts.join(" "))
      const targets =
        parts.length > 1 ? [[phrases, parts.join(" ")] as const] : [[words, key] as const, [words, stem(key)] as const]
      for (const [map, k] of targets) {
        const concepts = map.get(k) ?? new Map<string, number>()
        concepts.set(CONCEPT_PREFIX + concept, Math.max(concepts.get(CONCEPT_PREFIX + concept) ?? 0, weight))
        map.set(k, concepts)
      }
    }
  }
  const freeze = (m: Map<string, Map<string, number>>) => new Map<string, Concepts>([...m].map(([k, v]) => [k, [...v]]))
  const longestPhrase = Math.max(...[...phrases.keys()].map((k) => k.split(" ").length))
  const phraseStarts = new Set([...phrases.keys()].map((k) => k.split(" ")[0] ?? ""))
  return { words: freeze(words), phrases: freeze(phrases), phraseStarts, idioms, longestPhrase }
}

const VOCAB = buildVocabulary()

/**
 * Lowercase words of a text, split at anything but letters and digits. Identifiers (tool and
 * parameter names) are also split at camelCase humps; prose is not, or "TypeScript" and "GitHub"
 * would turn into "type script" and "git hub".
 */
const splitWords = (text: string, identifier = false): Array<string> => {
  let t = identifier ? text.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2") : text
  // "what's" -> "whats", "Bob's" -> "bobs": one word, as people mean it.
  if (t.includes("'") || t.includes("’")) t = t.replace(/(\w)['’](\w)/g, "$1$2")
  return t.toLowerCase().match(/[a-z0-9]+/g) ?? []
}

/** Receives a term, its weight, and which word (or phrase, or hint) of the text it came from. */
type Sink = (term: string, weight: number, source: string) => void

const isNumber = (word: string): boolean => {
  for (let i = 0; i < word.length; i++) {
    const c = word.charCodeAt(i)
    if (c < 48 || c > 57) return false
  }
  return word.length > 0
}

const phraseSequences = (words: ReadonlyArray<string>): Array<Array<number>> => {
  const all = words.map((_, i) => i)
  return [all, all.filter((i) => !STOP_WORDS.has(words[i] ?? ""))]
}

/** Feeds a text's terms (stems and concepts) to `sink`; returns how many meaningful words it had. */
const analyze = (text: string, sink: Sink, scale = 1, identifier = false, mappedWordWeight = 1): number => {
  const words = splitWords(text, identifier)
  const inIdiom = new Set<number>()
  // Phrases are looked for both as written and with stop words skipped ("open an issue").
  const sequences = words.some((w) => VOCAB.phraseStarts.has(w)) ? phraseSequences(words) : []
  sequences.forEach((sequence, skipping) => {
    for (let i = 0; i < sequence.length; i++) {
      const first = sequence[i] ?? 0
      let phrase = words[first] ?? ""
      if (!VOCAB.phraseStarts.has(phrase)) continue
      for (let n = 2; n <= VOCAB.longestPhrase && i + n <= sequence.length; n++) {
        const last = sequence[i + n - 1] ?? 0
        phrase += ` ${words[last]}`
        const concepts = VOCAB.phrases.get(phrase)
        // Without a skipped stop word, the phrase was already seen as written.
        if (concepts === undefined || (skipping === 1 && last - first === n - 1)) continue
        for (const [term, weight] of concepts) sink(term, scale * weight, phrase)
        if (VOCAB.idioms.has(phrase)) for (let j = i; j < i + n - 1; j++) inIdiom.add(sequence[j] ?? 0)
      }
    }
  })
  let count = 0
  const numbers = words.filter(isNumber).length
  for (let position = 0; position < words.length; position++) {
    const word = words[position] ?? ""
    if (isNumber(word)) {
      // A number is an argument, but "add 17 and 25" should still find the arithmetic tool.
      sink(`${CONCEPT_PREFIX}number`, scale * (numbers >= 2 ? 0.6 : 0.3), "#number")
      continue
    }
    if (word.length < 2 || STOP_WORDS.has(word)) continue
    count++
    const stemmed = stem(word)
    if (inIdiom.has(position)) {
      sink(stemmed, scale * IDIOM_WORD_WEIGHT, stemmed)
      continue
    }
    const concepts = VOCAB.words.get(word) ?? VOCAB.words.get(stemmed)
    sink(stemmed, concepts ? scale * mappedWordWeight : scale, stemmed)
    if (concepts) for (const [term, weight] of concepts) sink(term, scale * weight, stemmed)
  }
  return count
}

const IMAGE_EXTENSIONS = new Set(
  "png jpg jpeg gif webp bmp svg ico tif tiff heic avif mp3 wav ogg flac m4a aac mp4 mov webm avi mkv".split(" ")
)

const extensionOf = (path: string): string | undefined => {
  const match = /\.([a-z0-9]{1,6})$/i.exec(path.replace(/[?#].*$/, ""))
  return match?.[1]?.toLowerCase()
}

/**
 * What ranking reads of a query and of each context field. Ranking needs the words of a request,
 * not its pasted megabytes (the model still gets the whole query): bounding the input bounds the
 * time, and every pattern below is linear in what it reads.
 */
export const MAX_RANKED_QUERY_CHARS = 2_000
const MAX_RANKED_CONTEXT_CHARS = 1_000
/** Longer tokens are not names of files, and the shape checks below need not look at them. */
const MAX_PATH_TOKEN_CHARS = 512

const bounded = (text: string, max: number): string => (text.length <= max ? text : text.slice(0, max))

/** `name.ext`, where the extension holds a letter and the name ends in a word character or `*`. */
const hasFileExtension = (token: string): boolean => {
  const dot = token.lastIndexOf(".")
  if (dot <= 0 || dot === token.length - 1) return false
  const extension = token.slice(dot + 1)
  return (
    /^[a-z0-9]+$/i.test(extension) &&
    /[a-z]/i.test(extension) &&
    /[\w*]/.test(token[dot - 1]!) &&
    /^[\w*?.~-]+$/.test(token.slice(0, dot))
  )
}

/** A file name, a path or a glob: an argument, whose shape still says what kind of tool is wanted. */
const isPathLike = (token: string): boolean =>
  token.length > 3 &&
  token.length <= MAX_PATH_TOKEN_CHARS &&
  !token.includes("://") &&
  /^[\w*?.~/\\{},@+-]+$/.test(token) &&
  (/[\\/]/.test(token) || hasFileExtension(token) || /^\.[\w.-]+$/.test(token) || /[*?]/.test(token))

const OPENERS = new Set([..."(\"'`[{<"])
const CLOSERS = new Set([...")\"'`]}>.,;:!?"])

/** The token without leading brackets and quotes and trailing closers and punctuation. */
const trimPunctuation = (token: string): string => {
  let start = 0
  let end = token.length
  while (start < end && OPENERS.has(token[start]!)) start++
  while (end > start && CLOSERS.has(token[end - 1]!)) end--
  return token.slice(start, end)
}

const isSchemeChar = (c: string): boolean => /[a-z0-9+.-]/i.test(c)

/**
 * Replaces each URL (`scheme://...` up to the next space) by a space, calling `found` for each; a
 * scan from each `://`, where a pattern would backtrack over every run of scheme characters.
 */
const removeUrls = (text: string, found: () => void): string => {
  let out = ""
  let from = 0
  let at: number
  while ((at = text.indexOf("://", from)) >= 0) {
    let start = at
    while (start > from && isSchemeChar(text[start - 1]!)) start--
    // The scheme starts with a letter, at a word boundary.
    while (start < at && !/[a-z]/i.test(text[start]!)) start++
    let end = at + 3
    while (end < text.length && !/\s/.test(text[end]!)) end++
    if (start === at || end === at + 3 || (start > 0 && /\w/.test(text[start - 1]!))) {
      out += text.slice(from, at + 3)
      from = at + 3
      continue
    }
    found()
    out += `${text.slice(from, start)} `
    from = end
  }
  return out + text.slice(from)
}

const weightOf = (terms: ReadonlyMap<string, number>, concept: string): number => terms.get(CONCEPT_PREFIX + concept) ?? 0

interface QueryTerms {
  /** term -> weight */
  readonly terms: ReadonlyMap<string, number>
  /** What the query asks for, one entry per word, phrase or hint: the terms that stand for it. */
  readonly aspects: ReadonlyArray<ReadonlyMap<string, number>>
  /** The query lowercased, to notice a tool named outright. */
  readonly text: string
}

const analyzeQuery = (fullQuery: string, context: RankContext | null | undefined): QueryTerms => {
  const query = bounded(fullQuery, MAX_RANKED_QUERY_CHARS)
  const terms = new Map<string, number>()
  const aspects = new Map<string, Map<string, number>>()
  // max, not sum: saying "folder" and "directory" is not twice the evidence.
  const put: Sink = (term, weight, source) => {
    if (weight > (terms.get(term) ?? 0)) terms.set(term, weight)
    let aspect = aspects.get(source)
    if (aspect === undefined) aspects.set(source, (aspect = new Map()))
    if (weight > (aspect.get(term) ?? 0)) aspect.set(term, weight)
  }
  const hint = (concept: string, weight: number) => put(CONCEPT_PREFIX + concept, weight, CONCEPT_PREFIX + concept)

  let text = query
  // Arithmetic written out ("2+40") has no words to match.
  if (/\d\s*[+]\s*\d/.test(text)) hint("sum", 1)
  text = removeUrls(text, () => hint("url", 1))
  // Quoted text is mostly an argument (what to echo, search for, write), not the intent.
  text = text.replace(/(^|[\s(:=])(["'`“‘])([^"'`”’]+)["'`”’](?=$|[\s),.;:!?])/g, (_m, before: string, _q, body: string) => {
    analyze(body, put, 0.3, false, MAPPED_WORD_WEIGHT)
    return `${before} `
  })
  const paths: Array<string> = []
  text = text
    .split(/\s+/)
    .map((token) => {
      const bare = trimPunctuation(token)
      if (!isPathLike(bare)) return token
      paths.push(bare)
      return " "
    })
    .join(" ")
  for (const path of paths) {
    const extension = extensionOf(path)
    if (/[*?]/.test(path)) hint("search", 0.7)
    if (extension === undefined) {
      hint("dir", 0.4)
      hint("file", 0.3)
    } else if (IMAGE_EXTENSIONS.has(extension)) {
      hint("file", 0.6)
      hint("image", 0.6)
    } else {
      hint("file", 0.6)
      hint("text", 0.3)
    }
  }
  if (new Set(paths).size >= 2) hint("multiple", 0.5)
  analyze(text, put, 1, false, MAPPED_WORD_WEIGHT)

  // What some combinations of concepts mean together, which no single word says.
  // Showing or reading a folder is listing it.
  if (weightOf(terms, "dir") >= 0.8 && weightOf(terms, "read") >= 0.5) hint("list", 0.7)
  // "add 17 and 25" is a calculation, not adding a thing.
  if (weightOf(terms, "number") >= 0.6 && weightOf(terms, "sum") > 0) hint("sum", 1)

  const deictic = splitWords(query).some((w) => DEICTIC.has(w))
  const document = context?.activeDocumentURI ? bounded(context.activeDocumentURI, MAX_RANKED_CONTEXT_CHARS) : undefined
  if (document) {
    const weight = deictic ? 0.7 : 0.3
    hint("file", weight)
    const extension = extensionOf(document)
    if (extension !== undefined && IMAGE_EXTENSIONS.has(extension)) hint("image", weight)
    if (/^file:/i.test(document)) hint("local", 0.3)
  }
  if (context?.currentWorkingDirectory) {
    hint("dir", deictic && !document ? 0.5 : 0.15)
    hint("local", 0.2)
  }
  const selection = context?.selectionText ? bounded(context.selectionText, MAX_RANKED_CONTEXT_CHARS).trim() : undefined
  if (selection) {
    hint("text", 0.2)
    if (!/\s/.test(selection) && isPathLike(selection)) hint("file", 0.4)
  }
  return { terms, aspects: [...aspects.values()], text: query.toLowerCase() }
}

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
}

const termCounts = (text: string, identifier = false): { terms: Map<string, number>; length: number } => {
  const terms = new Map<string, number>()
  const length = analyze(text, (term, weight) => terms.set(term, (terms.get(term) ?? 0) + weight), 1, identifier)
  return { terms, length }
}

/** Property names and descriptions of a schema, nested objects and array items included, bounded. */
const schemaText = (schema: unknown): { names: Array<string>; prose: Array<string> } => {
  const names: Array<string> = []
  const prose: Array<string> = []
  const visit = (node: unknown, depth: number) => {
    if (!isRecord(node) || depth > 3 || names.length > 64) return
    if (isRecord(node.properties)) {
      for (const [key, child] of Object.entries(node.properties)) {
        names.push(key)
        if (isRecord(child)) {
          if (typeof child.description === "string") prose.push(child.description)
          if (Array.isArray(child.enum)) prose.push(child.enum.filter((e) => typeof e === "string").join(" "))
        }
        visit(child, depth + 1)
      }
    }
    if (isRecord(node.items)) visit(node.items, depth + 1)
  }
  visit(schema, 0)
  return { names, prose }
}

const analyzeDocument = (source: DocumentSource): Document => {
  const description = source.description.trim()
  const firstSentence = /^[\s\S]*?[.!?](?=\s|$)/.exec(description)?.[0] ?? description
  const rest = description.slice(firstSentence.length)
  const schema = schemaText(source.inputSchema)
  // In the order of FIELDS.
  const parts = [
    termCounts(source.toolName, true),
    termCounts(firstSentence),
    termCounts(schema.names.join(" "), true),
    termCounts(`${rest} ${schema.prose.join(" ")}`),
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
    toolName: entry.toolName,
    description: description.startsWith(prefix) ? description.slice(prefix.length) : description,
    inputSchema: entry.tool.inputSchema
  }
}

interface Index {
  readonly items: ReadonlyArray<object>
  readonly documents: ReadonlyArray<Document>
  /** term -> [document index, saturated-ready pseudo term frequency] pairs, flattened. */
  readonly postings: ReadonlyMap<string, { readonly docs: Array<number>; readonly tfs: Array<number> }>
  readonly idf: ReadonlyMap<string, number>
}

// Per item (tool or entry object): analysing text is the costly part and does not depend on the list.
const documentCache = new WeakMap<object, Document>()
// Per list: lengths and frequencies depend on the whole list; a catalog is ranked many times.
const indexCache = new WeakMap<ReadonlyArray<object>, Index>()

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
  const postings = new Map<string, { docs: Array<number>; tfs: Array<number> }>()
  const df = new Map<string, number>()
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
      let posting = postings.get(term)
      if (posting === undefined) postings.set(term, (posting = { docs: [], tfs: [] }))
      posting.docs.push(i)
      posting.tfs.push(tf)
      df.set(term, (df.get(term) ?? 0) + Math.min(1, (document.presence[t] ?? 0) / DF_REFERENCE_WEIGHT))
    })
  })
  const idf = new Map<string, number>()
  for (const [term, count] of df) idf.set(term, Math.log(1 + (n - count + 0.5) / (count + 0.5)))
  return { items: [...items], documents, postings, idf }
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

const mentioned = (text: string, identifier: string): boolean => {
  let from = 0
  for (;;) {
    const at = text.indexOf(identifier, from)
    if (at < 0) return false
    const before = text[at - 1]
    const after = text[at + identifier.length]
    if ((before === undefined || !/[a-z0-9_-]/.test(before)) && (after === undefined || !/[a-z0-9_-]/.test(after))) return true
    from = at + 1
  }
}

const normalizeLimit = (k: number): number => (Number.isNaN(k) || k <= 0 ? 0 : Math.floor(Math.min(k, Number.MAX_SAFE_INTEGER)))

const rankWith = <T extends object>(
  items: ReadonlyArray<T>,
  sourceOf: (item: T) => DocumentSource,
  query: string,
  k: number,
  context: RankContext | null | undefined,
  /** Filled with the picked items' scores (0 for a tool that matched nothing), when given. */
  scoresOut?: Map<T, number>
): Array<T> => {
  const limit = Math.min(normalizeLimit(k), items.length)
  if (limit === 0) return []
  const index = indexOf(items, sourceOf)
  const { aspects, terms, text } = analyzeQuery(typeof query === "string" ? query : String(query ?? ""), context)
  const scores = new Float64Array(items.length)
  // Coordination: how much of what the query asks for a tool matches at all, each aspect counted
  // by its strongest term the tool has. Summed BM25 alone lets one strong word ("open" in
  // open_nodes) outweigh a tool that matches everything asked for.
  const coordination = new Float64Array(items.length)
  const stamp = new Int32Array(items.length)
  let askedFor = 0
  aspects.forEach((aspect, a) => {
    let known = false
    for (const [term, weight] of [...aspect].sort((x, y) => y[1] - x[1])) {
      const posting = index.postings.get(term)
      if (posting === undefined) continue
      known = true
      for (const doc of posting.docs) {
        if (stamp[doc] === a + 1) continue
        stamp[doc] = a + 1
        coordination[doc] = (coordination[doc] ?? 0) + weight
      }
    }
    // Words no tool knows (names, "webpack") are arguments: they neither help nor hurt.
    if (known) askedFor += Math.max(...aspect.values())
  })
  for (const [term, queryWeight] of terms) {
    const posting = index.postings.get(term)
    if (posting === undefined) continue
    const idf = index.idf.get(term) ?? 0
    for (let j = 0; j < posting.docs.length; j++) {
      const tf = posting.tfs[j] ?? 0
      const doc = posting.docs[j] ?? 0
      scores[doc] = (scores[doc] ?? 0) + (queryWeight * idf * tf * (K1 + 1)) / (tf + K1)
    }
  }
  const wantsDeletion = (terms.get(`${CONCEPT_PREFIX}delete`) ?? 0) >= 0.5
  const scored: Array<number> = []
  for (let i = 0; i < items.length; i++) {
    const document = index.documents[i]
    let score = scores[i] ?? 0
    if (document === undefined) continue
    if (score > 0) {
      if (askedFor > 0) score *= COORDINATION_FLOOR + ((1 - COORDINATION_FLOOR) * (coordination[i] ?? 0)) / askedFor
      if (document.nameSlots.length > 0) {
        let covered = 0
        for (const slot of document.nameSlots) {
          let best = 0
          for (const [term, weight] of slot) best = Math.max(best, Math.min(1, weight * (terms.get(term) ?? 0)))
          covered += best
        }
        score *= 1 + (NAME_COVERAGE_BOOST * covered) / document.nameSlots.length
      }
      if (document.deprecated) score *= DEPRECATED_FACTOR
      if (document.destructive && !wantsDeletion) score *= DESTRUCTIVE_FACTOR
    }
    // Naming the tool outright beats any amount of word overlap.
    if (document.mentions.some((id) => mentioned(text, id))) score = (score + 1) * 3
    scores[i] = score
    if (score > 0) scored.push(i)
  }
  scored.sort((a, b) => (scores[b] ?? 0) - (scores[a] ?? 0) || a - b)
  const picked = scored.slice(0, limit)
  if (picked.length < limit) {
    // Unmatched tools still fill the request, in their listed order.
    for (let i = 0; i < items.length && picked.length < limit; i++) if ((scores[i] ?? 0) <= 0) picked.push(i)
  }
  if (scoresOut !== undefined) for (const i of picked) scoresOut.set(items[i] as T, Math.max(0, scores[i] ?? 0))
  return picked.map((i) => items[i] as T)
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

/**
 * Builds and caches the ranking index of `entries` now (tens of milliseconds per thousand tools),
 * so that the first query after the tool list changes does not wait for it. Optional.
 */
export const prepareRanking = (entries: ReadonlyArray<CatalogEntry>): void => {
  indexOf(entries, sourceOfEntry)
}
