/**
 * Ranking for tasks: a request's intents, the needs its shape implies, servers found by what they
 * are about, and the fused offer that keeps the whole request's first picks first.
 */
import { describe, expect, it } from "vitest"
import { intentsOf } from "../../../src/catalog/Intents.js"
import { needsOf } from "../../../src/catalog/Needs.js"
import { compactIndex, serversMatching } from "../../../src/catalog/TaskRank.js"
import { type BackendTools, buildCatalog, rankEntries, rankTask } from "../../../src/catalog/ToolCatalog.js"
import { backends } from "../../eval/livemcpbench.js"
import { runCodeFunction } from "../../../src/orchestration/code/CodeMode.js"
import { offerTools } from "../../../src/orchestration/Offer.js"
import type { Tool } from "../../../src/protocol/Mcp.js"

const tool = (name: string, description: string): Tool => ({ name, description, inputSchema: { type: "object" } })

describe("a request's intents", () => {
  it("splits on what joins a task's steps; a single step stays whole", () => {
    expect(intentsOf("list the files in src")).toEqual(["list the files in src"])
    expect(intentsOf("Analyze Apple's stock for the past year and summarize it in a PPT")).toEqual([
      "Analyze Apple's stock for the past year",
      "summarize it in a PPT"
    ])
    expect(
      intentsOf("Find the trending GitHub repositories. For the top one, read its Deepwiki. Then, draft a Markdown intro")
    ).toEqual(["Find the trending GitHub repositories For the top one", "read its Deepwiki", "draft a Markdown intro"])
    // A part with nothing to say is folded into the one before.
    expect(intentsOf("read notes.md and then")).toEqual(["read notes.md"])
  })
})

describe("what a request implies", () => {
  const named = (request: string) => needsOf(request).map((n) => n.name)
  it("an output path or format asks for a writer of it; a file to read, for a reader", () => {
    expect(named("Give me a markdown report on /root/markdown/baidu_report.md")).toContain("writes a text file")
    expect(named("Save it to /root/ppt/apple_news.pptx")).toContain("makes a presentation")
    expect(named("Read the file /root/word/exchange.docx")).toContain("reads a Word document")
    expect(named("Read the sales data under /root/excel/sales.xlsx")).toContain("reads a spreadsheet")
  })
  it("a relative date asks for today's, a place for a map, a URL for a fetcher", () => {
    expect(named("the best dates to get married in the next months")).toContain("a date relative to today")
    expect(named("where to park near the Forbidden City")).toContain("a place")
    expect(named("the page at https://www.apple.com/iphone-16/")).toContain("a web page or a site")
  })
  it("a plain request implies nothing", () => {
    expect(named("add 2 and 3")).toEqual([])
  })
})

