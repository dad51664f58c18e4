#!/usr/bin/env node
// The end-to-end smoke on another Node than the project's own: the build, then the README's
// example, many servers, HTTP, stopping and the launcher's checks, all run by that Node (the tests
// spawn the gateway with the Node that runs them). Usage:
//   npm run smoke -- 22.19.0      the registry's `node` package at that version, kept in node_modules/.cache
//   npm run smoke -- /path/to/node
// Further arguments go to vitest.
import { execFileSync, spawnSync } from "node:child_process"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { delimiter, dirname, join } from "node:path"
import { root } from "./sourceHash.mjs"

const FILES = [
  "test/e2e/stdio/example.test.ts",
  "test/e2e/stdio/on-use.test.ts",
  "test/e2e/many-tools.test.ts",
  "test/e2e/http/http.test.ts",
  "test/hardening/stop.test.ts",
  "test/e2e/stdio/node-version.test.ts",
  "test/e2e/stdio/code-cache.test.ts",
  "test/e2e/stdio/stdout-frames.test.ts"
]

const [which, ...rest] = process.argv.slice(2)
if (which === undefined) {
  process.stderr.write("usage: npm run smoke -- <node version, e.g. 22.19.0 | path to a node binary> [vitest arguments]\n")
  process.exit(2)
}

/** The node binary: a path as given, or the registry's `node` package at a version, installed once. */
const nodeOf = (spec) => {
  if (spec.includes("/") || spec.includes("\\")) return spec
  const prefix = join(root, "node_modules", ".cache", "mcp-agentify", `node-${spec}`)
  const bin = join(prefix, "node_modules", "node", "bin", process.platform === "win32" ? "node.exe" : "node")
  if (!existsSync(bin)) {
    process.stderr.write(`installing node@${spec} from the npm registry into ${prefix}\n`)
    mkdirSync(prefix, { recursive: true })
    // The `node` package installs its platform's binary from a script: allowed here by name.
    writeFileSync(join(prefix, "package.json"), JSON.stringify({ private: true, allowScripts: { node: true } }))
    execFileSync("npm", ["install", "--no-save", "--no-audit", "--no-fund", "--prefix", prefix, `node@${spec}`], {
      stdio: ["ignore", 2, 2]
    })
  }
  return bin
}

const node = nodeOf(which)
const version = execFileSync(node, ["--version"], { encoding: "utf8" }).trim()
process.stderr.write(`smoke on node ${version} (${node})\n`)
// That Node first on the PATH too: the fixtures' `node` and npm's own children run on it.
const env = { ...process.env, PATH: `${dirname(node)}${delimiter}${process.env.PATH ?? ""}` }
const step = (args) => {
  const result = spawnSync(node, args, { cwd: root, env, stdio: "inherit" })
  if (result.status !== 0) process.exit(result.status ?? 1)
}
step([join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"])
step([join(root, "scripts", "bundle.mjs")])
step([join(root, "node_modules", "vitest", "vitest.mjs"), "run", ...FILES, ...rest])
