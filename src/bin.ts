#!/usr/bin/env node
/**
 * The `npx mcp-agentify` entry: a tiny launcher. It installs the signal handlers (Signals.ts,
 * which imports nothing) and only then loads the gateway, whose code takes Node a good 100 ms to
 * read: an IDE that stops the server at once still sees it stop cleanly, with exit 0.
 */
import "./cli/Signals.js"

const { main } = await import("./cli/Cli.js")
main(process.argv.slice(2))
