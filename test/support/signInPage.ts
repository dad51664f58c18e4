/**
 * What a person does with an authorization server's sign-in page, in headless Chromium:
 * oidc-provider's development login as `login`, then its consent page, then the page the redirect
 * returns to (the gateway's, saying it is signed in to `backendId`).
 */
import { existsSync } from "node:fs"
import { chromium } from "playwright-core"

export const CHROMIUM = [process.env.CHROMIUM_PATH || "/usr/bin/chromium", "/usr/bin/chromium-browser"].find(existsSync)

/** Signs in at `url` as `login` and consents; resolves once the gateway's page says it is signed in. */
export const approve = async (url: string, login = "alice", backendId = "secure"): Promise<void> => {
  const browser = await chromium.launch({ executablePath: CHROMIUM!, args: ["--no-sandbox"] })
  try {
    const page = await browser.newPage()
    await page.goto(url)
    await page.fill('input[name="login"]', login)
    await page.fill('input[name="password"]', "any")
    await page.click('button[type="submit"]')
    await page.waitForSelector("text=Authorize", { timeout: 10_000 })
    await page.click('button[type="submit"]')
    await page.waitForSelector(`text=mcp-agentify is signed in to ${backendId}`, { timeout: 10_000 })
  } finally {
    await browser.close()
  }
}
