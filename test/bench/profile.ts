/**
 * Summarises `.cpuprofile` files (from `npm run bench -- --cpu-prof DIR`, or any `node --cpu-prof`):
 * self time by function, and by package, highest first.
 *
 *   tsx test/bench/profile.ts FILE_OR_DIR [--top N] [--filter TEXT]
 *
 * With a directory, its largest profile is read (the busiest process: the gateway under load).
 * `--total` adds a second table: total time (self plus callees) of the functions matching --filter.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { parseArgs } from "node:util"

interface ProfileNode {
  readonly id: number
  readonly callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }
  readonly children?: ReadonlyArray<number>
}

interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
  readonly startTime: number
  readonly endTime: number
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: "string", default: "40" }, filter: { type: "string" }, total: { type: "boolean", default: false } }
})
const target = positionals[0]
if (target === undefined) {
  process.stderr.write("usage: tsx test/bench/profile.ts FILE_OR_DIR [--top N] [--filter TEXT]\n")
  process.exit(2)
}
const file = statSync(target).isDirectory()
  ? readdirSync(target)
      .filter((f) => f.endsWith(".cpuprofile"))
      .map((f) => join(target, f))
      .sort((a, b) => statSync(b).size - statSync(a).size)[0]
  : target
if (file === undefined) throw new Error(`no .cpuprofile in ${target}`)

const profile = JSON.parse(readFileSync(file, "utf8")) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const selfUs = new Map<number, number>()
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]!
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
}
const totalUs = profile.endTime - profile.startTime

const shortUrl = (url: string) => {
  const nm = url.lastIndexOf("node_modules/")
  if (nm >= 0) return url.slice(nm + "node_modules/".length)
  const dist = url.indexOf("/dist/")
  if (dist >= 0 && !url.includes("node_modules")) return url.slice(dist + 1)
  return url.replace(/^file:\/\//, "")
}
const packageOf = (url: string) => {
  if (url === "") return "(native / idle / gc)"
  if (url.startsWith("node:")) return "node internals"
  const nm = url.lastIndexOf("node_modules/")
  if (nm < 0) return url.includes("/dist/") ? "mcp-agentify dist" : "other"
  const rest = url.slice(nm + "node_modules/".length).split("/")
  return rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!
}

const keyOf = (node: ProfileNode) => {
  const { functionName, url, lineNumber } = node.callFrame
  return `${functionName || "(anonymous)"}  ${url === "" ? "" : `${shortUrl(url)}:${lineNumber + 1}`}`
}

const byFunction = new Map<string, number>()
const byPackage = new Map<string, number>()
for (const [id, us] of selfUs) {
  const node = byId.get(id)!
  const url = node.callFrame.url
  const key = keyOf(node)
  byFunction.set(key, (byFunction.get(key) ?? 0) + us)
  const pkg = packageOf(url)
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us)
}

const pct = (us: number) => `${((us / totalUs) * 100).toFixed(1).padStart(5)}%`
const ms = (us: number) => `${(us / 1000).toFixed(1).padStart(8)} ms`
const top = Number(values.top)

process.stdout.write(
  `${file}: ${(totalUs / 1000).toFixed(0)} ms profiled, ${profile.samples.length} samples\n\nself time by package\n`
)
for (const [pkg, us] of [...byPackage].sort((a, b) => b[1] - a[1])) process.stdout.write(`${ms(us)} ${pct(us)}  ${pkg}\n`)
process.stdout.write(`\nself time by function (top ${top})\n`)
for (const [key, us] of [...byFunction]
  .filter(([key]) => values.filter === undefined || key.includes(values.filter))
  .sort((a, b) => b[1] - a[1])
  .slice(0, top)) {
  process.stdout.write(`${ms(us)} ${pct(us)}  ${key}\n`)
}

if (values.total) {
  const parent = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const total = new Map<string, number>()
  for (const [id, us] of selfUs) {
    const seen = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const key = keyOf(byId.get(at)!)
      if (seen.has(key)) continue
      seen.add(key)
      total.set(key, (total.get(key) ?? 0) + us)
    }
  }
  process.stdout.write(`\ntotal time by function (top ${top})\n`)
  for (const [key, us] of [...total]
    .filter(([key]) => values.filter === undefined || key.includes(values.filter))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)) {
    process.stdout.write(`${ms(us)} ${pct(us)}  ${key}\n`)
  }
}
