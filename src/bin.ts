#!/usr/bin/env node
/** The `npx mcp-agentify` entry: the command line (see Cli.ts) with the process's arguments. */
// First: signals are caught from the first moment (see Signals.ts).
import "./Signals.js"
import { main } from "./Cli.js"

main(process.argv.slice(2))
