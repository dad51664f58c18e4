#!/usr/bin/env node
// Bundles the CLI (dist/bin.js and its chunks, over tsc's output). Loading hundreds of ES modules
// is most of the gateway's start-up time and a good part of its memory (see docs/benchmarks.md,
// startup). The library entry (dist/index.js) stays as tsc wrote it, for apps that embed it.
// `openai` stays external: it is loaded on the first LLM request only; server-filesystem is a
// separate process, resolved from node_modules. `npm run dev` (scripts/dev.mjs) builds the same.
import { build } from "esbuild"
import { rmSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { recordHash, root } from "./sourceHash.mjs"

/**
 * The bundle's esbuild options. `dist/bin.js` is a launcher of a few lines (it installs the signal
 * handlers before anything is loaded); the gateway is a chunk it imports, in `dist/chunks/`.
 */
export const bundleOptions = {
  // Code mode's sandbox runs in a worker thread: its own entry, loaded when a script first runs.
  entryPoints: { bin: join(root, "src", "bin.ts"), "sandbox-worker": join(root, "src", "sandbox", "Worker.ts") },
  outdir: join(root, "dist"),
  entryNames: "[name]",
  chunkNames: "chunks/[name]-[hash]",
  splitting: true,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  // QuickJS's variant finds its .wasm beside its own module: it stays in node_modules.
  // esbuild (code mode strips TypeScript with it) is a native binary's driver: loaded from node_modules.
  external: ["openai", "@modelcontextprotocol/server-filesystem", "quickjs-emscripten-core", "@jitl/*", "esbuild"],
  // jsonc-parser's main is a UMD build whose requires esbuild cannot follow: bundle its ES modules.
  alias: { "jsonc-parser": "jsonc-parser/lib/esm/main.js" },
  // Modules bundled from CommonJS call `require`; ESM output has none of its own.
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);'
  },
  // Whitespace and local names only: 3.5 MB of chunks become 1.8 MB, which V8 parses and compiles
  // at every start (stdio ping then EOF, whole process, median of 10: 271 -> 256 ms, peak 76 -> 72
  // MiB). Not esbuild's syntax minification: it starts the CLI sooner still but costs 15 MB of RSS
  // (87 against 72 MB on an idle gateway), as V8 compiles its parenthesised functions eagerly.
  // Memory is the scarcer of the two for a process that runs all day.
  minifyWhitespace: true,
  minifyIdentifiers: true,
  // Beside the bundle for local debugging (node --enable-source-maps), not referenced from it nor
  // packed: 8 MB of map that embeds every dependency's source is no use to an installed CLI.
  sourcemap: "external",
  logLevel: "warning"
}

// Run as a script (npm run build), not when dev.mjs imports the options.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // Chunks are named by their content's hash: those of earlier builds go.
  rmSync(join(root, "dist", "chunks"), { recursive: true, force: true })
  await build(bundleOptions)
  // What this build was made from, for `npm start` (see sourceHash.mjs).
  recordHash()
}
