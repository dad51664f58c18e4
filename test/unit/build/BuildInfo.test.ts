/**
 * The incremental build's state lives with what it describes: `rm -rf dist && npm run build`
 * builds everything again. Kept elsewhere (node_modules/.cache, as it once was), tsc read it as up
 * to date and emitted nothing into a fresh dist/ but the bundle: dist/cli/Cli.js and the rest were
 * missing (a clean worktree sharing node_modules ran its tests against that).
 */
import { describe, expect, it } from "@effect/vitest"
import { existsSync, readFileSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import { ROOT } from "../../support/stdioClient.js"

describe("the build", () => {
  it("keeps tsc's incremental state inside its outDir, and the package leaves it out", () => {
    const { compilerOptions } = JSON.parse(readFileSync(join(ROOT, "tsconfig.build.json"), "utf8")) as {
      compilerOptions: { outDir: string; tsBuildInfoFile: string }
    }
    const inside = relative(resolve(ROOT, compilerOptions.outDir), resolve(ROOT, compilerOptions.tsBuildInfoFile))
    expect(inside.startsWith("..")).toBe(false)
    const { files } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { files: Array<string> }
    expect(files).toContain(`!${join(compilerOptions.outDir, inside)}`)
  })

  it("records the sources' hash it was built from inside dist/, and the package leaves it out", () => {
    // In node_modules it was one record for every checkout sharing them: a worktree's build made
    // another's `npm start` (and the tests that run it) rebuild that one's dist/ under its tests.
    expect(existsSync(join(ROOT, "dist", ".source-hash"))).toBe(true)
    const { files } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { files: Array<string> }
    expect(files).toContain("!dist/.source-hash")
  })
})
