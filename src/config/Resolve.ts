/**
 * The configuration in force: every source with its precedence (initializationOptions, the file,
 * the environment with `.env` beneath it, the embedded default), `${env:NAME}` references, the
 * secrets registered before anything can log them, and what backends inherit. The one place the
 * sources meet.
 */
import { Option, Redacted } from "effect"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import * as Secrets from "../observability/Secrets.js"
import { stateDirOf } from "./StateDir.js"

import {
  BackendConfig,
  type CodeMode,
  type ConfirmTools,
  type HttpAuth,
  type State,
  type Profile,
  LogLevelName,
  MAX_FRAME_LIMIT,
  oauthOf,
  Routing,
  remoteUrlProblem,
  transportOf
} from "./Schema.js"
import { NormalizedOptions } from "./Decode.js"
import type { FlowGuard } from "./Flow.js"
import type { Limits } from "./Limits.js"
import { ConfigFile, DotEnvSetting } from "./Files.js"
export { stateDirOf } from "./StateDir.js"

export const DEFAULT_MODEL = "gpt-4.1-mini"
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000
/**
 * How long a session's first request waits for backends still starting (`initialize` never waits),
 * and how long a start on use may take: long enough for servers started from a local install
 * (measured under 1.5 s for ten), short enough that one slow `npx` download or a remote server
 * that does not answer holds no client up; later backends' tools arrive with `list_changed`.
 */
export const DEFAULT_STARTUP_TIMEOUT_MS = 5_000
/**
 * How long a backend started on use may sit unused before it is stopped: ten minutes, longer than
 * the pauses of a working session between calls (a model thinking, a person reading), short enough
 * that servers used once in a morning do not hold their memory all day.
 */
export const DEFAULT_IDLE_MS = 600_000
export const DEFAULT_MAX_TOOLS = 32
/**
 * What `tools/list` gives a client at most: VS Code takes 128 tools in all, its own among them, and
 * other clients fewer; a larger catalog is found with `agentify_search_tools`.
 */
export const DEFAULT_MAX_LISTED_TOOLS = 64
/** Model turns per orchestration: a search, a read and an answer fit, a runaway loop does not. */
export const DEFAULT_MAX_STEPS = 6

/** The audit log is rotated past this size, keeping this many older files. */
export const DEFAULT_AUDIT_MAX_BYTES = 10 * 1024 * 1024
export const DEFAULT_AUDIT_KEEP = 5

/** The audit log's settings, resolved. */
export interface AuditSettings {
  readonly file: string
  readonly arguments: "hash" | "full" | "none"
  readonly maxBytes: number
  readonly keep: number
}
/** A few thousand tokens of each result: what a model's context holds comfortably, turn after turn. */
export const DEFAULT_MAX_RESULT_CHARS = 32_000
export const DEFAULT_MAX_CALLS_PER_TURN = 16
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024
/** Larger than a client's: server-filesystem sends a file's text twice (content and structuredContent). */
export const DEFAULT_MAX_BACKEND_FRAME_BYTES = 64 * 1024 * 1024
/**
 * What the gateway sends a stdio client or a stdio backend in one frame: under the 10 MiB past
 * which the MCP SDK's stdio peers drop a line (its client then closes the connection; its servers
 * never answer). Their bound counts the line and the chunk being read (64 KiB): 128 KiB spare.
 */
export const DEFAULT_MAX_STDIO_FRAME_BYTES = 10 * 1024 * 1024 - 128 * 1024
export const DEFAULT_SESSION_IDLE_MS = 30 * 60_000
export const DEFAULT_MAX_SESSIONS = 1_000

