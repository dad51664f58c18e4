/**
 * The debug page with 70 backends (issue 64): the running ones first, the two idle states apart
 * ("not started (remembered)" and "stopped (idle)", as the API says them), a filter that narrows
 * the rows, the sessions with their clients, and the logs one click away above the rows.
 *
 * Cheap on a busy machine: the 70 are the dependency-free fixture server, met once (their tools
 * remembered in a state directory), then listed from memory by the gateway under test, which runs
 * only the three a client calls.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { existsSync, mkdirSync, readdirSync } from "node:fs"
import { join } from "node:path"
import type { Browser, Page } from "playwright-core"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { ROOT, tempDir } from "../../support/stdioClient.js"
import { type HttpGateway, startHttpGateway } from "../../support/httpClient.js"
import { until } from "../../support/process.js"
import { launchBrowser, skipWithoutBrowser } from "../../support/browser.js"

const SKIP = skipWithoutBrowser("debug-many.test.ts")
const ARTIFACTS = join(ROOT, "test", "artifacts")

const COUNT = 70
const ids = Array.from({ length: COUNT }, (_, i) => `s${String(i).padStart(2, "0")}`)
/** Called, and kept running (the default idleMs is minutes). */
const RUNNING = ["s41", "s57"]
/** Called, then stopped after its own short idleMs. */
const NAPPER = "s23"
/** A value the page must never show (a backend's env value is a secret). */
const SECRET = "sk-debugpage-0123456789abcdef"
const config = {
  backends: ids.map((id) =>
    fixtureBackend(id, [], {
      ...(id === NAPPER ? { idleMs: 300 } : {}),
      ...(id === "s05" ? { env: { API_TOKEN: SECRET } } : {})
    })
  )
}

interface BackendView {
  readonly id: string
  readonly state: string
  readonly idle?: string
  readonly idleSince?: number
}

let gateway: HttpGateway
let debug: string
let client: Client
let browser: Browser
let page: Page

const get = async (path: string): Promise<any> => (await fetch(`${debug}${path}`)).json()
/** The backends tab, unfiltered (the tests run in any order). */
const showBackends = async () => {
  await page.click('nav button[data-tab="backends"]')
  await page.fill("#backend-filter", "")
}
const rowIds = () => page.locator("#backends tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-backend")))
const stateText = (id: string) => page.locator(`#backends tr[data-backend="${id}"] td.state`).textContent()

beforeAll(async () => {
  if (SKIP) return
  mkdirSync(ARTIFACTS, { recursive: true })
  const stateDir = tempDir("agentify-debug-many-")
  const env = { AGENTIFY_STATE_DIR: stateDir }
  // The first start meets every backend and remembers its tools.
  const first = await startHttpGateway({ config, env })
  try {
    const known = join(stateDir, "known")
    await until("70 backends remembered", () => existsSync(known) && readdirSync(known).length === COUNT, 120_000)
  } finally {
    await first.close()
  }
  gateway = await startHttpGateway({ config, env, args: ["--debug-port", "0"] })
  const port = await until(
    "the debug UI to listen",
    () => /debug UI at http:\/\/127\.0\.0\.1:(\d+)\//.exec(gateway.stderr())?.[1]
  )
  debug = `http://127.0.0.1:${port}`
  client = new Client({ name: "pelican-client", version: "2.5.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp`)))
  for (const id of [...RUNNING, NAPPER]) await client.callTool({ name: `${id}__echo`, arguments: { id } })
  // The napper goes idle after its 300 ms unused; the other two stay.
  await until(
    "the napper stopped after idleMs",
    async () => ((await get("/api/backends")) as Array<BackendView>).find((b) => b.id === NAPPER)?.idle === "stopped",
    30_000
  )
  browser = await launchBrowser()
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } })
  await page.goto(`${debug}/`)
}, 300_000)

afterAll(async () => {
  await browser?.close()
  await client?.close()
  await gateway?.close()
})