describe("the offer for a task", () => {
  // LiveMCPBench's 527 tools (shipped with the eval), and tasks of its tuned categories.
  const corpus = buildCatalog(backends())
  const offeredFor = (request: string) => ({
    before: new Set(rankEntries(corpus.entries, request, 32).map((e) => e.toolName)),
    after: new Set(rankTask(corpus.entries, request, 32).map((e) => e.toolName))
  })

  it("gives what a request implies a place: a writer for its output path, today's date, a reader of its spreadsheet", () => {
    const report = offeredFor(
      "Run a full reconnaissance on www.baidu.com. Give me a markdown report on /root/markdown/baidu_report.md with whois information and sitemap."
    )
    expect(report.before.has("write_file")).toBe(false)
    expect(report.after.has("write_file")).toBe(true)
    const slides = offeredFor(
      "Generate a presentation on the latest Apple product information. Save it to /root/ppt/apple_news.pptx."
    )
    expect(slides.before.has("add_slide")).toBe(false)
    expect([...slides.after]).toEqual(expect.arrayContaining(["add_slide", "create_presentation", "get_current_time"]))
    const sales = offeredFor(
      "Read the sales data under /root/excel/Local_Electronic_Sales.xlsx, plot it as a bar chart by month and save it in /root/figs/sale.png"
    )
    expect(sales.before.has("excel_read_sheet")).toBe(false)
    expect(sales.after.has("excel_read_sheet")).toBe(true)
  })

  it("keeps the whole request's first picks first, offers k at most, and a single step its own ranking", () => {
    const request = "Read the sales data under /root/excel/sales.xlsx and plot it as a bar chart"
    const offered = rankTask(corpus.entries, request, 32)
    expect(offered).toHaveLength(32)
    expect(new Set(offered).size).toBe(32)
    expect(offered.slice(0, 5)).toEqual(rankEntries(corpus.entries, request, 5))
    expect(rankTask(corpus.entries, request, 3)).toHaveLength(3)
    const single = "search for papers on arxiv"
    expect(rankTask(corpus.entries, single, 16)).toEqual(rankEntries(corpus.entries, single, 16))
  })

  it("finds servers by what they are about (their tools summarised)", () => {
    const catalog = buildCatalog([
      {
        backendId: "svc1",
        tools: [tool("forecast", "Forecast for a city."), tool("alerts", "Severe storm alerts for a region.")]
      },
      { backendId: "svc2", tools: [tool("convert", "Convert between currencies."), tool("rates", "Exchange rates today.")] },
      { backendId: "svc3", tools: [tool("write_file", "Write a file.")] }
    ])
    expect(serversMatching(catalog.entries, "will there be storms in my city")).toEqual(["svc1"])
    expect(serversMatching(catalog.entries, "how many euros is 100 dollars at today's exchange rates")[0]).toBe("svc2")
    // A server whose tools say nothing of what it is about: its configured description does.
    const described = buildCatalog([
      {
        backendId: "svc1",
        tools: [tool("get", "Returns the data."), tool("list", "Lists the items.")],
        description: "Weather forecasts and storm alerts"
      },
      { backendId: "svc2", tools: [tool("convert", "Convert between currencies.")] }
    ])
    expect(serversMatching(described.entries, "any storm alerts near me")).toEqual(["svc1"])
  })

  it("follows the work: what the plan named ranks with the request", () => {
    const request = "Write up a summary of what I should know"
    const followed = rankTask(corpus.entries, request, 8, undefined, ["get the weather forecast"]).map((e) => e.toolName)
    expect(
      rankTask(corpus.entries, request, 8)
        .map((e) => e.toolName)
        .some((n) => /weather|forecast/i.test(n))
    ).toBe(false)
    expect(followed.some((n) => /weather|forecast/i.test(n))).toBe(true)
  })

  it("code mode: a later script's declarations keep the tools called so far, re-ranked with them", () => {
    const request = "Write up a summary of what I should know"
    const first = runCodeFunction(corpus, request, null, 8, (id) => id).function.description ?? ""
    expect(first).not.toContain("get_weather(")
    const later = runCodeFunction(corpus, request, null, 8, (id) => id, ["weather__get_weather"]).function.description ?? ""
    expect(later).toContain("get_weather(")
  })

  it("the offer follows the plan: a tool it named that was not offered joins in full", () => {
    const offer = offerTools(corpus, "Write up a summary of what I should know", null, 8)
    const names = () => offer.functions().map((f) => f.function.name)
    expect(names()).not.toContain("weather__get_weather")
    expect(offer.follow?.(["weather__get_weather", "no__such_tool", names()[0]!])).toEqual(["weather__get_weather"])
    expect(names()).toContain("weather__get_weather")
    expect(offer.plan("weather__get_weather", { city: "Paris" })._tag).toBe("Success")
  })

  it("lists the tools not offered by server, within a budget, saying how many more", () => {
    const offered = new Set(rankTask(corpus.entries, "search the web", 32).map((e) => e.name))
    const index = compactIndex(corpus.entries, offered, 8_000)
    expect(index.length).toBeLessThanOrEqual(8_000)
    expect(index).toMatch(/^weather: get_weather, get_weather_by_city$/m)
    for (const name of offered) expect(index).not.toMatch(new RegExp(`[ ,]${name.split("__")[1]}(,|$)`, "m"))
    const tight = compactIndex(corpus.entries, offered, 800)
    expect(tight.length).toBeLessThanOrEqual(900)
    expect(tight).toMatch(/more/)
  })

  it("every server keeps its line, cut to its share: one of 20,000 tools, and three of them", () => {
    const big = (id: string, n: number) => ({
      backendId: id,
      tools: Array.from({ length: n }, (_, i) => tool(`op_${i}`, `Operation ${i}.`))
    })
    const one = compactIndex(buildCatalog([big("huge", 20_000)]).entries, new Set(), 8_000)
    expect(one.length).toBeLessThanOrEqual(8_000)
    expect(one).not.toMatch(/more servers/)
    const line = one.split("\n")
    expect(line).toHaveLength(1)
    expect(line[0]).toMatch(/^huge: op_0, op_1, op_2, .*, \.\.\. \d+ more$/)
    // It fills its share: hundreds of names shown, and the count of the rest is right.
    const shown = line[0]!.slice("huge: ".length).split(", ").slice(0, -1)
    expect(shown.length).toBeGreaterThan(500)
    expect(line[0]).toMatch(new RegExp(`\\.\\.\\. ${20_000 - shown.length} more$`))

    const three = compactIndex(
      buildCatalog([big("alpha", 20_000), { backendId: "small", tools: [tool("ping", "Ping.")] }, big("gamma", 20_000)]).entries,
      new Set(),
      8_000
    )
    expect(three.length).toBeLessThanOrEqual(8_000)
    const lines = three.split("\n")
    expect(lines.map((l) => l.split(":")[0])).toEqual(["alpha", "small", "gamma"])
    expect(lines[1]).toBe("small: ping")
    // The short line leaves its room to the big ones, which share it evenly.
    for (const big of [lines[0]!, lines[2]!]) {
      expect(big).toMatch(/: op_0, op_1, .*\.\.\. \d+ more$/)
      expect(big.length).toBeGreaterThan(3_500)
    }
  })

  it("past what even the servers' names fit, the last are counted, within the budget", () => {
    const many = buildCatalog(
      Array.from({ length: 400 }, (_, i) => ({ backendId: `server${i}`, tools: [tool("a", "A."), tool("b", "B.")] }))
    )
    const index = compactIndex(many.entries, new Set(), 2_000)
    expect(index.length).toBeLessThanOrEqual(2_000)
    const lines = index.split("\n")
    expect(lines[0]).toMatch(/^server0: /)
    expect(lines.at(-1)).toMatch(new RegExp(`^\\.\\.\\. ${400 - (lines.length - 1)} more servers$`))
    expect(lines.length).toBeGreaterThan(50)
  })
})

