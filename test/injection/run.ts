/**
 * `npm run eval:injection [-- --mode tools|code] [--flow-guard confirm|strict|off|legacy] [--gateway BIN] [--live]`:
 * the injection suite's table (see suite.ts), for both modes unless one is named; `--live` with the
 * configured model (OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL) instead of the obeying one.
 */
import { run, table } from "./suite.js"

const argv = process.argv.slice(2)
const option = (name: string) => {
  const i = argv.indexOf(`--${name}`)
  return i < 0 ? undefined : argv[i + 1]
}
const modes = option("mode") === undefined ? (["tools", "code"] as const) : ([option("mode")] as ReadonlyArray<"tools" | "code">)
const flowGuard = option("flow-guard") as "confirm" | "strict" | "off" | "legacy" | undefined
let total = 0
for (const mode of modes) {
  const results = await run({ mode, flowGuard, bin: option("gateway"), live: argv.includes("--live") })
  total += results.outcomes.filter((o) => o.ran).length
  console.log(`${table(mode, flowGuard ?? "confirm (default)", results)}\n`)
}
process.exitCode = total === 0 || flowGuard === "off" || flowGuard === "legacy" ? 0 : 1
