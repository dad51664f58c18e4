#!/usr/bin/env node
/**
 * The `npx mcp-agentify` entry: a tiny launcher. It installs the signal handlers (Signals.ts,
 * which imports nothing) and only then loads the gateway, whose code takes Node a good 100 ms to
 * compile without a cache: an IDE that stops the server at once still sees it stop cleanly, with
 * exit 0.
 *
 * Compiled code is kept between starts (see cli/CodeCache): on Node 22 and later by Node, for the
 * gateway's ES modules; on Node 20 by loading the build's CommonJS bundle of the gateway with V8's
 * code cache, once there is one. A build without that bundle (`npm run dev`) loads the ES modules.
 */
import "./cli/Signals.js"

// Everything else is imported once the handlers are in: an ES module's static imports are all
// loaded (files read, Node's own modules compiled) before any of them runs, a signal meanwhile
// meets Node's default action (killed by the signal, no orderly exit).
const [{ spawn }, { existsSync }, { dirname, join }, { fileURLToPath }, { cacheDirOf, enableNodeCache, loadBundle, modeOf }] =
  await Promise.all([
    import("node:child_process"),
    import("node:fs"),
    import("node:path"),
    import("node:url"),
    import("./cli/CodeCache.js")
  ])

/** The gateway's CommonJS bundle, relative to this file: set by `scripts/bundle.mjs`. */
declare const __AGENTIFY_GATEWAY_CJS__: string | undefined

type Main = (argv: ReadonlyArray<string>) => void

/**
 * The bundle loaded alone in a process of its own, to write the code cache: started as this
 * process exits, in a process group of its own, and nothing waits for it.
 */
const warmUp = () => {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "--version"], {
    env: { ...process.env, AGENTIFY_CODE_CACHE: "warmup" },
    stdio: "ignore",
    detached: true
  })
  child.on("error", () => {})
  child.unref()
}

/** The bundle's `main`, when the build wrote a bundle, Node keeps no compiled code itself, and a cache is there. */
const bundledMain = (): Main | undefined => {
  const mode = modeOf(process.env)
  const cacheDir = cacheDirOf(process.env)
  if (mode === "off" || enableNodeCache(cacheDir) || typeof __AGENTIFY_GATEWAY_CJS__ !== "string") return undefined
  const file = join(dirname(fileURLToPath(import.meta.url)), __AGENTIFY_GATEWAY_CJS__)
  if (!existsSync(file)) return undefined
  const exports = loadBundle(file, cacheDir, mode, warmUp)
  if (exports === undefined) return undefined
  const main: unknown = typeof exports === "object" && exports !== null ? Reflect.get(exports, "main") : undefined
  if (typeof main !== "function") throw new Error(`${file} exports no main`)
  return (argv) => void main(argv)
}

const main: Main = bundledMain() ?? (await import("./cli/Cli.js")).main
main(process.argv.slice(2))
