// A hash of what the build reads (src/, package.json, the tsconfigs): `npm start` rebuilds when it
// differs from the one the last build recorded, not when a file was merely touched.
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"

export const root = join(dirname(fileURLToPath(import.meta.url)), "..")
// Kept with what it describes (dist/), not in node_modules: checkouts that share one node_modules
// (worktrees) each have their own build, and one's record made another rebuild under its tests.
const recorded = join(root, "dist", ".source-hash")

const files = (dir) =>
  readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((d) => (d.isDirectory() ? files(join(dir, d.name)) : [join(dir, d.name)]))

export const sourceHash = () => {
  const hash = createHash("sha256")
  for (const file of [
    ...files(join(root, "src")),
    ...["package.json", "tsconfig.json", "tsconfig.build.json"].map((f) => join(root, f))
  ]) {
    hash.update(relative(root, file)).update("\0").update(readFileSync(file)).update("\0")
  }
  return hash.digest("hex")
}

export const recordedHash = () => (existsSync(recorded) ? readFileSync(recorded, "utf8") : undefined)

export const recordHash = () => {
  mkdirSync(dirname(recorded), { recursive: true })
  writeFileSync(recorded, sourceHash())
}
