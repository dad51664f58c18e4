#!/usr/bin/env node
/**
 * `npm run lint`: ESLint and Prettier on the files git tracks, not on whatever else lies in the
 * work tree (a scratch file, an editor's backup, another tool's output must not fail `npm test`).
 * Outside a git checkout (an unpacked package) both check the whole tree, as before. Then the
 * bound on a function's length in src/ (scripts/function-length.mjs).
 */
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as FunctionLength from "./function-length.mjs"

const root = fileURLToPath(new URL("..", import.meta.url))
const bin = (name) => fileURLToPath(new URL(`../node_modules/.bin/${name}`, import.meta.url))

const tracked = spawnSync("git", ["ls-files", "-z", "--cached"], { cwd: root, encoding: "utf8" })
// Deleted in the work tree but not yet in the index: nothing to check.
const files = tracked.status === 0 ? tracked.stdout.split("\0").filter((f) => f !== "" && existsSync(join(root, f))) : undefined

/** Runs a tool over `targets` in batches short enough for any command line; its exit status. */
const run = (tool, args, targets) => {
  const batches = []
  for (let at = 0; at < targets.length; at += 500) batches.push(targets.slice(at, at + 500))
  let status = 0
  for (const batch of batches) {
    const result = spawnSync(bin(tool), [...args, ...batch], { cwd: root, stdio: "inherit" })
    status ||= result.status ?? 1
  }
  return status
}

const scripts = (f) => /\.(c|m)?(t|j)sx?$/.test(f)
const eslint = run("eslint", ["--no-warn-ignored"], files === undefined ? ["."] : files.filter(scripts))
const prettier = run("prettier", ["--check", "--ignore-unknown"], files ?? ["."])
const lengths = FunctionLength.report(root, files ?? FunctionLength.sourceFiles(root))
process.exit(eslint || prettier || lengths)
