/**
 * The package as an app gets it: `npm pack` of this build, installed into an empty app beside the
 * peers an app brings (effect and @effect/platform-node 4.1.0, from the registry; npm's own peer
 * check, no --legacy-peer-deps), then examples/embedding.ts run there by plain Node against the
 * installed package, not the sources. It builds the gateway's Layers, starts server-filesystem and
 * has the orchestrator call its `read_text_file` through the gateway: the app reads its own
 * package.json back. The work is bounded by each step's timeout, not waited out.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { ROOT, tempDir } from "../support/stdioClient.js"

const run = promisify(execFile)

/** The peers an app installs beside the package (package.json's peerDependencies, telemetry's left out). */
const PEERS = ["effect@4.1.0", "@effect/platform-node@4.1.0"]

/** Runs the example and prints its result as one marked line (the example's own logs go to stdout too). */
const RUNNER = `import { Effect } from "effect"
import { main } from "./embedding.ts"
const result = await Effect.runPromise(main)
process.stdout.write("RESULT " + JSON.stringify(result) + "\\n")
`

describe("the packed package in an Effect app", () => {
  it("installs with its peers from the registry and runs examples/embedding.ts: a backend tool called through the gateway", async () => {
    const dir = tempDir("agentify-embed-pkg-")
    // dist/ is built by the global setup; `prepare` would build it again.
    const packed = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dir], {
      cwd: ROOT,
      timeout: 120_000,
      maxBuffer: 64 * 1024 * 1024
    })
    const [{ filename }] = JSON.parse(packed.stdout) as Array<{ filename: string }>
    const app = join(dir, "app")
    mkdirSync(app)
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "embedding-app", private: true, type: "module" }))
    await run(
      "npm",
      ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", join(dir, filename), ...PEERS],
      { cwd: app, timeout: 240_000, maxBuffer: 64 * 1024 * 1024 }
    )
    const listed = await run("npm", ["ls", "--json", "effect", "@effect/platform-node", "mcp-agentify"], {
      cwd: app,
      timeout: 60_000
    })
    const tree = JSON.parse(listed.stdout) as { dependencies: Record<string, { version: string }> }
    expect(tree.dependencies.effect?.version).toBe("4.1.0")
    expect(tree.dependencies["@effect/platform-node"]?.version).toBe("4.1.0")
    expect(tree.dependencies["mcp-agentify"]).toBeDefined()

    copyFileSync(join(ROOT, "examples", "embedding.ts"), join(app, "embedding.ts"))
    writeFileSync(join(app, "run.mjs"), RUNNER)
    // Node strips the example's types itself; `mcp-agentify` resolves to the installed package.
    const ran = await run(process.execPath, ["run.mjs"], { cwd: app, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 })
    const marked = ran.stdout.split("\n").find((line) => line.startsWith("RESULT "))
    expect(marked, `stdout:\n${ran.stdout}\nstderr:\n${ran.stderr}`).toBeDefined()
    const result = JSON.parse(marked?.slice("RESULT ".length) ?? "null") as {
      isError?: boolean
      content: Array<{ text?: string }>
    }
    expect(result.isError).not.toBe(true)
    // server-filesystem read the app's package.json (the example's cwd, as npm left it) through the gateway.
    const read = JSON.parse(result.content[0]?.text ?? "null") as { name: string; dependencies: Record<string, string> }
    expect(read.name).toBe("embedding-app")
    expect(Object.keys(read.dependencies)).toEqual(expect.arrayContaining(["mcp-agentify", "effect", "@effect/platform-node"]))
  }, 600_000)
})
