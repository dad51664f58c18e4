/**
 * Gateway configuration: the GatewayOptions / BackendConfig schemas (CONTRACT.md section 3), the
 * Claude Desktop / Cursor `mcpServers` shape, every source with its precedence, and the
 * `GatewayConfig` service that holds the configuration in force.
 *
 * Precedence, highest first: `initializationOptions`, the config file (`--config` or
 * `AGENTIFY_CONFIG`), the environment (with `.env` loaded beneath it), the embedded default.
 * The OpenAI key is the exception the contract names: env `OPENAI_API_KEY` wins over both.
 */
import { Context, Effect, Either, Layer, Option, ParseResult, Redacted, Ref, Schema } from "effect"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { parseEnv } from "node:util"
import { InvalidParams } from "./Errors.js"
import * as Secrets from "./Secrets.js"

// ---------------------------------------------------------------------------------------------
// Schemas

const ID_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/

const BackendId = Schema.String.pipe(
  Schema.filter((s) => ID_PATTERN.test(s), { message: () => "must match ^[a-zA-Z0-9_-]{1,64}$" })
)

const PositiveInt = Schema.Number.pipe(
  Schema.filter((n) => Number.isInteger(n) && n > 0, { message: () => "must be a positive integer" })
)

const Port = Schema.Number.pipe(
  Schema.filter((n) => Number.isInteger(n) && n >= 0 && n <= 65535, { message: () => "must be a port number (0-65535)" })
)

const NonEmptyString = Schema.String.pipe(
  Schema.filter((s) => s.trim().length > 0, { message: () => "must be a non-empty string" })
)

export const LogLevelName = Schema.Literal("trace", "debug", "info", "warn", "error", "fatal", "silent")
export type LogLevelName = typeof LogLevelName.Type

export const Routing = Schema.Literal("tool", "backend")
export type Routing = typeof Routing.Type

export const BackendConfig = Schema.Struct({
  id: BackendId,
  displayName: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  type: Schema.optionalWith(Schema.Literal("stdio"), { default: () => "stdio" as const }),
  command: NonEmptyString,
  args: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  env: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { default: () => ({}) }),
  cwd: Schema.optional(Schema.String),
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  requestTimeoutMs: Schema.optional(PositiveInt),
  restartOnCrash: Schema.optionalWith(Schema.Boolean, { default: () => true })
})
export type BackendConfig = typeof BackendConfig.Type
export type BackendConfigInput = typeof BackendConfig.Encoded

const UniqueBackends = Schema.Array(BackendConfig).pipe(
  Schema.filter((backends) => {
    const seen = new Set<string>()
    for (let i = 0; i < backends.length; i++) {
      const id = backends[i]!.id
      if (seen.has(id)) {
        return { path: [i, "id"], message: `duplicate backend id '${id}'` }
      }
      seen.add(id)
    }
    return true
  })
)

const Backends = UniqueBackends.pipe(
  Schema.filter((backends) => backends.length > 0 || "must list at least one backend")
)

/** An entry of the Claude Desktop / Cursor `mcpServers` map. Only stdio servers can be launched. */
const McpServerEntry = Schema.Struct({
  type: Schema.optional(
    Schema.Literal("stdio").annotations({
      message: () => "only stdio servers are supported (command + args)"
    })
  ),
  command: NonEmptyString,
  args: Schema.optional(Schema.Array(Schema.String)),
  env: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  cwd: Schema.optional(Schema.String),
  disabled: Schema.optional(Schema.Boolean),
  description: Schema.optional(Schema.String),
  // BackendConfig's own options are accepted here too, so one file can keep the familiar shape.
  displayName: Schema.optional(Schema.String),
  requestTimeoutMs: Schema.optional(PositiveInt),
  restartOnCrash: Schema.optional(Schema.Boolean)
})

const McpServers = Schema.Record({ key: Schema.String, value: McpServerEntry })

