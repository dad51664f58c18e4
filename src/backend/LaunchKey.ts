/**
 * What launches a backend, as one key: what the gateway remembers of a backend (its tools' pins)
 * belongs to the server that runs, not to the name a configuration gives it. A local server is its
 * command as found on PATH (`node` and `/usr/bin/node` are one; the configuration's own PATH
 * counts), its arguments and, where it matters, the directory it runs in (`cwd` is configured, or
 * the command or an argument is a relative path such as `.` or `@scope/package`, which npx looks
 * up from there); a remote one is its URL. The same id in two project folders is then two servers,
 * and the same server under two ids (or gateways started in two folders) is one.
 *
 * The values of its environment are not part of it: a token rotated in `env` is the same server,
 * whose changed tools must still be held, and a secret never goes into a key. The key is a hash:
 * arguments may hold secrets too, and only the hash is written.
 */
import { createHash } from "node:crypto"
import { realpathSync, statSync } from "node:fs"
import * as path from "node:path"
import type { BackendConfig } from "../config/Config.js"

export type Launched = Partial<Pick<BackendConfig, "command" | "args" | "env" | "cwd" | "url">>

/** An executable file at `file`, as its real path (symlinks followed); undefined if none. */
const executable = (file: string): string | undefined => {
  try {
    if (!statSync(file).isFile()) return undefined
    return realpathSync(file)
  } catch {
    return undefined
  }
}

/**
 * The file `command` runs, as spawning it in `cwd` with `pathVariable` finds it: a command with a
 * slash is a path (relative to `cwd`), any other is looked up on PATH; one found nowhere stays as
 * given (it fails to start the same either way).
 */
export const resolveCommand = (command: string, cwd: string, pathVariable: string | undefined): string => {
  if (command.includes("/") || command.includes(path.sep)) return executable(path.resolve(cwd, command)) ?? command
  for (const dir of (pathVariable ?? "").split(path.delimiter)) {
    if (dir === "") continue
    const found = executable(path.resolve(cwd, dir, command))
    if (found !== undefined) return found
  }
  return command
}

/** A relative path: `.`, `..`, `./x`, `x/y` (not an absolute path, not a URL). */
const isRelativePath = (text: string): boolean =>
  text === "." || text === ".." || (/[\\/]/.test(text) && !path.isAbsolute(text) && !/^[a-z][a-z0-9+.-]*:/i.test(text))

/** What launches `config`, in a canonical form (never written: it may hold secrets). */
export const launchOf = (
  config: Launched,
  processEnv: Readonly<Record<string, string | undefined>> = process.env,
  processCwd: string = process.cwd()
): string => {
  if (config.url !== undefined) return JSON.stringify(["url", config.url])
  const cwd = path.resolve(processCwd, config.cwd ?? ".")
  const args = config.args ?? []
  const command = resolveCommand(config.command ?? "", cwd, config.env?.PATH ?? processEnv.PATH)
  const where = config.cwd !== undefined || [command, ...args].some(isRelativePath) ? cwd : null
  return JSON.stringify(["command", command, args, where])
}

/** The launch's key: a sha256 of what launches it, in hex (32 characters). */
export const keyOf = (config: Launched, processEnv?: Readonly<Record<string, string | undefined>>, processCwd?: string): string =>
  createHash("sha256")
    .update(launchOf(config, processEnv, processCwd))
    .digest("hex")
    .slice(0, 32)
