/**
 * How the ranking reads text: the vocabulary of tool verbs and nouns (synonyms, phrases and idioms
 * mapped to shared concepts), stop words, a light stemmer, identifier splitting, and the query's
 * own hints (paths, globs, URLs, the IDE context). The same analysis serves tools and queries.
 */

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
export const STOP_WORDS = new Set(
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

export const CONCEPT_PREFIX = "#"
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

/** Built on the first query or tool analysed, not while the gateway starts. */
let built: ReturnType<typeof buildVocabulary> | undefined
const vocabulary = () => (built ??= buildVocabulary())

/**
 * Lowercase words of a text, split at anything but letters and digits. Identifiers (tool and
 * parameter names) are also split at camelCase humps; prose is not, or "TypeScript" and "GitHub"
 * would turn into "type script" and "git hub".
 */
export const splitWords = (text: string, identifier = false): Array<string> => {
  let t = identifier ? text.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/(?<![A-Z])([A-Z]+)([A-Z][a-z])/g, "$1 $2") : text
  // "what's" -> "whats", "Bob's" -> "bobs": one word, as people mean it.
  if (t.includes("'") || t.includes("\u2019")) t = t.replace(/(\w)['\u2019](\w)/g, "$1$2")
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
export const analyze = (text: string, sink: Sink, scale = 1, identifier = false, mappedWordWeight = 1): number => {
  const vocab = vocabulary()
  const words = splitWords(text, identifier)
  const inIdiom = new Set<number>()
  // Phrases are looked for both as written and with stop words skipped ("open an issue").
  const sequences = words.some((w) => vocab.phraseStarts.has(w)) ? phraseSequences(words) : []
  sequences.forEach((sequence, skipping) => {
    for (let i = 0; i < sequence.length; i++) {
      const first = sequence[i] ?? 0
      let phrase = words[first] ?? ""
      if (!vocab.phraseStarts.has(phrase)) continue
      for (let n = 2; n <= vocab.longestPhrase && i + n <= sequence.length; n++) {
        const last = sequence[i + n - 1] ?? 0
        phrase += ` ${words[last]}`
        const concepts = vocab.phrases.get(phrase)
        // Without a skipped stop word, the phrase was already seen as written.
        if (concepts === undefined || (skipping === 1 && last - first === n - 1)) continue
        for (const [term, weight] of concepts) sink(term, scale * weight, phrase)
        if (vocab.idioms.has(phrase)) for (let j = i; j < i + n - 1; j++) inIdiom.add(sequence[j] ?? 0)
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
    const concepts = vocab.words.get(word) ?? vocab.words.get(stemmed)
    sink(stemmed, concepts ? scale * mappedWordWeight : scale, stemmed)
    if (concepts) for (const [term, weight] of concepts) sink(term, scale * weight, stemmed)
  }
  return count
}

const IMAGE_EXTENSIONS = new Set(
  "png jpg jpeg gif webp bmp svg ico tif tiff heic avif mp3 wav ogg flac m4a aac mp4 mov webm avi mkv".split(" ")
)

const extensionOf = (path: string): string | undefined => {
  const query = path.search(/[?#]/)
  const match = /\.([a-z0-9]{1,6})$/i.exec(query < 0 ? path : path.slice(0, query))
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

export const bounded = (text: string, max: number): string => (text.length <= max ? text : text.slice(0, max))

/** `name.ext`, where the extension holds a letter and the name ends in a word character or `*`. */
const hasFileExtension = (token: string): boolean => {
  const dot = token.lastIndexOf(".")
  if (dot <= 0 || dot === token.length - 1) return false
  const extension = token.slice(dot + 1)
  return (
    /^[a-z0-9]+$/i.test(extension) &&
    /[a-z]/i.test(extension) &&
    /[\w*]/.test(token.charAt(dot - 1)) &&
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
  while (start < end && OPENERS.has(token.charAt(start))) start++
  while (end > start && CLOSERS.has(token.charAt(end - 1))) end--
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
    while (start > from && isSchemeChar(text.charAt(start - 1))) start--
    // The scheme starts with a letter, at a word boundary.
    while (start < at && !/[a-z]/i.test(text.charAt(start))) start++
    // Not a URL: checked before the scan to its end, or "://://..." would scan to the end from each.
    if (
      start === at ||
      (start > 0 && /\w/.test(text.charAt(start - 1))) ||
      at + 3 >= text.length ||
      /\s/.test(text.charAt(at + 3))
    ) {
      out += text.slice(from, at + 3)
      from = at + 3
      continue
    }
    let end = at + 3
    while (end < text.length && !/\s/.test(text.charAt(end))) end++
    found()
    out += `${text.slice(from, start)} `
    from = end
  }
  return out + text.slice(from)
}

/** Concepts that say what to do; without one, a query names only things. */
const ACTIONS = ["read", "write", "create", "edit", "delete", "move", "copy", "list", "tree", "search", "info", "compress"]

/** The opening of an SQL statement; linear (no nested repetition), bounded by the query's length. */
const SQL_STATEMENT =
  /\b(?:select\s[^;]{0,200}?\sfrom|insert\s+into|delete\s+from|update\s+\w+\s+set|create\s+table|alter\s+table|drop\s+table)\b/i

/** What can name a tool outright: a run of the characters of exposed tool names, lowercased. */
export const IDENTIFIER_TOKENS = /[a-z0-9_-]+/g

const weightOf = (terms: ReadonlyMap<string, number>, concept: string): number => terms.get(CONCEPT_PREFIX + concept) ?? 0

interface QueryTerms {
  /** term -> weight */
  readonly terms: ReadonlyMap<string, number>
  /** What the query asks for, one entry per word, phrase or hint: the terms that stand for it. */
  readonly aspects: ReadonlyArray<ReadonlyMap<string, number>>
  /** The query lowercased, to notice a tool named outright. */
  readonly text: string
  /** Its identifier-like tokens (runs of letters, digits, `_` and `-`), lowercased: what can name a tool. */
  readonly tokens: ReadonlySet<string>
}

/**
 * The most words and phrases of a query that ranking reads (its hints aside): a request of a few
 * sentences has a few dozen; a pasted list of hundreds of words would make every ranking pass walk
 * hundreds of postings for what is no request. Past it, words not yet seen are left out.
 */
export const MAX_QUERY_ASPECTS = 64

/**
 * The last queries analysed: a task's ranking reads the same request in several passes (the whole
 * request, its servers, each server's tools), and a search of 2,000 characters is most of its cost.
 */
const analysed = new Map<string, QueryTerms>()
const ANALYSED_KEPT = 64

/** `analyzeQuery`, remembered for the last few queries (its result is never changed by a reader). */
export const analyzeQuery = (fullQuery: string, context: RankContext | null | undefined): QueryTerms => {
  const query = bounded(fullQuery, MAX_RANKED_QUERY_CHARS)
  const key =
    context === null || context === undefined
      ? query
      : // What the analysis reads of the context, no more (a pasted megabyte is not kept as a key).
        JSON.stringify([
          query,
          bounded(context.activeDocumentURI ?? "", MAX_RANKED_CONTEXT_CHARS),
          Boolean(context.currentWorkingDirectory),
          bounded(context.selectionText ?? "", MAX_RANKED_CONTEXT_CHARS)
        ])
  let terms = analysed.get(key)
  if (terms === undefined) {
    if (analysed.size >= ANALYSED_KEPT) analysed.clear()
    analysed.set(key, (terms = analyzeUncached(query, context)))
  }
  return terms
}

const analyzeUncached = (query: string, context: RankContext | null | undefined): QueryTerms => {
  const terms = new Map<string, number>()
  const aspects = new Map<string, Map<string, number>>()
  // max, not sum: saying "folder" and "directory" is not twice the evidence.
  const put: Sink = (term, weight, source) => {
    let aspect = aspects.get(source)
    if (aspect === undefined) {
      // Hints (`#...`) are few and always read; words past the bound are not.
      if (aspects.size >= MAX_QUERY_ASPECTS && !source.startsWith(CONCEPT_PREFIX)) return
      aspects.set(source, (aspect = new Map()))
    }
    if (weight > (terms.get(term) ?? 0)) terms.set(term, weight)
    if (weight > (aspect.get(term) ?? 0)) aspect.set(term, weight)
  }
  const hint = (concept: string, weight: number) => put(CONCEPT_PREFIX + concept, weight, CONCEPT_PREFIX + concept)

  let text = query
  // Arithmetic written out ("2+40") has no words to match.
  if (/\d\s*[+]\s*\d/.test(text)) hint("sum", 1)
  // A statement of SQL is a database query; its words ("count", "users") are its argument.
  const sql = SQL_STATEMENT.exec(text)
  if (sql !== null) {
    hint("sql", 1)
    analyze("sql query", put, 0.8, false, MAPPED_WORD_WEIGHT)
    analyze(text.slice(sql.index), put, 0.3, false, MAPPED_WORD_WEIGHT)
    text = text.slice(0, sql.index)
  }
  text = removeUrls(text, () => hint("url", 1))
  // Quoted text is mostly an argument (what to echo, search for, write), not the intent.
  text = text.replace(
    /(^|[\s(:=])(["'`\u201c\u2018])([^"'`\u201d\u2019]+)["'`\u201d\u2019](?=$|[\s),.;:!?])/g,
    (_m, before: string, _q, body: string) => {
      analyze(body, put, 0.3, false, MAPPED_WORD_WEIGHT)
      return `${before} `
    }
  )
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
    if (/[\\/]$/.test(path)) {
      // "scripts/": written as a folder.
      hint("dir", 0.8)
    } else if (extension === undefined) {
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
  // A folder named with no action on it ("which files live in scripts/?") asks what is in it.
  else if (weightOf(terms, "dir") >= 0.8 && ACTIONS.every((action) => weightOf(terms, action) < 0.5)) hint("list", 0.6)
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
  const lower = query.toLowerCase()
  return { terms, aspects: [...aspects.values()], text: lower, tokens: new Set(lower.match(IDENTIFIER_TOKENS)) }
}