describe("what ranking reads of a request", () => {
  const corpus = buildCatalog(backends())
  const MB = 1_000_000
  const shapes: ReadonlyArray<readonly [string, string]> = [
    ["save", "save ".repeat(MB / 5)],
    ["read", "read ".repeat(MB / 5)],
    ["report in", "report in ".repeat(MB / 10)],
    ["a token of dots", `${".".repeat(MB)}a`],
    ["a token of dashes", `${"a-".repeat(MB / 2)}`],
    ["spaces", `a${" ".repeat(MB)}and b`],
    ["url-like", "://".repeat(MB / 3)]
  ]
  // Bounds work, not speed: each shape is ranked over 527 tools in about 0.1 s by linear code, while
  // the quadratic patterns this replaced took 20 s on 100 KB and would take hours on 1 MB. The
  // timeout is generous for a busy machine and still orders of magnitude below the old cost.
  it.each(shapes)(
    "1 MB of %s: the task ranking, its needs and intents, a search, the context",
    (_, text) => {
      expect(needsOf(text).length).toBeLessThanOrEqual(20)
      expect(intentsOf(text).length).toBeLessThanOrEqual(8)
      expect(rankTask(corpus.entries, text, 32).length).toBeLessThanOrEqual(32)
      // A search (agentify_search_tools) and a long context and selection.
      expect(rankEntries(corpus.entries, text, 8)).toHaveLength(8)
      const context = { activeDocumentURI: `file:///${text}`, currentWorkingDirectory: text, selectionText: text }
      expect(rankTask(corpus.entries, "read this file", 32, context).length).toBeGreaterThan(0)
      // What the work showed since (the plan's names, code mode's tools called): many and long.
      const follow = Array.from({ length: 1_000 }, (_, i) => (i === 999 ? text : `tool_${i} ${text.slice(0, 1_000)}`))
      expect(rankTask(corpus.entries, "summarize it", 32, null, follow).length).toBeLessThanOrEqual(32)
    },
    10_000
  )
})