/** Every GatewayOptions field but `backends`; shared by the file and `initializationOptions`. */
const optionFields = {
  OPENAI_API_KEY: Schema.optional(Schema.String),
  logLevel: Schema.optional(LogLevelName),
  DEBUG_PORT: Schema.optional(Schema.NullOr(Port)),
  model: Schema.optional(NonEmptyString),
  openaiBaseUrl: Schema.optional(NonEmptyString),
  routing: Schema.optional(Routing),
  exposeBackendTools: Schema.optional(Schema.Boolean),
  maxToolsPerRequest: Schema.optional(PositiveInt),
  requestTimeoutMs: Schema.optional(PositiveInt),
  startupTimeoutMs: Schema.optional(PositiveInt),
  maxFrameBytes: Schema.optional(PositiveInt)
}

/**
 * GatewayOptions as a source gives them: every field optional (an `initializationOptions`
 * carrying only a key is fine), `backends` or `mcpServers` (not both) when backends are given.
 */
export const GatewayOptions = Schema.Struct({
  ...optionFields,
  backends: Schema.optional(Backends),
  mcpServers: Schema.optional(McpServers)
})
export type GatewayOptions = typeof GatewayOptions.Type
export type GatewayOptionsInput = typeof GatewayOptions.Encoded

// ---------------------------------------------------------------------------------------------
// Decoding with readable issues

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc === "" ? String(key) : `${acc}.${String(key)}`),
    ""
  )

/**
 * Effect's formatter prints the offending value, recursively: a value nested some thousands of
 * levels deep (a client can send one) overflows the stack. Then each problem is formatted on its
 * own, and one whose value cannot be printed gets a plain message, so the reply stays -32602.
 */
const formatIssueSafely = (
  issue: ParseResult.ParseIssue,
  path: ReadonlyArray<PropertyKey>
): Array<ParseResult.ArrayFormatterIssue> => {
  try {
    return ParseResult.ArrayFormatter.formatIssueSync(issue).map((i) => ({ ...i, path: [...path, ...i.path] }))
  } catch {
    switch (issue._tag) {
      case "Pointer":
        return formatIssueSafely(issue.issue, [...path, ...(Array.isArray(issue.path) ? issue.path : [issue.path])])
      case "Composite":
        return (Array.isArray(issue.issues) ? issue.issues : [issue.issues]).flatMap((i) => formatIssueSafely(i, path))
      case "Refinement":
      case "Transformation":
        return formatIssueSafely(issue.issue, path)
      default:
        return [{
          _tag: issue._tag,
          path,
          message: issue._tag === "Type"
            ? `Expected ${String(issue.ast)}, actual a value nested too deeply to show`
            : "is invalid (a value nested too deeply to show)"
        }]
    }
  }
}

/** `path: problem` lines, e.g. `backends[0].id: must match ^[a-zA-Z0-9_-]{1,64}$`. */
export const formatIssues = (
  error: ParseResult.ParseError,
  mapPath: (path: ReadonlyArray<PropertyKey>) => ReadonlyArray<PropertyKey> = (p) => p
): Array<string> =>
  formatIssueSafely(error.issue, [])
    // An optional field is a union with undefined; its "Expected undefined" branch is noise.
    .filter((issue) => !issue.message.startsWith("Expected undefined, actual"))
    .map((issue) => {
      const where = formatPath(mapPath(issue.path))
      const what = issue._tag === "Missing" ? "is required" : issue.message
      return where === "" ? what : `${where}: ${what}`
    })

const decodeOptionsEither = Schema.decodeUnknownEither(GatewayOptions, { errors: "all" })

/** The options with `mcpServers` turned into stdio backends. */
export interface NormalizedOptions extends Omit<GatewayOptions, "mcpServers" | "backends"> {
  readonly backends?: ReadonlyArray<BackendConfig>
}

