/**
 * Compiled code kept between starts, through the built CLI. On Node 20 (no compile cache of Node's
 * own for ES modules): the first start loads the ES modules and leaves a warm-up behind it that
 * writes a cache of the CommonJS bundle; the next start uses it and writes its own; later starts
 * use that one as it is. The cache is the user's alone (0700 directory, 0600 files), a cache V8
 * rejects is replaced, `AGENTIFY_CODE_CACHE=off` starts none, and a gateway loaded from the bundle
 * still stops cleanly on a signal caught before it loaded. On Node 22 and later, Node keeps the cache.
 */
import { describe, expect, it } from "vitest"
import module from "node:module"
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { crc32 } from "node:zlib"
import { BIN, CliClient, cleanEnv, INIT_PARAMS, tempDir } from "../../support/stdioClient.js"
import { until } from "../../support/process.js"

const nodeKeepsIt = "enableCompileCache" in module

/** A gateway's environment whose compiled code is kept in its own state directory. */
const envWithState = (state: string, extra: Record<string, string> = {}) => {
  const env = cleanEnv({ AGENTIFY_STATE_DIR: state, ...extra })
  delete env.NODE_COMPILE_CACHE
  return env
}

/** One start: ping, then EOF; its exit code and stderr. */
const pingThenEof = async (env: NodeJS.ProcessEnv) => {
  const client = new CliClient({ env })
  expect((await client.request("ping")).result).toEqual({})
  client.child.stdin!.end()
  const { code } = await client.exited
  return { code, stderr: client.stderr() }
}

const cacheFiles = (dir: string) => (existsSync(dir) ? readdirSync(dir).sort() : [])

