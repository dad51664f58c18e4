/**
 * The debug page in headless Chromium (Debian's `chromium`, driven by playwright-core; `.ci/run`
 * installs it): it shows a backend go down and come back, filters logs, opens a trace entry and an
 * orchestration. Screenshots are kept in test/artifacts/.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import type { Browser, Page } from "playwright-core"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { FIXTURE_TOOL_COUNT, fixtureBackend } from "../../support/mcpFixture.js"
import { ROOT } from "../../support/stdioClient.js"
import { call, type HttpGateway, openSession, startHttpGateway } from "../../support/httpClient.js"
import { until } from "../../support/process.js"
import { launchBrowser, skipWithoutBrowser } from "../../support/browser.js"

const SKIP = skipWithoutBrowser("debug-ui.test.ts")
const ARTIFACTS = join(ROOT, "test", "artifacts")

let gateway: HttpGateway
let debug: string
let browser: Browser
let page: Page
/** What the page's console reported as errors (a missing favicon, a script error). */
const consoleErrors: Array<string> = []

const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `debug-ui-${name}.png`), fullPage: true })

/** Waits until the API says backend `id` is ready (the page may lag by a refresh), and returns its pid. */
const readyPid = (id: string) =>
  until(
    `${id} to be ready`,
    async () => {
      const backends = (await (await fetch(`${debug}/api/backends`)).json()) as Array<{ id: string; state: string; pid?: number }>
      const backend = backends.find((b) => b.id === id)
      return backend?.state === "ready" ? backend.pid : undefined
    },
    15_000
  )

/** The state cell of a backend's row. */
const stateOf = (id: string) => page.locator(`#backends tr[data-backend="${id}"] td.state`)

beforeAll(async () => {
  if (SKIP) return
  mkdirSync(ARTIFACTS, { recursive: true })
  gateway = await startHttpGateway({
    scripted: true,
    args: ["--debug-port", "0"],
    env: { SCRIPTED_TOOL: "fx__echo" },
    config: {
      maxToolsPerRequest: 4,
      backends: [fixtureBackend("fx"), fixtureBackend("slowpoke", ["--startup-delay-ms", "3000"])]
    }
  })
  const port = await until(
    "the debug UI to listen",
    () => /debug UI at http:\/\/127\.0\.0\.1:(\d+)\//.exec(gateway.stderr())?.[1]
  )
  debug = `http://127.0.0.1:${port}`
  // Something to see: calls, an orchestration.
  const mcp = `${gateway.base}/mcp`
  const { sessionId } = await openSession(mcp)
  await call(mcp, sessionId, "c1", "tools/call", { name: "fx__echo", arguments: { word: "kiwi" } })
  await call(mcp, sessionId, "o1", "agentify/orchestrateTask", { query: "please echo the word mango" })
  browser = await launchBrowser()
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } })
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(`${message.text()} ${JSON.stringify(message.location())}`)
  })
  page.on("pageerror", (error) => consoleErrors.push(error.message))
  await page.goto(`${debug}/`)
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await gateway?.close()
})