export const decodeOptions = (input: unknown, what: string): Either.Either<NormalizedOptions, InvalidParams> => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return Either.left(new InvalidParams({ message: `${what} must be a JSON object`, issues: [`${what}: must be an object`] }))
  }
  return decodeOptionsEither(input).pipe(
    Either.mapLeft((error) => {
      const issues = formatIssues(error)
      return new InvalidParams({ message: `Invalid ${what}: ${issues.join("; ")}`, issues })
    }),
    Either.flatMap((options) => {
      const { mcpServers, backends, ...rest } = options
      if (mcpServers !== undefined && backends !== undefined) {
        const issues = ["mcpServers: give either backends or mcpServers, not both"]
        return Either.left(new InvalidParams({ message: `Invalid ${what}: ${issues[0]}`, issues }))
      }
      if (mcpServers === undefined) return Either.right(backends === undefined ? rest : { ...rest, backends })
      const keys = Object.keys(mcpServers)
      return fromMcpServers(mcpServers).pipe(
        Either.mapLeft((error) => {
          // The converted list is indexed; the user wrote keys, so name the key.
          const issues = formatIssues(error, ([index, ...rest]) => [
            "mcpServers",
            typeof index === "number" ? (keys[index] ?? index) : (index ?? ""),
            ...rest
          ])
          return new InvalidParams({ message: `Invalid ${what}: ${issues.join("; ")}`, issues })
        }),
        Either.map((converted) => ({ ...rest, backends: converted }))
      )
    })
  )
}

/** Claude Desktop / Cursor entries become stdio backends, one per key, in file order. */
const fromMcpServers = (servers: typeof McpServers.Type) =>
  Schema.decodeUnknownEither(Backends, { errors: "all" })(
    Object.entries(servers).map(([id, s]) => ({
      id,
      type: "stdio",
      command: s.command,
      args: s.args ?? [],
      env: s.env ?? {},
      ...(s.cwd === undefined ? {} : { cwd: s.cwd }),
      ...(s.description === undefined ? {} : { description: s.description }),
      ...(s.displayName === undefined ? {} : { displayName: s.displayName }),
      ...(s.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: s.requestTimeoutMs }),
      ...(s.restartOnCrash === undefined ? {} : { restartOnCrash: s.restartOnCrash }),
      enabled: s.disabled !== true
    }))
  )

// ---------------------------------------------------------------------------------------------
// The configuration in force

export const DEFAULT_MODEL = "gpt-4.1-mini"
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000
export const DEFAULT_STARTUP_TIMEOUT_MS = 30_000
export const DEFAULT_MAX_TOOLS = 32
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024

export interface ResolvedConfig {
  readonly backends: ReadonlyArray<BackendConfig>
  readonly openaiApiKey: Option.Option<Redacted.Redacted<string>>
  /** Where the key came from, for the -32002 message and the logs (never the key itself). */
  readonly openaiApiKeySource: "env" | "initializationOptions" | "file" | "none"
  readonly openaiBaseUrl: Option.Option<string>
  readonly model: string
  readonly logLevel: LogLevelName
  readonly debugPort: Option.Option<number>
  readonly routing: Routing
  readonly exposeBackendTools: boolean
  readonly maxToolsPerRequest: number
  readonly requestTimeoutMs: number
  readonly startupTimeoutMs: number
  readonly maxFrameBytes: number
  /** Where the backends came from: "initializationOptions", "file:<path>" or "default". */
  readonly backendsSource: string
}

/** What start-up gathered before any client spoke. */
export interface ConfigSources {
  readonly env: Readonly<Record<string, string | undefined>>
  readonly file?: { readonly path: string; readonly options: NormalizedOptions } | undefined
  /** `--log-level` on the command line beats every other source. */
  readonly cliLogLevel?: LogLevelName | undefined
  /** The embedded default's root; the current directory unless a test says otherwise. */
  readonly cwd?: string | undefined
}

const require = createRequire(import.meta.url)

/** The path of server-filesystem's entry script, resolved from this package's dependencies. */
export const serverFilesystemEntry = (): string =>
  path.join(path.dirname(require.resolve("@modelcontextprotocol/server-filesystem/package.json")), "dist", "index.js")

/** One backend `filesystem` rooted at `cwd`, run by this very Node binary (no `npx`, no network). */
export const embeddedDefault = (cwd: string): ReadonlyArray<BackendConfig> => [
  {
    id: "filesystem",
    displayName: "Filesystem",
    description: `Read, write, list and search files under ${cwd}`,
    type: "stdio",
    command: process.execPath,
    args: [serverFilesystemEntry(), cwd],
    env: {},
    enabled: true,
    restartOnCrash: true
  }
]