export interface ResolvedConfig {
  readonly backends: ReadonlyArray<BackendConfig>
  readonly openaiApiKey: Option.Option<Redacted.Redacted<string>>
  /** Where the key came from, for the -32002 message and the logs (never the key itself). */
  readonly openaiApiKeySource: "env" | "dotenv" | "initializationOptions" | "file" | "none"
  readonly openaiBaseUrl: Option.Option<string>
  readonly model: string
  readonly logLevel: LogLevelName
  readonly debugPort: Option.Option<number>
  readonly routing: Routing
  readonly exposeBackendTools: boolean
  readonly maxToolsPerRequest: number
  /** The most tools `tools/list` gives a client (a profile's or the client's own may say otherwise). */
  readonly maxListedTools: number
  readonly maxSteps: number
  readonly confirmTools: ConfirmTools
  /** What a call the flow rules hold becomes: "confirm" (asked), "strict" (refused), "off". */
  readonly flowGuard: FlowGuard
  /** Calls per minute and at once, per subject, tool and backend; none: unlimited. */
  readonly limits: Limits | undefined
  /** A semantic ranking fused with the lexical one (see catalog/semantic/Embeddings); absent: lexical only. */
  readonly embeddings:
    | {
        readonly model: string
        readonly baseUrl?: string | undefined
        /** Sent to `baseUrl` instead of the model's key (see catalog/semantic/Embeddings' `endpointOf`). */
        readonly apiKey?: Redacted.Redacted<string> | undefined
      }
    | undefined
  /** The Cedar policy file (absolute), when policies are on. */
  readonly policies: string | undefined
  /** How much of each tool result (and of each call's arguments) goes back to the model. */
  readonly maxResultChars: number
  /** The tool calls one model turn may make. */
  readonly maxCallsPerTurn: number
  /** `agentify_run_code`: false when removed, else its limits as configured (the sandbox's defaults for the rest). */
  readonly codeMode: CodeMode
  /** How the gateway's own model acts when a request does not say: "tools" or "code". */
  readonly orchestrationMode: "tools" | "code"
  /** The audit log, when on: its file (absolute), what it holds of arguments, its rotation. */
  readonly audit: Option.Option<AuditSettings>
  /** Tool definitions pinned on first use: a changed one is quarantined (default), flagged, or ignored. */
  readonly toolPins: "quarantine" | "warn" | "off"
  /** Where the gateway keeps its state (tool pins): `AGENTIFY_STATE_DIR`, else the XDG state directory. */
  readonly stateDir: string
  /** Named subsets of the tools (`/profiles/<name>/mcp`, `--profile`). */
  readonly profiles: Readonly<Record<string, Profile>>
  /** `--http-auth oauth`: the issuer, audience and scopes tokens are checked against (file only). */
  readonly httpAuth: HttpAuth | undefined
  /** The store shared with the other gateways of a team (file only); undefined: all in this process. */
  readonly state: State | undefined
  readonly requestTimeoutMs: number
  readonly startupTimeoutMs: number
  /** When backends whose tools are known start: on first use (the default), or always at `initialize`. */
  readonly start: "onUse" | "always"
  /** A backend started on use stops after this long without use (its own `idleMs` wins). */
  readonly idleMs: number
  readonly maxFrameBytes: number
  /** The longest stdout line accepted from a backend (its own `maxFrameBytes` wins). */
  readonly maxBackendFrameBytes: number
  /** The largest frame sent to a stdio client: a longer reply becomes an error naming its size. */
  readonly maxReplyBytes: number
  /** The largest request sent to a stdio backend: a longer one fails at once. */
  readonly maxBackendRequestBytes: number
  /** Streamable HTTP: an idle session ends after this long. */
  readonly sessionIdleMs: number
  /** Streamable HTTP: sessions open at once before new ones get 503. */
  readonly maxSessions: number
  readonly allowedHosts: ReadonlyArray<string>
  readonly allowedOrigins: ReadonlyArray<string>
  readonly sessionIdPrefix: string
  /** Where the backends came from: "initializationOptions", "file:<path>" or "default". */
  readonly backendsSource: string
  /** What resolving noticed and the caller should log (a refused setting, ignored keys). */
  readonly notes: ReadonlyArray<ConfigNote>
}

