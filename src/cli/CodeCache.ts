/**
 * V8's compiled code kept between starts: compiling the gateway's JavaScript is most of what a
 * start costs beyond Node's own, and an IDE starts the gateway every time it opens.
 *
 * On Node 22 and later Node keeps it (`module.enableCompileCache`) for the ES modules the gateway
 * is. Node 20 keeps nothing for ES modules, so the build also writes the gateway as one CommonJS
 * file (`dist/chunks/gateway-<hash>.cjs`), which `loadBundle` compiles with `vm.Script` and the
 * code cache of an earlier start. Without a cache the bundle would start slower than the ES modules
 * and in more memory, so the first start loads the ES modules and, as it exits, leaves a warm-up
 * behind it (the bundle loaded alone, `--version`, in a process of its own), whose cache the next
 * start uses and replaces with its own. `AGENTIFY_CODE_CACHE=off` keeps to the ES modules. See
 * docs/benchmarks.md, startup, for what it saves and costs.
 *
 * The cache lives in the user's own state directory (0700; files 0600, written whole then renamed),
 * not Node's default under the shared temporary directory, where another user could leave a cache
 * for this one to load; `NODE_COMPILE_CACHE` names another. Its files are named by the bundle's
 * content hash, the Node version, the architecture and `NODE_OPTIONS` (V8 itself checks only the
 * source's length and its flags), and carry a CRC-32 of their data.
 *
 * The launcher loads this module before the gateway: it imports Node's own modules only (and
 * config/StateDir and config/RegularFile, which do too).
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs"
import module, { createRequire } from "node:module"
import { basename, dirname, join } from "node:path"
import { Script } from "node:vm"
import * as zlib from "node:zlib"
import { stateDirOf } from "../config/StateDir.js"
import { readState } from "../config/RegularFile.js"

/** Where compiled code is kept: `NODE_COMPILE_CACHE`, else `<state directory>/compile-cache`. */
export const cacheDirOf = (env: Readonly<Record<string, string | undefined>>): string =>
  env.NODE_COMPILE_CACHE?.trim() || join(stateDirOf(env), "compile-cache")

const ensureDir = (dir: string): boolean => {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    return true
  } catch {
    // A read-only home: the gateway starts as it would without the cache.
    return false
  }
}

/** Node's own cache for ES modules, where it exists (Node 22 and later): whether it is on. */
export const enableNodeCache = (dir: string): boolean => {
  if (!("enableCompileCache" in module) || typeof module.enableCompileCache !== "function") return false
  if (!ensureDir(dir)) return false
  try {
    module.enableCompileCache(dir)
    return true
  } catch {
    return false
  }
}

/** The largest cache read: V8's data for the whole bundle is a few megabytes. */
const MAX_CACHE_BYTES = 64 * 1024 * 1024
/** After this long the start's code is compiled, and the cache written holds it. */
const WRITE_AFTER_MS = 2_000
/** A warm-up older than this is taken to have died: another may start. */
const WARMUP_STALE_MS = 60_000
/** A cache of another build no start has used for this long is removed. */
const UNUSED_FOR_MS = 30 * 24 * 60 * 60_000

/** Marks a cache as used now (its modification time): caches in use are never removed. */
const touch = (path: string) => {
  try {
    const now = new Date()
    utimesSync(path, now, now)
  } catch {
    // Only its age is lost.
  }
}

/** What `AGENTIFY_CODE_CACHE` asks: "off" never loads the bundle; "warmup" is the warm-up's own run. */
export type Mode = "on" | "off" | "warmup"
export const modeOf = (env: Readonly<Record<string, string | undefined>>): Mode => {
  const value = env.AGENTIFY_CODE_CACHE?.trim().toLowerCase()
  return value === "off" || value === "0" || value === "false" ? "off" : value === "warmup" ? "warmup" : "on"
}

const cacheFiles = (file: string, dir: string) => {
  // V8 rejects a cache made under other flags: NODE_OPTIONS (which the warm-up inherits) names its own.
  const options = process.env.NODE_OPTIONS?.trim()
  const flags = options ? `-${zlib.crc32(options).toString(36)}` : ""
  const build = `${basename(file, ".cjs")}-${process.version}-${process.arch}`
  const stem = `${build}${flags}`
  return {
    /** Written by a start of the gateway: the code a start compiles. */
    full: join(dir, `${stem}.v8cache`),
    /** Written by the warm-up: the bundle's modules loaded, little run. */
    warm: join(dir, `${stem}.warm.v8cache`),
    lock: join(dir, `${stem}.warmup`),
    /** Whether `name` is a cache of another build of the bundle or another Node. */
    other: (name: string) =>
      name.startsWith(`${basename(file, ".cjs").replace(/-[^-]+$/, "")}-`) && name.endsWith(".v8cache") && !name.startsWith(build)
  }
}

