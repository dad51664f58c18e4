#!/usr/bin/env node
/**
 * The `npx mcp-agentify` entry: a tiny launcher. It installs the signal handlers (Signals.ts,
 * which imports nothing) and only then loads the gateway, whose code takes Node a good 100 ms to
 * read: an IDE that stops the server at once still sees it stop cleanly, with exit 0.
 *
 * On Node 22 and later V8's compiled code is cached between starts (`module.enableCompileCache`),
 * in the user's own state directory (0700): not Node's default under the shared temporary directory,
 * where another user could leave a cache for this one to load.
 */
import "./cli/Signals.js"
import { mkdirSync } from "node:fs"
import module from "node:module"
import { join } from "node:path"
import { stateDirOf } from "./data/StateDir.js"

if ("enableCompileCache" in module && typeof module.enableCompileCache === "function") {
  try {
    const dir = join(stateDirOf(process.env), "compile-cache")
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    module.enableCompileCache(dir)
  } catch {
    // A read-only home: the gateway starts as it would without the cache.
  }
}

const { main } = await import("./cli/Cli.js")
main(process.argv.slice(2))
