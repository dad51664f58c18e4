/**
 * Runs in every test file's worker. Logs go to stderr, as in the CLI: Effect's default logger (in
 * tests that do not provide the gateway's) prints with console.log, which would otherwise reach
 * the runner's stdout. The temp directories a file made are removed when it ends.
 */
import { afterAll } from "vitest"
import { removeTempDirs } from "./stdioClient.js"

console.log = console.error
console.info = console.error
console.debug = console.error

afterAll(() => removeTempDirs())