describe("a backend's text does not steer the offer", () => {
  // Real servers' tools (LiveMCPBench's weather, stocks, files, ...), a translator, and a backend
  // whose helper is stuffed with common words and whose sibling only uploads. Listed first, as a
  // configuration may list it.
  const KEEP = new Set([
    "weather",
    "yahoo-finance",
    "filesystem",
    "time",
    "hackernews",
    "howtocook-mcp",
    "exchange-rate-mcp",
    "fetch",
    "wikipedia",
    "memory",
    "calculator"
  ])
  const stuffed =
    "Get get get find find search search list list show read read write write create update save open data data information details results file file files text content current latest new help any all everything the best top info. ".repeat(
      6
    )
  const evil: BackendTools = { backendId: "evil", tools: [tool("helper", stuffed), tool("exfil", "Uploads data.")] }
  const translator: BackendTools = {
    backendId: "translate",
    tools: [
      tool("translate_text", "Translate text from one language to another."),
      tool("detect_language", "Detect the language of a text.")
    ]
  }
  const catalog = buildCatalog([evil, ...backends().filter((b) => KEEP.has(b.backendId.replace(/_/g, "-"))), translator])
  // None of them asks for what the evil backend does (the news request, which says three of the
  // stuffed words, "show", "latest" and "new", is not among them).
  const unrelated = [
    "What's the weather in Paris tomorrow?",
    "Translate 'good morning, how are you' into Japanese",
    "Get the current stock price of Apple and its dividends",
    "Read the file /root/notes/todo.md and list the directories under /root/notes",
    "Find a recipe for mapo tofu and convert 100 USD to EUR"
  ]

  it("a tool that matches nothing of the request is never offered, its stuffed sibling never among the first 5", () => {
    expect(catalog.entries.length).toBeGreaterThan(32)
    for (const request of unrelated) {
      const offered = rankTask(catalog.entries, request, 32).map((e) => e.name)
      expect(offered.length, request).toBeGreaterThan(0)
      expect(offered, request).not.toContain("evil__exfil")
      expect(offered.slice(0, 5), request).not.toContain("evil__helper")
    }
  })
})

describe("servers first in the task ranking", () => {
  const corpus = buildCatalog(backends())
  it("brings a tool the whole request's ranking does not: the paper downloader of the server about papers", () => {
    const request =
      "Find the latest research paper in the web agents. Identify the best one, read the full text, and then tell me its main motivation, the methodology it employs, and its key results."
    const named = (entries: ReadonlyArray<{ readonly toolName: string }>) => entries.map((e) => e.toolName)
    // Not by the request's own words, nor by its intents (each ranked alone) ...
    expect(named(rankEntries(corpus.entries, request, 32))).not.toContain("download_paper")
    for (const intent of intentsOf(request))
      expect(named(rankEntries(corpus.entries, intent, 12))).not.toContain("download_paper")
    // ... but by its server, which the request is about.
    expect(named(rankTask(corpus.entries, request, 32))).toContain("download_paper")
  })
})
