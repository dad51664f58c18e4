/**
 * The configuration on disk, read as one: the config file (`--config`, `AGENTIFY_CONFIG`) and the
 * servers directory (`--servers-dir`), merged and checked as a whole. Start-up reads it once; the
 * watcher reads it again on every change, so both refuse a bad edit with the same messages.
 */
import { Result } from "effect"
import * as path from "node:path"
import { decodeOptions, type NormalizedOptions } from "./Decode.js"
import { type ConfigFile, readConfigFile } from "./Files.js"
import type { ConfigSources, DiskSources } from "./Resolve.js"
import * as ServersDir from "./ServersDir.js"
import { messageOf } from "../json/Json.js"

/** What the disk holds now: the merged file and what the servers directory found. */
export interface Loaded {
  readonly file: ConfigFile | undefined
  readonly serversDir: ConfigSources["serversDir"]
}

/**
 * Reads and checks the configuration on disk; Left is the message a user needs (start-up prints it
 * and exits 2, a reload logs it and keeps the running configuration).
 */
export const load = (where: DiskSources, env: Readonly<Record<string, string | undefined>>): Result.Result<Loaded, string> => {
  let configFile: ConfigFile | undefined
  if (where.configPath !== undefined) {
    const read = readConfigFile(where.configPath)
    if (Result.isFailure(read)) return Result.fail(read.failure.message)
    configFile = read.success
  }
  let loaded: Loaded = { file: configFile, serversDir: undefined }
  if (where.serversDir !== undefined) {
    const scanned = scanServersDir(where.serversDir, env, configFile)
    if (Result.isFailure(scanned)) return Result.fail(scanned.failure)
    loaded = { file: scanned.success.file, serversDir: scanned.success.found }
  }
  const problems = loaded.file === undefined ? [] : profileProblems(loaded.file.options)
  if (problems.length > 0) {
    return Result.fail(`Config file ${loaded.file!.path} is invalid:\n${problems.map((line) => `  - ${line}`).join("\n")}`)
  }
  return Result.succeed(loaded)
}

/**
 * Profiles that name a backend the configuration does not have: a typo would otherwise serve an
 * empty profile without a word. Checked once the backends of every source are merged.
 */
export const profileProblems = (options: NormalizedOptions): Array<string> => {
  if (options.profiles === undefined || options.backends === undefined) return []
  const ids = options.backends.map((b) => b.id)
  const problems: Array<string> = []
  for (const [name, profile] of Object.entries(options.profiles)) {
    for (const id of profile.backends ?? []) {
      if (!ids.includes(id)) problems.push(`profiles.${name}.backends: no backend '${id}' (there are: ${ids.join(", ")})`)
    }
  }
  return problems
}

/**
 * `--servers-dir`: the servers found, validated as a `{servers, defaults}` document, added after
 * the config file's backends (an id in both is an error: say which one to keep).
 */
const scanServersDir = (
  dir: string,
  env: Readonly<Record<string, string | undefined>>,
  configFile: ConfigFile | undefined
): Result.Result<{ file: ConfigFile; found: NonNullable<ConfigSources["serversDir"]> }, string> => {
  let scanned: ServersDir.Scan
  try {
    scanned = ServersDir.scan(dir, env)
  } catch (error) {
    return Result.fail(messageOf(error))
  }
  const where = path.resolve(dir)
  const decoded = decodeOptions(ServersDir.toOptions(scanned), `servers directory ${where}`)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure.message)
  const options = decoded.success
  const found = { path: where, found: scanned.servers.map((s) => `${s.name}: ${s.how}`), skipped: scanned.skipped }
  const fromDir = options.backends ?? []
  if (fromDir.length === 0 && configFile === undefined) {
    return Result.fail(`no servers found in ${where}${scanned.skipped.length > 0 ? ` (${scanned.skipped.join("; ")})` : ""}`)
  }
  if (configFile === undefined) return Result.succeed({ file: { path: where, options }, found })
  const own = configFile.options.backends ?? []
  const clash = fromDir.find((b) => own.some((o) => o.id === b.id))
  if (clash !== undefined) {
    return Result.fail(`the server '${clash.id}' is both in ${configFile.path} and in ${where}: rename or remove one`)
  }
  return Result.succeed({ file: { ...configFile, options: { ...configFile.options, backends: [...own, ...fromDir] } }, found })
}
