#!/usr/bin/env node
/**
 * The `npx mcp-agentify` entry: a tiny launcher. It refuses a Node older than the one the package
 * needs (one line, not a stack), installs the signal handlers (Signals.ts, which imports nothing)
 * and only then loads the gateway, whose code takes Node a good 100 ms to compile without a cache:
 * an IDE that stops the server at once still sees it stop cleanly, with exit 0. Compiled code is
 * kept between starts by Node itself (see cli/CodeCache).
 */
import "./cli/NodeVersion.js"
import "./cli/Signals.js"

// Everything else is imported once the handlers are in: an ES module's static imports are all
// loaded (files read, Node's own modules compiled) before any of them runs, a signal meanwhile
// meets Node's default action (killed by the signal, no orderly exit).
const { cacheDirOf, cacheOff, enableNodeCache } = await import("./cli/CodeCache.js")
if (!cacheOff(process.env)) enableNodeCache(cacheDirOf(process.env))
const { main } = await import("./cli/Cli.js")
main(process.argv.slice(2))
