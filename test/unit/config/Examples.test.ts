/**
 * The examples run what the checkout holds, from wherever they are started: each config under
 * examples/ names its files by `${configDir}` (resolved from another directory, every path it
 * names exists), and the compose file runs the checkout's own build, never a package by name.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { isAbsolute, join, posix, relative } from "node:path"
import { readConfigFile, resolve } from "../../../src/config/Config.js"
import { ROOT, tempDir } from "../../support/stdioClient.js"

const EXAMPLES = join(ROOT, "examples")

/** Every JSON config under examples/ (a file with backends or mcpServers). */
const configs = (dir: string = EXAMPLES): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return configs(path)
    if (!entry.name.endsWith(".json")) return []
    return /"(mcpServers|backends)"/.test(readFileSync(path, "utf8")) ? [path] : []
  })

describe("the examples", () => {
  it("has configs to check", () => {
    expect(
      configs()
        .map((file) => relative(EXAMPLES, file))
        .sort()
    ).toEqual(["release-notes/agentify.json", "scale-out-redis/gateway.json", "scale-out/gw1.json", "scale-out/gw2.json"])
  })

  it.each(configs().map((file) => [relative(EXAMPLES, file), file]))(
    "%s: resolved from another directory, every path it names is beside it (${configDir}) and exists; nothing is fetched by name",
    (_, file) => {
      const read = readConfigFile(file)
      if (Result.isFailure(read)) throw new Error(read.failure.message)
      const elsewhere = tempDir("agentify-examples-")
      const config = resolve({ env: { PWD: elsewhere }, cwd: elsewhere, file: read.success })
      for (const backend of config.backends) {
        expect(backend.refused).toBeUndefined()
        expect(backend.command).not.toBe("npx")
        const paths = backend.args.filter((arg) => arg.includes("/") || arg === ".")
        expect(paths.length).toBeGreaterThan(0)
        for (const path of paths) {
          // Relative, it would be the directory the gateway was started in.
          expect(isAbsolute(path), `${backend.id}: ${path}`).toBe(true)
          expect(path.startsWith(elsewhere), `${backend.id}: ${path}`).toBe(false)
          expect(existsSync(path), `${backend.id}: ${path}`).toBe(true)
        }
      }
    }
  )

  it("scale-out-redis runs the checkout's own build, mounted, with the example's config from the mount", () => {
    const dir = join(EXAMPLES, "scale-out-redis")
    const compose = readFileSync(join(dir, "compose.yaml"), "utf8")
    expect(compose).not.toMatch(/npx[^\n]*mcp-agentify/)
    const command = /^\s*command: \[("node".*)\]$/m.exec(compose)?.[1]
    expect(command).toBeDefined()
    const args = JSON.parse(`[${command}]`) as Array<string>
    // The volume that mounts the checkout, as the host path relative to this folder and where it lands.
    const [host, inside] = (/^\s*- (\.\.[^:\s]*):(\/[^:\s]+):ro$/m.exec(compose) ?? []).slice(1)
    expect(host).toBeDefined()
    const onHost = (path: string) => join(dir, host!, posix.relative(inside!, path))
    expect(onHost(inside!)).toBe(ROOT)
    expect(args[0]).toBe("node")
    const { bin } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { bin: Record<string, string> }
    expect(onHost(args[1]!)).toBe(join(ROOT, bin["mcp-agentify"]!))
    const config = args[args.indexOf("--config") + 1]!
    expect(onHost(config)).toBe(join(dir, "gateway.json"))
    // Every image and command line runs a Node the package supports (an older one is refused at start).
    const { engines } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { engines: { node: string } }
    const oldest = Number(/(\d+)/.exec(engines.node)?.[1])
    const majors = Array.from(compose.matchAll(/\bnode:(\d+)/g), (m) => Number(m[1]))
    expect(majors.length).toBeGreaterThan(0)
    for (const major of majors) expect(major).toBeGreaterThanOrEqual(oldest)
  })
})
