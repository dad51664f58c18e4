/**
 * What launches a backend, as one key: what the gateway remembers of a backend (its tools' pins,
 * its lists) belongs to the backend of a configuration as it runs. A local server is its id, its
 * command as found on PATH (`node` and `/usr/bin/node` are one; the configuration's own PATH
 * counts), its arguments, the NAMES of the variables its `env` sets and, where it matters, the
 * directory it runs in (`cwd` is configured, or the command or an argument is a relative path such
 * as `.` or `@scope/package`, which npx looks up from there); a remote one is its id and URL.
 *
 * The id makes two backends of one configuration two keys, whatever else they share: `ro` and `rw`
 * running one command with another `env` never share pins or a remembered list. The same id in
 * two project folders is still two servers where the folder matters (above), and a server
 * renamed in the configuration is a new one.
 *
 * The values of its environment are not part of it: a token rotated in `env` is the same server,
 * whose changed tools must still be held, and a secret never goes into a key; a variable set or
 * no longer set is another server. The key is a hash: arguments may hold secrets too, and only the
 * hash is written. Keys of an earlier version (without the id and the names) are simply not found
 * (see Pins for how its pins carry over).
 */
import { createHash } from "node:crypto"
import { realpathSync, statSync } from "node:fs"
import * as path from "node:path"
import type { BackendConfig } from "../config/Config.js"

export type Launched = Partial<Pick<BackendConfig, "id" | "command" | "args" | "env" | "cwd" | "url">>

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

/** The names of the variables `env` sets, sorted: what of the environment tells two servers apart (never a value). */
const namesOf = (env: Readonly<Record<string, string>> | undefined): ReadonlyArray<string> => Object.keys(env ?? {}).sort()

type Env = Readonly<Record<string, string | undefined>>

/** The file a local server runs, its arguments, and the directory it runs in where that matters (else null). */
const localOf = (config: Launched, processEnv: Env, processCwd: string) => {
  const cwd = path.resolve(processCwd, config.cwd ?? ".")
  const args = config.args ?? []
  const command = resolveCommand(config.command ?? "", cwd, config.env?.PATH ?? processEnv.PATH)
  const where = config.cwd !== undefined || [command, ...args].some(isRelativePath) ? cwd : null
  return { command, args, where }
}

/** What launches `config`, in a canonical form (never written: it may hold secrets). */
export const launchOf = (config: Launched, processEnv: Env = process.env, processCwd: string = process.cwd()): string => {
  const id = config.id ?? null
  if (config.url !== undefined) return JSON.stringify(["url", id, config.url])
  const { command, args, where } = localOf(config, processEnv, processCwd)
  return JSON.stringify(["command", id, command, args, namesOf(config.env), where])
}

/** What launched `config` before ids and environment names were part of it (its pins carry over, see Pins). */
export const earlierLaunchOf = (config: Launched, processEnv: Env = process.env, processCwd: string = process.cwd()): string => {
  if (config.url !== undefined) return JSON.stringify(["url", config.url])
  const { command, args, where } = localOf(config, processEnv, processCwd)
  return JSON.stringify(["command", command, args, where])
}

const hashOf = (launch: string): string => createHash("sha256").update(launch).digest("hex").slice(0, 32)

/** The launch's key: a sha256 of what launches it, in hex (32 characters). */
export const keyOf = (config: Launched, processEnv?: Env, processCwd?: string): string =>
  hashOf(launchOf(config, processEnv, processCwd))

/** The key an earlier version gave the launch (see `earlierLaunchOf`). */
export const earlierKeyOf = (config: Launched, processEnv?: Env, processCwd?: string): string =>
  hashOf(earlierLaunchOf(config, processEnv, processCwd))