export interface ConfigNote {
  /** "info": what `--servers-dir` found, also shown by `check`. */
  readonly level: "debug" | "info" | "warn"
  readonly message: string
}

/** Where the configuration on disk is (what start-up was given), to read it again on a change. */
export interface DiskSources {
  readonly configPath?: string | undefined
  readonly serversDir?: string | undefined
}

/** What start-up gathered before any client spoke. */
export interface ConfigSources {
  readonly env: Readonly<Record<string, string | undefined>>
  /** The gateway settings a `.env` in the working directory supplied (see `readDotEnv`). */
  readonly dotEnv?: Readonly<Partial<Record<DotEnvSetting, string>>> | undefined
  readonly file?: ConfigFile | undefined
  /** Where `file` and `serversDir` were read from; the gateway watches them. */
  readonly disk?: DiskSources | undefined
  /** What `--servers-dir` found (its servers are already among the file's backends). */
  readonly serversDir?:
    { readonly path: string; readonly found: ReadonlyArray<string>; readonly skipped: ReadonlyArray<string> } | undefined
  /** `--debug-port` on the command line beats every other source. */
  readonly cliDebugPort?: number | undefined
  /** `--log-level` on the command line beats every other source. */
  readonly cliLogLevel?: LogLevelName | undefined
  /** The embedded default's root; the current directory unless a test says otherwise. */
  readonly cwd?: string | undefined
  /** The home directory the embedded default refuses to serve; the user's unless a test says otherwise. */
  readonly home?: string | undefined
}

const require = createRequire(import.meta.url)

/** The path of server-filesystem's entry script, resolved from this package's dependencies. */
export const serverFilesystemEntry = (): string =>
  path.join(path.dirname(require.resolve("@modelcontextprotocol/server-filesystem/package.json")), "dist", "index.js")

/**
 * Why the embedded default will not serve `dir`, if it must not: a GUI client may start the gateway
 * in `/` or the home directory, and read and write access to all of it was never asked for.
 */
export const defaultRootRefusal = (dir: string, home: string = os.homedir()): string | undefined => {
  const resolved = path.resolve(dir)
  const isRoot = path.parse(resolved).root === resolved
  if (!isRoot && resolved !== path.resolve(home)) return undefined
  return (
    `the embedded filesystem backend refuses to serve ${isRoot ? "the filesystem root" : "the home directory"} (${resolved}): ` +
    "start the gateway in a project directory, or choose the directory in a config file (--config)"
  )
}

/** One backend `filesystem` rooted at `cwd`, run by this very Node binary (no `npx`, no network). */
export const embeddedDefault = (cwd: string, home?: string): ReadonlyArray<BackendConfig> => {
  const refused = defaultRootRefusal(cwd, home)
  return [
    {
      id: "filesystem",
      displayName: "Filesystem",
      description: `Read, write, list and search files under ${cwd}`,
      type: "stdio",
      command: process.execPath,
      args: [serverFilesystemEntry(), cwd],
      env: {},
      enabled: true,
      restartOnCrash: true,
      ...(refused === undefined ? {} : { refused })
    }
  ]
}