describe.skipIf(SKIP)("the debug UI with 70 backends", () => {
  it("the API says which idle backends never started and which were stopped unused; sessions name their client", async () => {
    const backends = (await get("/api/backends")) as Array<BackendView>
    expect(backends.map((b) => b.id)).toEqual(ids)
    const byId = new Map(backends.map((b) => [b.id, b]))
    for (const id of RUNNING) expect(byId.get(id)).toMatchObject({ state: "ready" })
    expect(byId.get(RUNNING[0]!)?.idle).toBeUndefined()
    expect(byId.get(NAPPER)).toMatchObject({ state: "idle", idle: "stopped", idleSince: expect.any(Number) })
    const remembered = backends.filter((b) => b.idle === "remembered")
    expect(remembered).toHaveLength(COUNT - 3)
    expect(remembered.every((b) => b.state === "idle" && b.idleSince === undefined)).toBe(true)

    const status = await get("/api/status")
    expect(status.backends).toMatchObject({ total: COUNT, ready: 2, idle: { remembered: COUNT - 3, stopped: 1 } })
    const sessions = (await get("/api/sessions")) as Array<Record<string, unknown>>
    const pelican = sessions.find((s) => s.client === "pelican-client")
    expect(pelican).toMatchObject({ transport: "http", clientVersion: "2.5.0", openedAt: expect.any(Number) })
    // initialize and the three calls at least (the SDK may list tools too).
    expect(pelican?.requests).toBeGreaterThanOrEqual(4)
    expect(status.sessions).toEqual(sessions)
    expect(JSON.stringify([backends, status, sessions])).not.toContain(SECRET)
  })

  it("lists the running backends first, then the one stopped unused, then those never started, each state named apart", async () => {
    await showBackends()
    await until("the rows", async () => (await rowIds()).length === COUNT)
    const order = await rowIds()
    expect(order.slice(0, 3)).toEqual([...RUNNING, NAPPER])
    expect(await stateText(RUNNING[0]!)).toBe("ready")
    expect(await stateText(NAPPER)).toBe("stopped (idle)")
    expect(await stateText("s00")).toBe("not started (remembered)")
    // The rest in the configuration's order.
    expect(order.slice(3)).toEqual(ids.filter((id) => !RUNNING.includes(id) && id !== NAPPER))
    expect(await page.textContent("#backend-count")).toContain(
      `2 ready · 1 stopped (idle) · ${COUNT - 3} not started (remembered)`
    )
    await page.screenshot({ path: join(ARTIFACTS, "debug-many-backends.png"), fullPage: true })
  }, 30_000)

  it("the filter narrows the rows by id, by state, by any text", async () => {
    await showBackends()
    await page.fill("#backend-filter", "s5")
    await until("ten rows", async () => (await rowIds()).length === 10)
    expect((await rowIds()).every((id) => id?.startsWith("s5"))).toBe(true)
    // s57 runs: still first among them.
    expect((await rowIds())[0]).toBe("s57")
    expect(await page.textContent("#backend-count")).toContain("showing 10 of 70")
    await page.fill("#backend-filter", "stopped (idle)")
    await until("the napper alone", async () => JSON.stringify(await rowIds()) === JSON.stringify([NAPPER]))
    await page.fill("#backend-filter", "ready")
    await until("the running two", async () => JSON.stringify(await rowIds()) === JSON.stringify(RUNNING))
    await page.fill("#backend-filter", "remembered s6")
    await until("the remembered of s6x", async () => (await rowIds()).length === 10)
    await page.fill("#backend-filter", "no-such-backend")
    await until("none", async () => (await rowIds()).length === 0)
    await page.fill("#backend-filter", "")
    await until("all again", async () => (await rowIds()).length === COUNT)
  }, 30_000)

  it("shows the sessions with their client, and the logs a click away above the rows", async () => {
    // The tabs are in view however many rows there are.
    const nav = await page.locator("nav").boundingBox()
    expect(nav).not.toBeNull()
    expect(nav!.y + nav!.height).toBeLessThan(900)
    await page.click('nav button[data-tab="sessions"]')
    const row = page.locator("#sessions tbody tr", { hasText: "pelican-client" })
    await row.waitFor()
    expect(await row.textContent()).toContain("2.5.0")
    expect(await page.isVisible("#backends")).toBe(false)
    await page.screenshot({ path: join(ARTIFACTS, "debug-many-sessions.png"), fullPage: true })
    await page.click('nav button[data-tab="logs"]')
    expect(await page.isVisible("#log-list")).toBe(true)
    const logs = await page.locator("#log-list").boundingBox()
    expect(logs!.y).toBeLessThan(900)
    await until("log lines", async () => (await page.locator("#log-list .row").count()) > 0)
    // A backend's own log lines from its row.
    await page.click('nav button[data-tab="backends"]')
    await page.click(`#backends tr[data-backend="${NAPPER}"] button.to-logs`)
    expect(await page.inputValue("#log-search")).toBe(NAPPER)
    await until("its idle stop in the logs", async () =>
      (await page.locator("#log-list .row").allTextContents()).some((r) => r.includes("stopped: unused for 300 ms"))
    )
    expect(await page.content()).not.toContain(SECRET)
  }, 30_000)
})