/**
 * A cache file is V8's data behind its CRC-32 (4 bytes, big-endian): V8 checks the data's header,
 * not all of its content, and a file cut short or damaged on disk must never reach it.
 */
const seal = (data: Buffer): Buffer => {
  const head = Buffer.alloc(4)
  head.writeUInt32BE(zlib.crc32(data))
  return Buffer.concat([head, data])
}

/** The cache in `path` if it is there whole; undefined otherwise. */
const read = (path: string): Buffer | undefined => {
  // A regular file within the bound, as every state file (a FIFO there must not hold the start).
  const file = readState(path, MAX_CACHE_BYTES)?.bytes
  if (file === undefined || file.length <= 4) return undefined
  const data = file.subarray(4)
  return file.readUInt32BE(0) === zlib.crc32(data) ? data : undefined
}

/**
 * Loads the CommonJS bundle `file` with the code cache kept in `dir`: its exports; undefined when
 * there is no cache yet (the ES modules load faster than the bundle without one, in less memory),
 * and the warm-up that writes one (`warmUp`) starts when this process exits. A start that loads
 * the warm-up's cache, or whose cache V8 rejected, writes its own once its code is compiled (or at
 * exit). Throws what loading the bundle throws.
 */
export const loadBundle = (file: string, dir: string, mode: Exclude<Mode, "off">, warmUp: () => void): unknown => {
  // zlib.crc32 is Node 20.15's: before it, no cache is trusted, and the ES modules load. Nor under
  // flags given to node itself (`node --inspect dist/bin.js`): V8 rejects a cache made without
  // them, and the warm-up cannot be given them (a debugger port, a profile of its own).
  if (typeof zlib.crc32 !== "function" || (mode !== "warmup" && process.execArgv.length > 0) || !ensureDir(dir)) return undefined
  const files = cacheFiles(file, dir)
  const full = mode === "warmup" ? undefined : read(files.full)
  const cachedData = full ?? (mode === "warmup" ? undefined : read(files.warm))
  if (cachedData === undefined && mode !== "warmup") {
    // Once this process ends: the warm-up neither competes with its start nor runs beside it.
    process.once("exit", () => startWarmUp(files.lock, warmUp))
    return undefined
  }
  const script = new Script(module.wrap(readFileSync(file, "utf8")), {
    filename: file,
    ...(cachedData === undefined ? {} : { cachedData })
  })
  if (full !== undefined && script.cachedDataRejected !== true) touch(files.full)
  if (full === undefined || script.cachedDataRejected === true) {
    const target = mode === "warmup" ? files.warm : files.full
    let written = false
    const write = () => {
      if (written) return
      written = true
      try {
        // Another version may be in use beside this one (two projects, two versions): its cache
        // goes only once no start has used it for a month.
        const unused = Date.now() - UNUSED_FOR_MS
        for (const name of readdirSync(dir)) {
          const path = join(dir, name)
          if (files.other(name) && statSync(path).mtimeMs < unused) rmSync(path, { force: true })
        }
        const temp = `${target}.${process.pid}`
        writeFileSync(temp, seal(script.createCachedData()), { mode: 0o600 })
        renameSync(temp, target)
        if (mode === "warmup") rmSync(files.lock, { force: true })
        else rmSync(files.warm, { force: true })
      } catch {
        // Not kept: a later start writes it.
      }
    }
    if (mode !== "warmup") setTimeout(write, WRITE_AFTER_MS).unref()
    process.once("exit", write)
  }
  const wrapper: unknown = script.runInThisContext()
  if (typeof wrapper !== "function") throw new Error(`${file} is not a CommonJS module`)
  const exports = {}
  const loaded = { exports }
  wrapper.call(exports, exports, createRequire(file), loaded, file, dirname(file))
  return loaded.exports
}

/** Starts the warm-up unless one runs already (the lock file, taken whole; a stale one retaken). */
const startWarmUp = (lock: string, warmUp: () => void): void => {
  try {
    try {
      writeFileSync(lock, String(process.pid), { flag: "wx", mode: 0o600 })
    } catch {
      if (Date.now() - statSync(lock).mtimeMs < WARMUP_STALE_MS) return
      writeFileSync(lock, String(process.pid), { mode: 0o600 })
    }
    warmUp()
  } catch {
    // No warm-up: the next start tries again.
  }
}
