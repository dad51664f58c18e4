#!/usr/bin/env node
// `npm test`'s vitest run: the tests in an order of their own each time (each test must own its
// state), the order's seed printed first and last so that a failure can be replayed with
// `npx vitest run --sequence.shuffle --sequence.seed=<seed>`. VITEST_SEED picks the seed; further
// arguments go to vitest (a file, `-t <name>`).
import { spawn } from "node:child_process"
import { randomInt } from "node:crypto"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"

const given = process.env.VITEST_SEED?.trim()
if (given !== undefined && given !== "" && !/^\d+$/.test(given)) {
  process.stderr.write(`VITEST_SEED must be a whole number, not ${JSON.stringify(given)}\n`)
  process.exit(2)
}
const seed = given !== undefined && given !== "" ? Number(given) : randomInt(1, 2 ** 31 - 1)
const replay = `npx vitest run --sequence.shuffle --sequence.seed=${seed}`
const say = () => process.stderr.write(`tests shuffled with seed ${seed}; replay this order: ${replay}\n`)

say()
// Its command as its package names it (vitest 5 exports no path to it).
const manifest = createRequire(import.meta.url).resolve("vitest/package.json")
const vitest = join(dirname(manifest), createRequire(import.meta.url)("vitest/package.json").bin.vitest)
const child = spawn(
  process.execPath,
  [vitest, "run", "--sequence.shuffle", `--sequence.seed=${seed}`, ...process.argv.slice(2)],
  {
    stdio: "inherit"
  }
)
// Ctrl-C reaches the runner itself (one process group): this script waits for it to end.
process.on("SIGINT", () => {})
process.on("SIGTERM", () => child.kill("SIGTERM"))
child.on("exit", (code) => {
  say()
  process.exit(code ?? 1)
})