/** A whole number from the environment in [min, max]; anything else is as if unset. */
const envNumber = (raw: string | undefined, min: number, max: number): number | undefined => {
  if (raw === undefined || raw.trim() === "") return undefined
  const n = Number(raw)
  return Number.isInteger(n) && n >= min && n <= max ? n : undefined
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
  const dotEnv = sources.dotEnv ?? {}
  const file = sources.file?.options
  const pick = <K extends keyof NormalizedOptions>(key: K): NormalizedOptions[K] | undefined =>
    init?.[key] !== undefined ? init[key] : file?.[key]
  /** A gateway setting from the environment, or from `.env` beneath it. */
  const setting = (name: DotEnvSetting): string | undefined => nonEmpty(env[name]) ?? nonEmpty(dotEnv[name])
  const notes: Array<ConfigNote> = []

  const envKey = nonEmpty(env.OPENAI_API_KEY)
  const fromDotEnv = nonEmpty(dotEnv.OPENAI_API_KEY) === undefined ? undefined : dotEnv.OPENAI_API_KEY
  const fromInit = nonEmpty(init?.OPENAI_API_KEY) === undefined ? undefined : init?.OPENAI_API_KEY
  const fromFile = nonEmpty(file?.OPENAI_API_KEY) === undefined ? undefined : file?.OPENAI_API_KEY
  const [key, keySource] =
    envKey !== undefined
      ? [envKey, "env" as const]
      : fromDotEnv !== undefined
        ? [fromDotEnv, "dotenv" as const]
        : fromInit !== undefined
          ? [fromInit, "initializationOptions" as const]
          : fromFile !== undefined
            ? [fromFile, "file" as const]
            : [undefined, "none" as const]

  // A `.env` is the working directory's, which may be anyone's checkout: it may point the gateway
  // at another server only with its own key, never with one the user supplied elsewhere.
  let baseUrl = pick("openaiBaseUrl") ?? nonEmpty(env.OPENAI_BASE_URL)
  if (baseUrl === undefined && nonEmpty(dotEnv.OPENAI_BASE_URL) !== undefined) {
    if (keySource === "dotenv" || keySource === "none") baseUrl = dotEnv.OPENAI_BASE_URL
    else {
      notes.push({
        level: "warn",
        message: `ignoring OPENAI_BASE_URL from .env: the OpenAI key comes from ${keySource}, and .env may not send it elsewhere`
      })
    }
  }
  const serversDir = sources.serversDir
  for (const found of serversDir?.found ?? []) notes.push({ level: "info", message: `found in ${serversDir?.path}: ${found}` })
  for (const skipped of serversDir?.skipped ?? [])
    notes.push({ level: "info", message: `not a server in ${serversDir?.path}: ${skipped}` })
  for (const ignored of [...(file?.ignoredKeys ?? []), ...(init?.ignoredKeys ?? [])]) {
    notes.push({ level: "debug", message: `ignoring ${ignored}: a key of other MCP clients' configs` })
  }

  const [given, backendsSource] =
    init?.backends !== undefined
      ? [init.backends, "initializationOptions"]
      : file?.backends !== undefined
        ? [file.backends, fileSource(sources)]
        : [embeddedDefault(sources.cwd ?? process.cwd(), sources.home), "default"]
  // `${configDir}`: the config file's folder (a servers directory alone: that directory); for
  // initializationOptions and the embedded default, the directory the gateway runs in.
  const configDir =
    backendsSource === "initializationOptions" || backendsSource === "default" || sources.file === undefined
      ? (sources.cwd ?? process.cwd())
      : sources.file.path === sources.serversDir?.path
        ? sources.file.path
        : path.dirname(sources.file.path)
  const backends = given.map((backend) => withEnvReferences(backend, env, configDir))
  for (const backend of backends) if (backend.refused !== undefined) notes.push({ level: "warn", message: backend.refused })

  const policiesFile = pick("policies")
  const debugPort = pick("DEBUG_PORT")
  // Never from .env: a checkout's file must not open a window on the gateway's traffic.
  const envDebugPort = envNumber(env.DEBUG_PORT, 0, 65535)

  const config: ResolvedConfig = {
    backends,
    backendsSource,
    openaiApiKey: key === undefined ? Option.none() : Option.some(Redacted.make(key)),
    openaiApiKeySource: keySource,
    openaiBaseUrl: Option.fromNullishOr(baseUrl),
    model: pick("model") ?? setting("OPENAI_MODEL") ?? DEFAULT_MODEL,
    logLevel: sources.cliLogLevel ?? pick("logLevel") ?? envLogLevel(setting("LOG_LEVEL")) ?? "info",
    debugPort:
      sources.cliDebugPort !== undefined
        ? Option.some(sources.cliDebugPort)
        : debugPort === null
          ? Option.none()
          : Option.fromNullishOr(debugPort ?? envDebugPort),
    routing: pick("routing") ?? "tool",
    exposeBackendTools: pick("exposeBackendTools") ?? true,
    maxToolsPerRequest: pick("maxToolsPerRequest") ?? DEFAULT_MAX_TOOLS,
    maxListedTools: pick("maxListedTools") ?? DEFAULT_MAX_LISTED_TOOLS,
    maxSteps: pick("maxSteps") ?? DEFAULT_MAX_STEPS,
    confirmTools: pick("confirmTools") ?? "destructive",
    flowGuard: pick("flowGuard") ?? "confirm",
    limits: pick("limits"),
    embeddings: embeddingsOf(pick("embeddings")),
    // Relative to where the gateway runs, as the audit log's file.
    policies: policiesFile === undefined ? undefined : path.resolve(sources.cwd ?? process.cwd(), policiesFile),
    maxResultChars: pick("maxResultChars") ?? DEFAULT_MAX_RESULT_CHARS,
    maxCallsPerTurn: pick("maxCallsPerTurn") ?? DEFAULT_MAX_CALLS_PER_TURN,
    codeMode: pick("codeMode") ?? {},
    toolPins: pick("toolPins") ?? "quarantine",
    stateDir: stateDirOf(env, sources.home),
    audit: Option.map(Option.fromNullishOr(pick("audit")), (audit) => ({
      // Relative to where the gateway runs.
      file: path.resolve(sources.cwd ?? process.cwd(), audit.file),
      arguments: audit.arguments ?? "hash",
      maxBytes: audit.maxBytes ?? DEFAULT_AUDIT_MAX_BYTES,
      keep: audit.keep ?? DEFAULT_AUDIT_KEEP
    })),
    orchestrationMode: pick("orchestrationMode") ?? "tools",
    profiles: pick("profiles") ?? {},
    requestTimeoutMs: pick("requestTimeoutMs") ?? DEFAULT_REQUEST_TIMEOUT_MS,
    startupTimeoutMs: pick("startupTimeoutMs") ?? DEFAULT_STARTUP_TIMEOUT_MS,
    start: pick("start") ?? "onUse",
    idleMs: pick("idleMs") ?? DEFAULT_IDLE_MS,
    maxFrameBytes:
      file?.maxFrameBytes ?? envNumber(setting("AGENTIFY_MAX_FRAME_BYTES"), 1, MAX_FRAME_LIMIT) ?? DEFAULT_MAX_FRAME_BYTES,
    maxBackendFrameBytes: pick("maxBackendFrameBytes") ?? DEFAULT_MAX_BACKEND_FRAME_BYTES,
    maxReplyBytes: pick("maxReplyBytes") ?? DEFAULT_MAX_STDIO_FRAME_BYTES,
    maxBackendRequestBytes: pick("maxBackendRequestBytes") ?? DEFAULT_MAX_STDIO_FRAME_BYTES,
    sessionIdleMs: file?.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS,
    maxSessions: file?.maxSessions ?? DEFAULT_MAX_SESSIONS,
    allowedHosts: file?.allowedHosts ?? [],
    allowedOrigins: file?.allowedOrigins ?? [],
    sessionIdPrefix: file?.sessionIdPrefix ?? "",
    httpAuth: file?.httpAuth,
    state: file?.state,
    notes
  }
  registerSecrets(config)
  return config
}

