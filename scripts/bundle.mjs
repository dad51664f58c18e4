#!/usr/bin/env node
// Bundles the CLI into one file (dist/bin.js, over tsc's output). Loading hundreds of ES modules
// is most of the gateway's start-up time and a good part of its memory (see the README's
// Benchmarks). The library entry (dist/index.js) stays as tsc wrote it, for apps that embed it.
// `openai` stays external: it is loaded on the first LLM request only; server-filesystem is a
// separate process, resolved from node_modules. `npm run dev` (scripts/dev.mjs) builds the same.
import { build } from "esbuild"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { recordHash, root } from "./sourceHash.mjs"

/** The bundle's esbuild options. */
export const bundleOptions = {
  entryPoints: [join(root, "src", "bin.ts")],
  outfile: join(root, "dist", "bin.js"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["openai", "@modelcontextprotocol/server-filesystem"],
  // Modules bundled from CommonJS call `require`; ESM output has none of its own.
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);'
  },
  // Not minified: esbuild's syntax minification starts the CLI 70 ms sooner but costs 15 MB of RSS
  // (measured on an idle gateway: 87 against 72 MB), as V8 compiles its parenthesised functions
  // eagerly. Memory is the scarcer of the two for a process that runs all day.
  // Beside the bundle for local debugging (node --enable-source-maps), not referenced from it nor
  // packed: 8 MB of map that embeds every dependency's source is no use to an installed CLI.
  sourcemap: "external",
  logLevel: "warning"
}

// Run as a script (npm run build), not when dev.mjs imports the options.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await build(bundleOptions)
  // What this build was made from, for `npm start` (see sourceHash.mjs).
  recordHash()
}