describe.skipIf(SKIP)("the debug page in a browser", () => {
  it("shows the backends, and one going down and coming back", async () => {
    await expectText(stateOf("fx"), "ready")
    const pid = await readyPid("slowpoke")
    await expectText(stateOf("slowpoke"), "ready")
    await shot("backends")
    process.kill(pid, "SIGKILL")
    // Down: restarting, then starting for 3 s (its start-up delay).
    await until("the page to show slowpoke down", async () => (await stateOf("slowpoke").textContent()) !== "ready", 10_000, 50)
    await shot("backend-down")
    await expectText(stateOf("slowpoke"), "ready", 15_000)
    const restarts = await page.locator('#backends tr[data-backend="slowpoke"] td').nth(7).textContent()
    expect(Number(restarts)).toBeGreaterThanOrEqual(1)
  }, 30_000)

  it("filters logs by level and by search", async () => {
    // A warning of its own to find, whatever ran before: slowpoke killed (it comes back by itself).
    process.kill(await readyPid("slowpoke"), "SIGKILL")
    await until("the crash to be logged", async () => {
      const warnings = (await (await fetch(`${debug}/api/logs?level=warn&limit=5000`)).json()) as Array<{ fields: unknown }>
      return warnings.some((w) => JSON.stringify(w).includes("slowpoke"))
    })
    // The page as a person opens it now: the logs so far, then live ones.
    await page.reload()
    await page.click('nav button[data-tab="logs"]')
    await page.selectOption("#log-level", "warn")
    await until("warnings only", async () => {
      const rows = await page.locator("#log-list .row").allTextContents()
      return rows.length > 0 && rows.every((r) => / (warn|error|fatal) /.test(r))
    })
    // The crash was logged as a warning with its reason.
    expect((await page.locator("#log-list .row").allTextContents()).join("\n")).toMatch(/slowpoke|crashed|killed/)
    await page.selectOption("#log-level", "trace")
    await page.fill("#log-search", "backend ready")
    await until("the search to filter", async () => {
      const rows = await page.locator("#log-list .row").allTextContents()
      return rows.length > 0 && rows.every((r) => r.includes("backend ready"))
    })
    await shot("logs")
  }, 20_000)

  it("opens a trace entry's JSON", async () => {
    await page.click('nav button[data-tab="trace"]')
    await page.fill("#trace-filter", "tools/call")
    const row = page.locator("#trace-list .row", { hasText: "#c1" }).first()
    await row.waitFor()
    await row.click()
    await until("the JSON to show", async () => ((await page.textContent("#trace-detail")) ?? "").includes('"kiwi"'))
    expect(await page.textContent("#trace-detail")).toContain('"jsonrpc": "2.0"')
    await shot("trace")
  }, 20_000)

  it("reads the trace newest first on asking; the server/discover probe is not shown as a failure; errors are counted", async () => {
    await page.click('nav button[data-tab="trace"]')
    await page.fill("#trace-filter", "")
    const firstRow = () => page.locator("#trace-list .row").first().textContent()
    const oldest = await firstRow()
    await page.check("#trace-newest")
    await until("the newest entry on top", async () => (await firstRow()) !== oldest)
    await page.fill("#trace-filter", "server/discover")
    const probe = page.locator("#trace-list .row", { hasText: "probe" }).first()
    await probe.waitFor()
    expect(await probe.getAttribute("class")).not.toContain("err")
    await page.fill("#trace-filter", "")
    await page.uncheck("#trace-newest")
    // A failed call shows in the backend's errors column.
    const mcp = `${gateway.base}/mcp`
    await call(mcp, (await openSession(mcp)).sessionId, "broken", "tools/call", { name: "fx__fail", arguments: {} })
    await until(
      "the error counted",
      async () => Number(await page.locator('#backends tr[data-backend="fx"] td').nth(9).textContent()) >= 1
    )
    // ... and in its last error column, with what the call answered.
    await until("the last error shown", async () =>
      ((await page.locator('#backends tr[data-backend="fx"] td').nth(12).textContent()) ?? "").startsWith("tools/call: ")
    )
  }, 20_000)

  it("the console stays clean (no 404 for a favicon, no script error)", () => {
    expect(consoleErrors).toEqual([])
  })

  it("opens an orchestration: query, ranked offer, choice, plan, result", async () => {
    await page.click('nav button[data-tab="orchestrations"]')
    const row = page.locator("#orch-list .row", { hasText: "mango" }).first()
    await row.waitFor()
    await row.click()
    const detail = page.locator("#orch-detail dl")
    await detail.waitFor()
    const text = (await detail.textContent()) ?? ""
    expect(text).toContain("please echo the word mango")
    expect(text).toContain("4 offered")
    expect(text).toMatch(/fx__echo {2}\d/)
    expect(text).toContain("fx tools/call")
    expect(text).toContain("mango")
    await shot("orchestration")
  }, 20_000)
})