/** `${env:NAME}`, `${NAME}` or `${NAME:-default}` in a backend's args, env, headers, url and cwd. */
const ENV_REFERENCE = /\$\{(env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g
/**
 * `${configDir}`: the folder of the config file that names the backend, so that a path beside the
 * file does not depend on where the gateway was started (VS Code's `${workspaceFolder}`). Not an
 * environment variable: `${env:configDir}` is one.
 */
export const CONFIG_DIR = "configDir"
const CONFIG_DIR_REFERENCE = /\$\{configDir\}/g
/** VS Code's `${input:id}`: a value VS Code prompts for, which the gateway cannot. */
const INPUT_REFERENCE = /\$\{input:([^}]*)\}/
/** A variable whose value is a secret by its name: registered with the scrubber once substituted. */
const SECRET_NAME = /TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH/i

/**
 * A backend with its `${env:NAME}` references resolved from the gateway's environment, so a file
 * need not hold secrets, and `${configDir}` with `configDir` (in its command too). A variable that
 * is not set leaves the backend refused, saying which.
 */
const withEnvReferences = (
  backend: BackendConfig,
  env: Readonly<Record<string, string | undefined>>,
  configDir: string
): BackendConfig => {
  // Where each unset variable or VS Code input is used ("env MEMORY_FILE_PATH", "args[2]"): names
  // and places are not secrets, and a user needs both to fix the file.
  const missing = new Map<string, Set<string>>()
  const inputs = new Map<string, Set<string>>()
  const note = (into: Map<string, Set<string>>, name: string, where: string) =>
    into.set(name, (into.get(name) ?? new Set()).add(where))
  const expand = (where: string) => (text: string) => {
    const input = INPUT_REFERENCE.exec(text)
    const named = input?.[1]
    if (named !== undefined) note(inputs, named, where)
    return text.replace(ENV_REFERENCE, (_, prefix: string | undefined, name: string, fallback: string | undefined) => {
      if (prefix === undefined && name === CONFIG_DIR && fallback === undefined) return configDir
      const value = env[name] ?? fallback
      if (value === undefined) {
        note(missing, name, where)
        return ""
      }
      if (SECRET_NAME.test(name)) Secrets.register(value)
      return value
    })
  }
  const headers = backend.headers ?? {}
  if (
    !backend.command?.includes("${") &&
    !backend.args.some((a) => a.includes("${")) &&
    !Object.values(backend.env).some((v) => v.includes("${")) &&
    !Object.values(headers).some((v) => v.includes("${")) &&
    !backend.cwd?.includes("${") &&
    !backend.url?.includes("${")
  ) {
    return backend
  }
  const expandAll = (field: string, record: Readonly<Record<string, string>>) =>
    Object.fromEntries(Object.entries(record).map(([k, v]) => [k, expand(`${field} ${k}`)(v)]))
  const expanded: BackendConfig = {
    ...backend,
    // The program that runs takes `${configDir}` alone: never a value from the environment.
    ...(backend.command === undefined ? {} : { command: backend.command.replace(CONFIG_DIR_REFERENCE, () => configDir) }),
    args: backend.args.map((arg, i) => expand(`args[${i}]`)(arg)),
    env: expandAll("env", backend.env),
    ...(backend.headers === undefined ? {} : { headers: expandAll("header", backend.headers) }),
    ...(backend.cwd === undefined ? {} : { cwd: expand("cwd")(backend.cwd) }),
    ...(backend.url === undefined ? {} : { url: expand("url")(backend.url) })
  }
  const places = (where: Set<string> | undefined) => [...(where ?? [])].join(", ")
  // A URL is checked once its references are resolved (the schema let `${...}` through).
  const urlProblem = expanded.url === undefined ? undefined : remoteUrlProblem(transportOf(backend), expanded.url)
  if (missing.size === 0 && urlProblem !== undefined) {
    return { ...backend, refused: `backend '${backend.id}': its url ${urlProblem} once resolved` }
  }
  if (inputs.size > 0) {
    const [input, where] = [...inputs][0] ?? ["", new Set<string>()]
    return {
      ...backend,
      refused:
        backend.refused ??
        `backend '${backend.id}' uses VS Code's \${input:${input}} in ${places(where)}, which only VS Code can prompt for: ` +
          "put the value in the gateway's environment and refer to it as ${env:NAME}"
    }
  }
  if (missing.size === 0) return expanded
  return {
    ...backend,
    refused:
      backend.refused ??
      `backend '${backend.id}' refers to ${[...missing].map(([n, where]) => `\${env:${n}} in ${places(where)}`).join("; ")}, ` +
        `which ${missing.size === 1 ? "is" : "are"} not set in the gateway's environment`
  }
}

/**
 * The literal parts of a value that may hold `${...}` references: what is a secret in a backend
 * that was refused before its references were resolved. The references themselves are names.
 */
const literalParts = (value: string): Array<string> => value.split(/\$\{[^}]*\}/)