const envNumber = (env: ConfigSources["env"], name: string): number | undefined => {
  const raw = env[name]
  if (raw === undefined || raw.trim() === "") return undefined
  const n = Number(raw)
  return Number.isInteger(n) && n >= 0 ? n : undefined
}

const envLogLevel = (raw: string | undefined): LogLevelName | undefined => {
  const lower = raw?.trim().toLowerCase()
  return lower !== undefined && (LogLevelName.literals as ReadonlyArray<string>).includes(lower)
    ? (lower as LogLevelName)
    : undefined
}

const nonEmpty = (s: string | undefined): string | undefined => (s === undefined || s.trim() === "" ? undefined : s)

/** Merges the sources; `init` is the client's decoded `initializationOptions`, if any. */
export const resolve = (sources: ConfigSources, init?: NormalizedOptions): ResolvedConfig => {
  const { env } = sources
  const file = sources.file?.options
  const pick = <K extends keyof NormalizedOptions>(key: K): NormalizedOptions[K] | undefined =>
    init?.[key] !== undefined ? init[key] : file?.[key]

  const envKey = nonEmpty(env.OPENAI_API_KEY)
  const [key, keySource] =
    envKey !== undefined
      ? [envKey, "env" as const]
      : nonEmpty(init?.OPENAI_API_KEY) !== undefined
      ? [init!.OPENAI_API_KEY!, "initializationOptions" as const]
      : nonEmpty(file?.OPENAI_API_KEY) !== undefined
      ? [file!.OPENAI_API_KEY!, "file" as const]
      : [undefined, "none" as const]

  const [backends, backendsSource] =
    init?.backends !== undefined
      ? [init.backends, "initializationOptions"]
      : file?.backends !== undefined
      ? [file.backends, `file:${sources.file!.path}`]
      : [embeddedDefault(sources.cwd ?? process.cwd()), "default"]

  const debugPort = pick("DEBUG_PORT")
  const envDebugPort = envNumber(env, "DEBUG_PORT")

  const config: ResolvedConfig = {
    backends,
    backendsSource,
    openaiApiKey: key === undefined ? Option.none() : Option.some(Redacted.make(key)),
    openaiApiKeySource: keySource,
    openaiBaseUrl: Option.fromNullable(pick("openaiBaseUrl") ?? nonEmpty(env.OPENAI_BASE_URL)),
    model: pick("model") ?? nonEmpty(env.OPENAI_MODEL) ?? DEFAULT_MODEL,
    logLevel: sources.cliLogLevel ?? pick("logLevel") ?? envLogLevel(env.LOG_LEVEL) ?? "info",
    debugPort: debugPort === null ? Option.none() : Option.fromNullable(debugPort ?? envDebugPort),
    routing: pick("routing") ?? "tool",
    exposeBackendTools: pick("exposeBackendTools") ?? true,
    maxToolsPerRequest: pick("maxToolsPerRequest") ?? DEFAULT_MAX_TOOLS,
    requestTimeoutMs: pick("requestTimeoutMs") ?? DEFAULT_REQUEST_TIMEOUT_MS,
    startupTimeoutMs: pick("startupTimeoutMs") ?? DEFAULT_STARTUP_TIMEOUT_MS,
    maxFrameBytes: file?.maxFrameBytes ?? envNumber(env, "AGENTIFY_MAX_FRAME_BYTES") ?? DEFAULT_MAX_FRAME_BYTES
  }
  registerSecrets(config)
  return config
}

/** Every secret the configuration holds goes into the scrubber before anything can log it. */
const registerSecrets = (config: ResolvedConfig) => {
  Option.map(config.openaiApiKey, Secrets.register)
  for (const backend of config.backends) {
    for (const value of Object.values(backend.env)) Secrets.register(value)
    for (const value of Secrets.secretArgs(backend.args)) Secrets.register(value)
  }
}