describe.skipIf(SKIP)("the debug page's addresses and a call the user agreed to", () => {
  it("each tab has an address: opened from it, kept in it", async () => {
    await page.goto(`${debug}/#orchestrations`)
    await until("the orchestrations tab open", async () =>
      (await page.getAttribute("#orchestrations", "class"))?.includes("active")
    )
    expect(await page.getAttribute('nav button[data-tab="orchestrations"]', "class")).toContain("active")
    expect(await page.getAttribute("#logs", "class")).not.toContain("active")
    await page.click('nav button[data-tab="trace"]')
    expect(new URL(page.url()).hash).toBe("#trace")
    await page.goto(`${debug}/#logs`)
    await until("the logs tab open", async () => (await page.getAttribute("#logs", "class"))?.includes("active"))
  }, 20_000)

  it("a step that ran once the user agreed shows as approved, and an orchestration without an explanation has no such row", async () => {
    // A gateway of its own whose model calls a tool that writes, and confirmTools "writes": the
    // client is asked, and agrees.
    const own = await startHttpGateway({
      scripted: true,
      args: ["--debug-port", "0"],
      env: { SCRIPTED_TOOL: "fx__add_tool", SCRIPTED_ARGUMENTS: JSON.stringify({ name: "papaya" }) },
      config: { confirmTools: "writes", backends: [fixtureBackend("fx")] }
    })
    const client = new Client({ name: "agrees", version: "1" }, { capabilities: { elicitation: {} } })
    try {
      const port = await until("its debug UI", () => /debug UI at http:\/\/127\.0\.0\.1:(\d+)\//.exec(own.stderr())?.[1])
      let asked = 0
      client.setRequestHandler(ElicitRequestSchema, async () => {
        asked++
        return { action: "accept", content: {} }
      })
      await client.connect(new StreamableHTTPClientTransport(new URL(`${own.base}/mcp`)))
      await client.callTool({ name: "agentify_orchestrate", arguments: { query: "add a tool named papaya" } })
      expect(asked).toBe(1)
      const ownPage = await browser.newPage({ viewport: { width: 1400, height: 900 } })
      try {
        await ownPage.goto(`http://127.0.0.1:${port}/`)
        await ownPage.click('nav button[data-tab="orchestrations"]')
        const row = ownPage.locator("#orch-list .row", { hasText: "papaya" }).first()
        await row.waitFor()
        await row.click()
        const detail = ownPage.locator("#orch-detail dl")
        await detail.waitFor()
        const text = (await detail.textContent()) ?? ""
        expect(text).toMatch(/fx__add_tool \{"name":"papaya"\} {2}approved \d+ ms {2}\(the user agreed\)/)
        expect(await ownPage.locator("#orch-detail dt", { hasText: "explanation" }).count()).toBe(0)
      } finally {
        await ownPage.close()
      }
    } finally {
      await client.close()
      await own.close()
    }
  }, 40_000)
})

describe.skipIf(SKIP)("the debug page at scale", () => {
  // Bounded by its work (2,500 calls, then 10,000 entries loaded and filtered): its timeouts (10 min,
  // 2 min a step of the page's) only stop a hang, well beyond what a busy machine takes.
  // A gateway and page of its own: filling the 10,000 kept trace entries pushes out what the other
  // tests look for, and tests run in any order.
  let big: HttpGateway
  let bigPage: Page
  beforeAll(async () => {
    big = await startHttpGateway({
      args: ["--debug-port", "0"],
      // A thousand tools: the page must not list them all anywhere.
      config: { backends: [fixtureBackend("wide", ["--tools", "1000"])] }
    })
    const port = await until("the debug UI to listen", () => /debug UI at http:\/\/127\.0\.0\.1:(\d+)\//.exec(big.stderr())?.[1])
    bigPage = await browser.newPage({ viewport: { width: 1400, height: 900 } })
    await bigPage.goto(`http://127.0.0.1:${port}/`)
  }, 600_000)
  afterAll(async () => {
    await bigPage?.close()
    await big?.close()
  })

  it("10,000 trace entries and 1,000 tools: only the rows in view are in the page, and filtering works", async () => {
    const page = bigPage
    const mcp = `${big.base}/mcp`
    const { sessionId } = await openSession(mcp)
    // Each call is four entries (client in and out, backend out and in): fill the 10,000 kept.
    for (let batch = 0; batch < 25; batch++) {
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          call(mcp, sessionId, `bulk-${batch}-${i}`, "tools/call", { name: "wide__tool_7", arguments: {} })
        )
      )
    }
    await page.reload()
    await expectText(page.locator('#backends tr[data-backend="wide"] td').nth(4), String(1000 + FIXTURE_TOOL_COUNT))
    await page.click('nav button[data-tab="trace"]')
    await until("10,000 entries loaded", async () => (await page.textContent("#trace-count")) === "10000 of 10000", 120_000)
    expect(await page.locator("#trace-list .row").count()).toBeLessThan(100)
    await page.fill("#trace-filter", "wide")
    // The backend's half of each call (to and from wide): fewer than all, more than none.
    const shown = await until(
      "the filter to apply",
      async () => {
        const count = Number(/^(\d+) of 10000$/.exec((await page.textContent("#trace-count")) ?? "")?.[1] ?? "0")
        return count > 0 && count < 10000 ? count : undefined
      },
      120_000
    )
    expect(shown).toBeGreaterThanOrEqual(4000)
    const rows = await page.locator("#trace-list .row").allTextContents()
    expect(rows.length).toBeGreaterThan(0)
    expect(rows.length).toBeLessThan(100)
    expect(rows.every((row) => row.includes("wide"))).toBe(true)
    await page.fill("#trace-filter", "no-such-peer")
    await until("nothing to match", async () => (await page.textContent("#trace-count")) === "0 of 10000", 120_000)
    await page.screenshot({ path: join(ARTIFACTS, "debug-ui-trace-10k.png"), fullPage: true })
  }, 600_000)
})

/** Waits until `locator`'s text is `text`. */
const expectText = (locator: ReturnType<Page["locator"]>, text: string, ms = 10_000) =>
  until(`"${text}"`, async () => (await locator.textContent()) === text, ms, 50)