/** Where the file's backends came from: a config file, a servers directory, or both. */
const fileSource = (sources: ConfigSources): string => {
  const dir = sources.serversDir?.path
  const file = sources.file?.path ?? ""
  if (dir === undefined) return `file:${file}`
  return dir === file ? `servers directory:${dir}` : `file:${file} and servers directory:${dir}`
}

/** A URL's password, and its query values whose names say they are secrets (`?api_key=`). */
const registerUrlSecrets = (raw: string) => {
  try {
    const url = new URL(raw)
    Secrets.register(decodeURIComponent(url.password))
    Secrets.register(url.password)
    if (url.password !== "") Secrets.register(`${url.username}:${url.password}`)
    for (const [name, value] of url.searchParams) if (SECRET_NAME.test(name)) Secrets.register(value)
  } catch {
    // Not a URL: whoever uses it says so without printing it.
  }
}

/** `embeddings` with its key redacted. */
const embeddingsOf = (given: NormalizedOptions["embeddings"] | undefined): ResolvedConfig["embeddings"] =>
  given === undefined
    ? undefined
    : {
        model: given.model,
        baseUrl: given.baseUrl,
        apiKey: nonEmpty(given.apiKey) === undefined ? undefined : Redacted.make(given.apiKey!)
      }

/** Every secret the configuration holds goes into the scrubber before anything can log it. */
const registerSecrets = (config: ResolvedConfig) => {
  Option.map(config.openaiApiKey, Secrets.register)
  Option.map(config.openaiBaseUrl, registerUrlSecrets)
  if (config.embeddings?.apiKey !== undefined) Secrets.register(Redacted.value(config.embeddings.apiKey))
  if (config.embeddings?.baseUrl !== undefined) registerUrlSecrets(config.embeddings.baseUrl)
  // The store's password, when its URL carries one.
  if (config.state !== undefined) registerUrlSecrets(config.state.url)
  for (const backend of config.backends) {
    for (const value of Object.values(backend.headers ?? {})) {
      // A backend refused for an unset variable keeps its `${env:NAME}`: a name, not a secret.
      if (backend.refused !== undefined && value.includes("${")) {
        for (const part of literalParts(value)) Secrets.register(part)
        continue
      }
      Secrets.register(value)
      // "Bearer <token>": the token alone too, wherever a server echoes it.
      const credential = /^\s*\S+\s+(\S+)\s*$/.exec(value)?.[1]
      if (credential !== undefined) Secrets.register(credential)
    }
    if (backend.url !== undefined) registerUrlSecrets(backend.url)
    for (const value of Object.values(backend.env)) {
      if (backend.refused !== undefined && value.includes("${")) for (const part of literalParts(value)) Secrets.register(part)
      else Secrets.register(value)
    }
    for (const value of Secrets.secretArgs(backend.args)) Secrets.register(value)
    Secrets.register(oauthOf(backend)?.clientSecret ?? "")
  }
}

/** A backend as it may be printed: args masked, env reduced to its names. */
export const describeBackend = (backend: BackendConfig) => ({
  id: backend.id,
  ...(backend.url === undefined
    ? { command: backend.command }
    : {
        transport: transportOf(backend),
        url: Secrets.displayUrl(backend.url),
        headerNames: Object.keys(backend.headers ?? {})
      }),
  args: Secrets.maskArgs(backend.args),
  ...(backend.auth === undefined ? {} : { auth: oauthOf(backend)?.grant ?? "authorization_code" }),
  envKeys: Object.keys(backend.env),
  ...(backend.cwd === undefined ? {} : { cwd: backend.cwd }),
  enabled: backend.enabled
})
