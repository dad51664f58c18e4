#!/usr/bin/env node
// `npm start`: builds when the sources differ from those of the last build (a hash, so a mere
// `touch` does not rebuild), then runs the gateway in this very process (so signals and stdio are
// its own). The build's output goes to stderr: stdout is the protocol.
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { recordedHash, root, sourceHash } from "./sourceHash.mjs"

const entry = join(root, "dist", "bin.js")

const stale = !existsSync(entry) || recordedHash() !== sourceHash()
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
