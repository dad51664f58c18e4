/**
 * The start-up bench's baseline, the smallest Effect 4 stdio answerer
 * (test/bench/effect4-answerer.mjs), on the project's own Effect and bundled as the gateway's CLI
 * is (scripts/bundle.mjs), so that both start the same way: what Effect 4 itself costs to start.
 */
import { build } from "esbuild"
import { mkdirSync, readFileSync } from "node:fs"
import { join } from "node:path"

/** The version of Effect the project (and so the answerer) runs on. */
export const EFFECT4_VERSION: string = (
  JSON.parse(readFileSync(new URL("../../node_modules/effect/package.json", import.meta.url), "utf8")) as { version: string }
).version

/** The answerer twice: its modules as installed, and the same bundled. */
export interface Effect4Answerer {
  readonly modules: string
  readonly bundle: string
}

/** Bundles the answerer into a cache folder; returns its files. */
export const effect4Answerer = async (root: string, _log: (line: string) => void): Promise<Effect4Answerer> => {
  const modules = join(root, "test", "bench", "effect4-answerer.mjs")
  const folder = join(root, "node_modules", ".cache", "mcp-agentify", "effect4")
  mkdirSync(folder, { recursive: true })
  const bundle = join(folder, "answerer.bundle.mjs")
  await build({
    entryPoints: [modules],
    outfile: bundle,
    bundle: true,
    platform: "node",
    format: "esm",
    // The gateway's own options (scripts/bundle.mjs): its target, banner and minification.
    target: "node22",
    banner: {
      js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);'
    },
    minifyWhitespace: true,
    minifyIdentifiers: true,
    logLevel: "warning"
  })
  return { modules, bundle }
}
