#!/usr/bin/env node
// `npm run dev [-- gateway arguments]`: bundles src/bin.ts into dist/bin.js on every change
// (esbuild's watch) and restarts the gateway with the same arguments. stdin and stdout belong to
// the gateway (a client can talk to it; nothing of this script ever reaches stdout), and every
// line of its own goes to stderr. Most useful with --http, whose clients reconnect after a restart.
import { spawn } from "node:child_process"
import { context } from "esbuild"
import { join } from "node:path"
import { bundleOptions } from "./bundle.mjs"
import { root } from "./sourceHash.mjs"

const args = process.argv.slice(2)
const entry = join(root, "dist", "bin.js")
let child
let stopping = false

const start = () => {
  child = spawn(process.execPath, [entry, ...args], { stdio: "inherit", cwd: process.env.INIT_CWD ?? process.cwd() })
  const own = child
  own.on("exit", (code, signal) => {
    if (own === child && !stopping && !own.restarting)
      process.stderr.write(`[dev] gateway exited (${code ?? signal}); waiting for a change\n`)
  })
}

const restart = () =>
  new Promise((resolve) => {
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return resolve()
    child.restarting = true
    child.once("exit", resolve)
    child.kill("SIGTERM")
  })

const ctx = await context({
  ...bundleOptions,
  // Readable traces while developing.
  sourcemap: "inline",
  logLevel: "silent",
  plugins: [
    {
      name: "restart",
      setup(build) {
        build.onEnd(async (result) => {
          if (result.errors.length > 0) {
            for (const error of result.errors)
              process.stderr.write(`[dev] ${error.text} (${error.location?.file}:${error.location?.line})\n`)
            return
          }
          const first = child === undefined
          await restart()
          process.stderr.write(`[dev] ${first ? "starting" : "rebuilt, restarting"}: mcp-agentify ${args.join(" ")}\n`)
          start()
        })
      }
    }
  ]
})
await ctx.watch()

const stop = async () => {
  stopping = true
  await ctx.dispose()
  await restart()
  process.exit(0)
}
process.on("SIGINT", stop)
process.on("SIGTERM", stop)
