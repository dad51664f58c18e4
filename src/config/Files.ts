/**
 * Start-up sources read from disk: `.env` (the documented settings only) and the config file
 * (bounded, a regular file, JSON or JSONC).
 */
import { Result, Schema } from "effect"
import * as path from "node:path"
import { parseEnv } from "node:util"
import { parseJsonc } from "./Jsonc.js"

import { BackendConfig } from "./Schema.js"
import { NormalizedOptions, decodeOptions } from "./Decode.js"
import * as RegularFile from "./RegularFile.js"

/**
 * The settings a `.env` may supply: the documented gateway settings and nothing else. Never what
 * chooses a program (AGENTIFY_CONFIG, NODE_OPTIONS, PATH), nor opens a port (AGENTIFY_HTTP,
 * DEBUG_PORT: the debug UI shows every message), nor anything backends would inherit:
 * the values stay with the gateway and are never put into `process.env`.
 */
export const DOTENV_SETTINGS = [
  "OPENAI_API_KEY",
  "OPENAI_BASE_URL",
  "OPENAI_MODEL",
  "OPENAI_TIMEOUT_MS",
  "LOG_LEVEL",
  "AGENTIFY_MAX_FRAME_BYTES"
] as const
export type DotEnvSetting = (typeof DOTENV_SETTINGS)[number]

/** The gateway's own environment variables: never passed on to backends (see `backendEnv`). */
const GATEWAY_VARIABLES = new Set<string>([
  ...DOTENV_SETTINGS,
  "AGENTIFY_CONFIG",
  "AGENTIFY_HTTP",
  "AGENTIFY_HTTP_TOKEN",
  "DEBUG_PORT"
])
const isGatewayVariable = (name: string) => GATEWAY_VARIABLES.has(name) || name.startsWith("AGENTIFY_")

/**
 * What a backend's process gets: the gateway's environment minus the gateway's own settings and
 * secrets (unless the backend lists them in `inheritEnv`), plus the backend's `env`.
 */
export const backendEnv = (
  backend: Pick<BackendConfig, "env" | "inheritEnv">,
  env: Readonly<Record<string, string | undefined>> = process.env
): Record<string, string> => {
  const out: Record<string, string> = {}
  const keep = new Set(backend.inheritEnv ?? [])
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && (!isGatewayVariable(name) || keep.has(name))) out[name] = value
  }
  return Object.assign(out, backend.env)
}

/** Bounds for the files the gateway reads at start-up: a config is kilobytes, not a device. */
export const MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024
const MAX_DOTENV_BYTES = 256 * 1024

/**
 * Reads a regular file of at most `maxBytes` (see RegularFile: without blocking, checked on the
 * open descriptor, a FIFO, a device or a directory refused). A link is followed: a config or
 * `.env` kept among one's dotfiles is often one.
 */
export const readRegularFile = (file: string, maxBytes: number): Result.Result<string, string> => {
  const outcome = RegularFile.read(file, maxBytes, { links: "follow" })
  return outcome._tag === "Read"
    ? Result.succeed(outcome.bytes.toString("utf8"))
    : Result.fail(outcome._tag === "Missing" ? "no such file" : outcome.reason)
}

export interface DotEnv {
  /** The documented settings it supplied. */
  readonly settings: Partial<Record<DotEnvSetting, string>>
  /** Names it held that a `.env` may not set (reported as a warning, never applied). */
  readonly refused: ReadonlyArray<string>
}

/** Reads `.env` in `dir`: the documented gateway settings only (see `DOTENV_SETTINGS`). */
export const readDotEnv = (dir: string): DotEnv => {
  const text = readRegularFile(path.join(dir, ".env"), MAX_DOTENV_BYTES)
  if (Result.isFailure(text)) return { settings: {}, refused: [] }
  const settings: Partial<Record<DotEnvSetting, string>> = {}
  const refused: Array<string> = []
  for (const [name, value] of Object.entries(parseEnv(text.success))) {
    if (value === undefined) continue
    if ((DOTENV_SETTINGS as ReadonlyArray<string>).includes(name)) settings[name as DotEnvSetting] = value
    else refused.push(name)
  }
  // Node's parser drops this name without a word (it builds its object by assignment): named here.
  if (/^[ \t]*(?:export[ \t]+)?__proto__[ \t]*=/m.test(text.success)) refused.push("__proto__")
  return { settings, refused }
}

/** A config file that cannot be used; start-up prints `message` and exits with code 2. */
export class ConfigFileError extends Schema.TaggedError<ConfigFileError>()("ConfigFileError", {
  path: Schema.String,
  message: Schema.String
}) {}

/** Reads and validates a config file (GatewayOptions or the mcpServers shape). */
/** A config file as read: where it is and the options it holds. */
export interface ConfigFile {
  readonly path: string
  readonly options: NormalizedOptions
}

export const readConfigFile = (file: string): Result.Result<ConfigFile, ConfigFileError> => {
  const absolute = path.resolve(file)
  const read = readRegularFile(absolute, MAX_CONFIG_FILE_BYTES)
  if (Result.isFailure(read)) {
    return Result.fail(new ConfigFileError({ path: absolute, message: `Cannot read config file ${absolute}: ${read.failure}` }))
  }
  const parsed = parseJsonc(read.success, absolute)
  if (Result.isFailure(parsed)) {
    return Result.fail(new ConfigFileError({ path: absolute, message: `Config file is not valid JSON: ${parsed.failure}` }))
  }
  return decodeOptions(parsed.success, "config file").pipe(
    Result.mapError(
      (error) =>
        new ConfigFileError({
          path: absolute,
          message: `Config file ${absolute} is invalid:\n${error.issues.map((line) => `  - ${line}`).join("\n")}`
        })
    ),
    Result.flatMap((options) =>
      options.backends !== undefined && options.backends.length === 0
        ? Result.fail(new ConfigFileError({ path: absolute, message: `Config file ${absolute} lists no backends` }))
        : Result.succeed({ path: absolute, options })
    )
  )
}
