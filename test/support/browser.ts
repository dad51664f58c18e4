/**
 * The browser of the debug page's tests: Debian's `chromium` (or `CHROMIUM_PATH`), driven by
 * playwright-core. Outside CI a machine without it skips those tests, saying how to run them; under
 * CI (`.ci/run` installs it) a missing browser fails the run.
 */
import { existsSync } from "node:fs"
import { type Browser, chromium } from "playwright-core"

export const CHROMIUM = [process.env.CHROMIUM_PATH || "/usr/bin/chromium", "/usr/bin/chromium-browser"].find(existsSync)

/** Whether `file`'s browser tests are skipped (said once on stderr when they are). */
export const skipWithoutBrowser = (file: string): boolean => {
  const skip = CHROMIUM === undefined && process.env.CI !== "true"
  if (skip) {
    process.stderr.write(
      `${file}: no Chromium, so the debug page's browser tests are skipped ` +
        "(apt-get install chromium, or set CHROMIUM_PATH; under CI=true they must run)\n"
    )
  }
  return skip
}

/** A headless Chromium; fails when there is none (a test that must run). */
export const launchBrowser = (): Promise<Browser> => {
  if (CHROMIUM === undefined) throw new Error("no Chromium: apt-get install chromium, or set CHROMIUM_PATH")
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
}