describe.skipIf(nodeKeepsIt)("the code cache on Node 20", () => {
  it("first start: ES modules and a warm-up; second: the warm-up's cache, then its own; later: that one, untouched", async () => {
    const state = tempDir("agentify-cc-")
    const dir = join(state, "compile-cache")
    const env = envWithState(state)
    // Caches of other builds of the bundle: one unused for two months is removed with the first
    // cache written, one used yesterday (another version in use beside this one) is kept.
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    const stale = `gateway-AAAAAAAA-${process.version}-${process.arch}.v8cache`
    const inUse = `gateway-BBBBBBBB-${process.version}-${process.arch}.v8cache`
    writeFileSync(join(dir, stale), "old", { mode: 0o600 })
    writeFileSync(join(dir, inUse), "recent", { mode: 0o600 })
    const day = 24 * 60 * 60
    utimesSync(join(dir, stale), Date.now() / 1000 - 60 * day, Date.now() / 1000 - 60 * day)
    utimesSync(join(dir, inUse), Date.now() / 1000 - day, Date.now() / 1000 - day)

    expect((await pingThenEof(env)).code).toBe(0)
    // The warm-up starts as the first start exits, and writes its cache.
    const warm = await until("the warm-up's cache", () => cacheFiles(dir).find((f) => f.endsWith(".warm.v8cache")), 20_000)
    await until("the warm-up's lock released", () => !cacheFiles(dir).some((f) => f.endsWith(".warmup")))
    expect(warm).toMatch(/^gateway-[A-Z0-9]+-v\d+\.\d+\.\d+-\w+\.warm\.v8cache$/)
    expect(cacheFiles(dir)).not.toContain(stale)
    expect(cacheFiles(dir)).toContain(inUse)
    rmSync(join(dir, inUse))
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    expect(statSync(join(dir, warm)).mode & 0o777).toBe(0o600)

    // The second start loads the bundle with it, and replaces it with a cache of its own start.
    expect((await pingThenEof(env)).code).toBe(0)
    const files = cacheFiles(dir)
    expect(files).toHaveLength(1)
    expect(files[0]).toBe(warm.replace(".warm.v8cache", ".v8cache"))
    const full = join(dir, files[0]!)
    expect(statSync(full).mode & 0o777).toBe(0o600)
    const written = readFileSync(full)

    // A later start uses it as it is.
    expect((await pingThenEof(env)).code).toBe(0)
    expect(cacheFiles(dir)).toEqual(files)
    expect(readFileSync(full).equals(written)).toBe(true)

    // A cache whose checksum V8 would accept but whose data it rejects is replaced by the start
    // that met it.
    const rejected = Buffer.alloc(4096, 7)
    const head = Buffer.alloc(4)
    head.writeUInt32BE(crc32(rejected))
    writeFileSync(full, Buffer.concat([head, rejected]), { mode: 0o600 })
    expect((await pingThenEof(env)).code).toBe(0)
    const replaced = readFileSync(full)
    expect(replaced.length).toBeGreaterThan(100_000)
    expect(replaced.readUInt32BE(0)).toBe(crc32(replaced.subarray(4)))

    // A file damaged on disk (one byte changed) never reaches V8: that start loads the ES modules
    // and leaves a warm-up, whose cache the next start uses and replaces.
    replaced[replaced.length - 100] ^= 0xff
    writeFileSync(full, replaced, { mode: 0o600 })
    expect((await pingThenEof(env)).code).toBe(0)
    await until("the warm-up's cache", () => cacheFiles(dir).find((f) => f.endsWith(".warm.v8cache")), 20_000)
    await until("the warm-up's lock released", () => !cacheFiles(dir).some((f) => f.endsWith(".warmup")))
    expect((await pingThenEof(env)).code).toBe(0)
    expect(cacheFiles(dir)).toEqual(files)
    const again = readFileSync(full)
    expect(again.readUInt32BE(0)).toBe(crc32(again.subarray(4)))

    // Flags given to node itself: the ES modules (V8 would reject the cache, made without them).
    const flagged = new CliClient({ command: process.execPath, args: ["--expose-gc", BIN], env })
    expect((await flagged.request("ping")).result).toEqual({})
    flagged.child.stdin!.end()
    expect((await flagged.exited).code).toBe(0)
    expect(cacheFiles(dir)).toEqual(files)
    expect(readFileSync(full).equals(again)).toBe(true)
  }, 60_000)

  it("a gateway loaded from the bundle stops its backends and exits 0 on SIGTERM", async () => {
    const state = tempDir("agentify-cc-")
    const env = envWithState(state)
    expect((await pingThenEof(env)).code).toBe(0)
    await until(
      "the warm-up's cache",
      () => cacheFiles(join(state, "compile-cache")).some((f) => f.endsWith(".warm.v8cache")),
      20_000
    )
    const client = new CliClient({ env })
    expect((await client.request("initialize", INIT_PARAMS)).result.serverInfo.name).toBe("mcp-agentify")
    client.child.kill("SIGTERM")
    const { code } = await client.exited
    expect(code).toBe(0)
    // Caught by the launcher's handlers, acted on once by the bundle's gateway.
    expect(client.stderr().match(/SIGTERM received; stopping backends/g)).toHaveLength(1)
    expect(client.stderr()).not.toMatch(/already stopping/)
  }, 60_000)

  it("AGENTIFY_CODE_CACHE=off: the ES modules, and no warm-up", async () => {
    const state = tempDir("agentify-cc-")
    expect((await pingThenEof(envWithState(state, { AGENTIFY_CODE_CACHE: "off" }))).code).toBe(0)
    // A warm-up would have taken its lock before the gateway exited.
    expect(cacheFiles(join(state, "compile-cache"))).toEqual([])
  })
})

describe.skipIf(!nodeKeepsIt)("the code cache on Node 22 and later", () => {
  it("Node keeps it, in the state directory", async () => {
    const state = tempDir("agentify-cc-")
    expect((await pingThenEof(envWithState(state))).code).toBe(0)
    expect(cacheFiles(join(state, "compile-cache")).length).toBeGreaterThan(0)
  })
})
