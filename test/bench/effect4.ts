/**
 * Effect 4 for the start-up bench's baseline (test/bench/effect4-answerer.mjs), while the project
 * itself stays on Effect 3: installed from the npm registry on first use into a cache folder of its
 * own (node_modules/.cache/mcp-agentify/effect4), the answerer copied there so that `effect`
 * resolves to 4.1.0 for it (ES modules do not read NODE_PATH), and bundled there as the gateway's
 * CLI is (scripts/bundle.mjs), so that both start the same way.
 */
import { build } from "esbuild"
import { execFileSync } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

export const EFFECT4_VERSION = "4.1.0"
const PACKAGES = ["effect", "@effect/platform-node"] as const

/** The answerer twice: its modules as installed, and the same bundled. */
export interface Effect4Answerer {
  readonly modules: string
  readonly bundle: string
}

const installedVersion = (prefix: string, name: string): string | undefined => {
  const manifest = join(prefix, "node_modules", name, "package.json")
  return existsSync(manifest) ? (JSON.parse(readFileSync(manifest, "utf8")) as { version?: string }).version : undefined
}

/** Installs Effect 4 into the cache folder unless it is there at its version; returns the answerer's files. */
export const effect4Answerer = async (root: string, log: (line: string) => void): Promise<Effect4Answerer> => {
  const prefix = join(root, "node_modules", ".cache", "mcp-agentify", "effect4")
  if (PACKAGES.some((name) => installedVersion(prefix, name) !== EFFECT4_VERSION)) {
    log(`effect4: installing ${PACKAGES.map((p) => `${p}@${EFFECT4_VERSION}`).join(" ")} into ${prefix} (npm registry, once)`)
    mkdirSync(prefix, { recursive: true })
    // A package of its own: npm installs there, not into the project above it.
    writeFileSync(join(prefix, "package.json"), `${JSON.stringify({ private: true, type: "module" })}\n`)
    execFileSync(
      "npm",
      ["install", "--no-audit", "--no-fund", "--prefix", prefix, ...PACKAGES.map((p) => `${p}@${EFFECT4_VERSION}`)],
      { stdio: ["ignore", 2, 2] }
    )
  }
  const modules = join(prefix, "answerer.mjs")
  copyFileSync(join(root, "test", "bench", "effect4-answerer.mjs"), modules)
  const bundle = join(prefix, "answerer.bundle.mjs")
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
