/**
 * V8's compiled code kept between starts: compiling the gateway's JavaScript is most of what a
 * start costs beyond Node's own, and an IDE starts the gateway every time it opens. Node keeps it
 * (`module.enableCompileCache`) for the ES modules the gateway is.
 *
 * The cache lives in the user's own state directory (0700), not Node's default under the shared
 * temporary directory, where another user could leave a cache for this one to load;
 * `NODE_COMPILE_CACHE` names another, `AGENTIFY_CODE_CACHE=off` keeps none. Node checks each
 * entry against its source's hash and the Node version that wrote it, but reads it as it finds it:
 * a FIFO there would hold the start forever, a link would be followed. So before Node looks, every
 * entry that is not a regular file or a folder is removed (said once, as any state file refused).
 *
 * The launcher loads this module before the gateway: it imports Node's own modules only.
 */
import { mkdirSync, readdirSync, unlinkSync } from "node:fs"
import module from "node:module"
import { join } from "node:path"
import { warn } from "../config/RegularFile.js"
import { stateDirOf } from "../config/StateDir.js"

type Env = Readonly<Record<string, string | undefined>>

/** Where compiled code is kept: `NODE_COMPILE_CACHE`, else `<state directory>/compile-cache`. */
export const cacheDirOf = (env: Env): string => env.NODE_COMPILE_CACHE?.trim() || join(stateDirOf(env), "compile-cache")

/** Whether `AGENTIFY_CODE_CACHE` turns the cache off ("off", "0", "false"). */
export const cacheOff = (env: Env): boolean => {
  const value = env.AGENTIFY_CODE_CACHE?.trim().toLowerCase()
  return value === "off" || value === "0" || value === "false"
}

/**
 * Removes what in `dir` (Node's folder per version, and their entries) is neither a regular file
 * nor a folder: a FIFO, a device, a socket, a link. Entry types come from the directory itself, so
 * nothing is opened or followed. Throws when one cannot be removed.
 */
const keepOnlyFiles = (dir: string, depth: number): void => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (depth > 0) keepOnlyFiles(path, depth - 1)
    } else if (!entry.isFile()) {
      warn(
        path,
        `${entry.isSymbolicLink() ? "it is a symbolic link" : "it is not a regular file"}; removed from the compile cache`
      )
      unlinkSync(path)
    }
  }
}

/** Turns Node's cache on in `dir`: whether it is on (a read-only home, or an entry that cannot be removed, starts without it). */
export const enableNodeCache = (dir: string): boolean => {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    keepOnlyFiles(dir, 1)
    module.enableCompileCache(dir)
    return true
  } catch {
    return false
  }
}
