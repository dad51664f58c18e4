#!/usr/bin/env node
// `npm start`: builds when a source file is newer than the last build, then runs the gateway in
// this very process (so signals and stdio are its own). The build's output goes to stderr:
// stdout is the protocol.
import { spawnSync } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const entry = join(root, "dist", "bin.js")
const buildInfo = join(root, "dist", ".tsbuildinfo")

const newest = (dir) =>
  readdirSync(dir, { withFileTypes: true }).reduce((max, d) => {
    const p = join(dir, d.name)
    return Math.max(max, d.isDirectory() ? newest(p) : statSync(p).mtimeMs)
  }, 0)

const stale = !existsSync(entry) || !existsSync(buildInfo) || newest(join(root, "src")) > statSync(buildInfo).mtimeMs
if (stale) {
  process.stderr.write("mcp-agentify: building...\n")
  const tsc = join(root, "node_modules", "typescript", "bin", "tsc")
  const built = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], {
    stdio: ["ignore", 2, 2]
  })
  const bundled =
    built.status === 0 ? spawnSync(process.execPath, [join(root, "scripts", "bundle.mjs")], { stdio: ["ignore", 2, 2] }) : built
  if (built.status !== 0 || bundled.status !== 0) {
    process.stderr.write("mcp-agentify: build failed\n")
    process.exit((built.status || bundled.status) ?? 1)
  }
}

// npm runs scripts from the package root; the gateway's "current directory" (the embedded
// filesystem root, `.env`) is where the user typed `npm start`.
if (process.env.INIT_CWD) process.chdir(process.env.INIT_CWD)

await import(pathToFileURL(entry).href)