/** A backend as it may be printed: args masked, env reduced to its names. */
export const describeBackend = (backend: BackendConfig) => ({
  id: backend.id,
  command: backend.command,
  args: Secrets.maskArgs(backend.args),
  envKeys: Object.keys(backend.env),
  ...(backend.cwd === undefined ? {} : { cwd: backend.cwd }),
  enabled: backend.enabled
})

// ---------------------------------------------------------------------------------------------
// Start-up sources: .env, the config file

/** Reads `.env` in `dir` into `env` without overriding what is set. Returns the names it added. */
export const loadDotEnv = (dir: string, env: Record<string, string | undefined> = process.env): Array<string> => {
  let text: string
  try {
    text = readFileSync(path.join(dir, ".env"), "utf8")
  } catch {
    return []
  }
  const added: Array<string> = []
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (env[name] === undefined) {
      env[name] = value
      added.push(name)
    }
  }
  return added
}

/** A config file that cannot be used; start-up prints `message` and exits with code 2. */
export class ConfigFileError extends Schema.TaggedError<ConfigFileError>()("ConfigFileError", {
  path: Schema.String,
  message: Schema.String
}) {}

/** Reads and validates a config file (either shape of CONTRACT.md section 3). */
export const readConfigFile = (file: string): Either.Either<NonNullable<ConfigSources["file"]>, ConfigFileError> => {
  const absolute = path.resolve(file)
  let text: string
  try {
    text = readFileSync(absolute, "utf8")
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return Either.left(
      new ConfigFileError({
        path: absolute,
        message: `Cannot read config file ${absolute}: ${code === "ENOENT" ? "no such file" : String((error as Error).message)}`
      })
    )
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return Either.left(
      new ConfigFileError({ path: absolute, message: `Config file ${absolute} is not valid JSON: ${(error as Error).message}` })
    )
  }
  return decodeOptions(json, "config file").pipe(
    Either.mapLeft(
      (error) =>
        new ConfigFileError({
          path: absolute,
          message: `Config file ${absolute} is invalid:\n${error.issues.map((line) => `  - ${line}`).join("\n")}`
        })
    ),
    Either.flatMap((options) =>
      options.backends !== undefined && options.backends.length === 0
        ? Either.left(new ConfigFileError({ path: absolute, message: `Config file ${absolute} lists no backends` }))
        : Either.right({ path: absolute, options })
    )
  )
}

// ---------------------------------------------------------------------------------------------
// The service

export class GatewayConfig extends Context.Tag("mcp-agentify/GatewayConfig")<
  GatewayConfig,
  {
    /** The configuration in force now. */
    readonly current: Effect.Effect<ResolvedConfig>
    /** Validates a client's `initializationOptions` and makes them the configuration in force. */
    readonly applyInitializationOptions: (options: unknown) => Effect.Effect<ResolvedConfig, InvalidParams>
  }
>() {
  /** From start-up sources (the CLI). */
  static layer = (sources: ConfigSources): Layer.Layer<GatewayConfig> =>
    Layer.effect(
      GatewayConfig,
      Effect.gen(function* () {
        const ref = yield* Ref.make(resolve(sources))
        return {
          current: Ref.get(ref),
          applyInitializationOptions: (options: unknown) =>
            options === undefined || options === null
              ? Ref.get(ref)
              : Either.match(decodeOptions(options, "initializationOptions"), {
                  onLeft: Effect.fail,
                  onRight: (init) => {
                    const resolved = resolve(sources, init)
                    return Effect.as(Ref.set(ref, resolved), resolved)
                  }
                })
        }
      })
    )

  /**
   * From GatewayOptions given in code, for apps that embed the gateway. The environment still
   * supplies `OPENAI_API_KEY` and the other variables, as it does for the CLI.
   */
  static layerFromOptions = (
    options: GatewayOptionsInput,
    env: ConfigSources["env"] = process.env
  ): Layer.Layer<GatewayConfig, InvalidParams> =>
    Layer.unwrapEffect(
      Either.match(decodeOptions(options, "GatewayOptions"), {
        onLeft: Effect.fail,
        onRight: (init) => Effect.succeed(GatewayConfig.layer({ env, file: { path: "<options>", options: init } }))
      })
    )
}
