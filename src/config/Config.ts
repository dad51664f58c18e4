/**
 * Gateway configuration: the GatewayOptions / BackendConfig schemas, the
 * Claude Desktop / Cursor `mcpServers` shape, every source with its precedence, and the
 * `GatewayConfig` service that holds the configuration in force.
 *
 * Precedence, highest first: `initializationOptions`, the config file (`--config` or
 * `AGENTIFY_CONFIG`), the environment (with `.env` loaded beneath it), the embedded default.
 * The OpenAI key is the exception the contract names: env `OPENAI_API_KEY` wins over both.
 */
import { Context, Effect, Either, Layer, Option, ParseResult, Redacted, Schema, type Stream, SubscriptionRef } from "effect"
import { closeSync, constants as fsConstants, fstatSync, openSync, readSync } from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { parseEnv } from "node:util"
import { InvalidParams } from "../protocol/Errors.js"
import * as Mcp from "../protocol/Mcp.js"
import { parseJsonc } from "./Jsonc.js"
import { LOG_LEVEL_NAMES, type LogLevelName as LevelName } from "../observability/Logging.js"
import * as Secrets from "../observability/Secrets.js"
import { closest } from "./Suggest.js"

// ---------------------------------------------------------------------------------------------
// Schemas

const ID_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/

const BackendId = Schema.String.pipe(
  Schema.filter((s) => ID_PATTERN.test(s), { message: () => "must match ^[a-zA-Z0-9_-]{1,64}$" })
)

/** OpenAI accepts at most 128 tools in one request. */
export const MAX_TOOLS_LIMIT = 128

/**
 * A whole number in [1, max]. Every duration and size is bounded: Node clamps a timer over 2^31-1 ms
 * to 1 ms, so an unbounded "wait a month" would become "time out at once", in a loop.
 */
const BoundedInt = (max: number, unit: string) =>
  Schema.Number.pipe(
    Schema.filter((n) => Number.isInteger(n) && n >= 1 && n <= max, {
      message: () => `must be a whole number of ${unit} from 1 to ${max}`
    })
  )

/** The longest duration any setting accepts: 24 hours. */
export const MAX_DURATION_MS = 86_400_000
/** The largest frame any setting accepts: 1 GiB. */
export const MAX_FRAME_LIMIT = 1024 * 1024 * 1024
const DurationMs = BoundedInt(MAX_DURATION_MS, "milliseconds")
const MAX_SESSIONS_LIMIT = 100_000
const FrameBytes = BoundedInt(MAX_FRAME_LIMIT, "bytes")

/**
 * A string whose value is never echoed in an error: env values, arguments and keys are secrets,
 * and Effect's default message ("Expected string, actual ...") would print a mistyped one.
 */
const SecretString = Schema.String.annotations({ message: () => "must be a string (value not shown)" })
const SecretEnv = Schema.Record({ key: Schema.String, value: SecretString })

const Port = Schema.Number.pipe(
  Schema.filter((n) => Number.isInteger(n) && n >= 0 && n <= 65535, { message: () => "must be a port number (0-65535)" })
)

const NonEmptyString = Schema.String.pipe(
  Schema.filter((s) => s.trim().length > 0, { message: () => "must be a non-empty string" })
)

export const LogLevelName = Schema.Literal(...LOG_LEVEL_NAMES)
export type LogLevelName = LevelName

export const Routing = Schema.Literal("tool", "backend")
export type Routing = typeof Routing.Type

const isFileUri = (s: string) => /^file:\/\//i.test(s)

/** A root: an absolute path or a `file://` URI, or `{uri, name}`. */
const Root = Schema.Union(
  Schema.String.pipe(
    Schema.filter((s) => path.isAbsolute(s) || isFileUri(s), { message: () => "must be an absolute path or a file:// URI" })
  ),
  Schema.Struct({
    uri: Schema.String.pipe(Schema.filter(isFileUri, { message: () => "must be a file:// URI" })),
    name: Schema.optional(Schema.String)
  })
)
const Roots = Schema.Array(Root).pipe(Schema.maxItems(100))

/** A backend's configured roots as MCP's `roots/list` gives them. */
export const rootsOf = (backend: {
  readonly roots?: ReadonlyArray<typeof Root.Type> | undefined
}): ReadonlyArray<{ readonly uri: string; readonly name?: string }> =>
  (backend.roots ?? []).map((root) =>
    typeof root !== "string"
      ? root.name === undefined
        ? { uri: root.uri }
        : { uri: root.uri, name: root.name }
      : isFileUri(root)
        ? { uri: root }
        : { uri: pathToFileURL(root).href, name: path.basename(root) || root }
  )

/** How a backend is reached: a child process, or a remote server (see `transportOf`). */
export const BackendType = Schema.Literal("stdio", "http", "streamable-http", "sse", "websocket").annotations({
  message: () => ({ message: "must be stdio, http, streamable-http, sse or websocket", override: true })
})
export type BackendType = typeof BackendType.Type

/** A remote server's address: http(s) for the HTTP transports, ws(s) for WebSocket. */
const RemoteUrl = Schema.String.pipe(
  Schema.filter(
    (s) => {
      // A ${env:NAME} reference is checked once it is resolved.
      if (s.includes("${")) return true
      try {
        return /^(https?|wss?):$/.test(new URL(s).protocol)
      } catch {
        return false
      }
    },
    { message: () => "must be an http://, https://, ws:// or wss:// URL" }
  )
)

/** A protocol version a backend can be pinned to. */
const ProtocolVersion = Schema.Literal(...Mcp.SUPPORTED_PROTOCOL_VERSIONS, Mcp.STATELESS_PROTOCOL_VERSION).annotations({
  message: () => ({
    message: `must be one of ${[Mcp.STATELESS_PROTOCOL_VERSION, ...Mcp.SUPPORTED_PROTOCOL_VERSIONS].join(", ")}`,
    override: true
  })
})

/** The most processes one backend may run (`maxInstances`). */
export const MAX_INSTANCES = 16

const BackendFields = Schema.Struct({
  id: BackendId,
  displayName: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  /** Without it: "stdio", or for a `url`, "websocket" (ws://, wss://) or "http". */
  type: Schema.optional(BackendType),
  command: Schema.optional(NonEmptyString),
  /** A remote server's address (with `type` http, streamable-http, sse or websocket). */
  url: Schema.optional(RemoteUrl),
  /** Sent to a remote server with every request (credentials: secrets, never logged). */
  headers: Schema.optional(SecretEnv),
  args: Schema.optionalWith(Schema.Array(SecretString), { default: () => [] }),
  env: Schema.optionalWith(SecretEnv, { default: () => ({}) }),
  /** Gateway settings a backend may inherit all the same (e.g. OPENAI_API_KEY); see `backendEnv`. */
  inheritEnv: Schema.optional(Schema.Array(Schema.String)),
  cwd: Schema.optional(Schema.String),
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  requestTimeoutMs: Schema.optional(DurationMs),
  restartOnCrash: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  /** The longest stdout line (one JSON-RPC message) accepted from this backend. */
  maxFrameBytes: Schema.optional(FrameBytes),
  /** What `roots/list` answers when no client's roots can be asked (see `rootsOf`). */
  roots: Schema.optional(Roots),
  /** Waited after the process starts and before the handshake, for servers slow to listen. */
  startupDelayMs: Schema.optional(DurationMs),
  /** The only protocol version offered (a server that misbehaves with newer ones). */
  protocolVersion: Schema.optional(ProtocolVersion),
  /** Processes run for a server that keeps no state between calls; calls go to the least busy. */
  maxInstances: Schema.optional(BoundedInt(MAX_INSTANCES, "instances")),
  /** True (the default): the server keeps state per connection, so one process serves it. */
  requiresStatefulConnection: Schema.optional(Schema.Boolean),
  /** Heartbeats (see `healthCheckOf`); false turns them off. */
  healthCheck: Schema.optional(
    Schema.Union(
      Schema.Literal(false),
      Schema.Struct({
        intervalMs: Schema.optional(DurationMs),
        timeoutMs: Schema.optional(DurationMs),
        failures: Schema.optional(BoundedInt(100, "failures"))
      })
    )
  )
})

/** A backend's heartbeat: every `intervalMs` of silence a ping, answered within `timeoutMs`. */
export interface HealthCheck {
  readonly intervalMs: number
  readonly timeoutMs: number
  /** Missed pings in a row after which the backend is restarted. */
  readonly failures: number
}

export const DEFAULT_HEALTH_CHECK: HealthCheck = { intervalMs: 15_000, timeoutMs: 5_000, failures: 3 }

/** The heartbeat a backend gets: the defaults with its own settings over them, or none. */
export const healthCheckOf = (backend: {
  readonly healthCheck?: false | { readonly [K in keyof HealthCheck]?: number | undefined } | undefined
}): HealthCheck | undefined => {
  const own = backend.healthCheck
  if (own === false) return undefined
  return {
    intervalMs: own?.intervalMs ?? DEFAULT_HEALTH_CHECK.intervalMs,
    timeoutMs: own?.timeoutMs ?? DEFAULT_HEALTH_CHECK.timeoutMs,
    failures: own?.failures ?? DEFAULT_HEALTH_CHECK.failures
  }
}

/** Why `url` does not suit `transport` (its scheme, or not a URL at all), or undefined. */
const remoteUrlProblem = (transport: BackendType, url: string): string | undefined => {
  let protocol: string
  try {
    protocol = new URL(url).protocol
  } catch {
    return "must be an http://, https://, ws:// or wss:// URL"
  }
  if (transport === "websocket") return /^wss?:$/.test(protocol) ? undefined : "must be a ws:// or wss:// URL"
  return /^https?:$/.test(protocol) ? undefined : "must be an http:// or https:// URL"
}

/** How a backend is reached. */
export const transportOf = (backend: { readonly type?: BackendType | undefined; readonly url?: string | undefined }) =>
  backend.type ?? (backend.url === undefined ? "stdio" : /^wss?:/i.test(backend.url) ? "websocket" : "http")

export const BackendConfig = BackendFields.pipe(
  Schema.filter((backend) => {
    const transport = transportOf(backend)
    if ((backend.maxInstances ?? 1) > 1) {
      if (transport !== "stdio") return { path: ["maxInstances"], message: "is for stdio servers (processes run here)" }
      if (backend.requiresStatefulConnection !== false) {
        return {
          path: ["maxInstances"],
          message: "needs requiresStatefulConnection: false (a server that keeps state per connection must be one process)"
        }
      }
    }
    if (transport === "stdio") {
      if (backend.command === undefined) return { path: ["command"], message: "is required (or give a url for a remote server)" }
      if (backend.url !== undefined) return { path: ["url"], message: "is for remote servers: give a type other than stdio" }
      return true
    }
    if (backend.url === undefined) return { path: ["url"], message: `is required for a ${transport} backend` }
    if (backend.command !== undefined) return { path: ["command"], message: "is for stdio servers: a remote one has a url" }
    // A ${env:NAME} reference is checked once it is resolved (see `withEnvReferences`).
    const problem = backend.url.includes("${") ? undefined : remoteUrlProblem(transport, backend.url)
    return problem === undefined || { path: ["url"], message: problem }
  })
)
export type BackendConfig = typeof BackendConfig.Type & {
  /**
   * Set by the gateway, never by a file: why this backend must not start. The embedded default
   * refuses to serve `/` or the home directory; the backend is then `failed` with this reason.
   */
  readonly refused?: string | undefined
}
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

const Backends = UniqueBackends.pipe(Schema.filter((backends) => backends.length > 0 || "must list at least one backend"))

/**
 * An entry of a server map: Claude Desktop / Cursor `mcpServers`, VS Code `servers` (stdio, or
 * remote with `url`, `type` and `headers`), and the `servers`/`defaults` shape whose options
 * (`enabled`, `timeout`, `startupDelay`, ...) are in milliseconds.
 */
const McpServerEntry = Schema.Struct({
  type: Schema.optional(
    // Cline writes streamableHttp.
    Schema.Literal(...BackendType.literals, "streamableHttp").annotations({
      message: () => ({ message: "must be stdio, http, streamable-http, sse or websocket", override: true })
    })
  ),
  // BackendConfig's own options are accepted here too, so one file can keep the familiar shape
  // (those with a default are optional here, so `defaults` can tell an absent one).
  ...BackendFields.pick(
    "command",
    "url",
    "headers",
    "cwd",
    "description",
    "displayName",
    "inheritEnv",
    "requestTimeoutMs",
    "maxFrameBytes",
    "roots",
    "startupDelayMs",
    "protocolVersion",
    "maxInstances",
    "requiresStatefulConnection"
  ).fields,
  args: Schema.optional(Schema.Array(SecretString)),
  env: Schema.optional(SecretEnv),
  restartOnCrash: Schema.optional(Schema.Boolean),
  disabled: Schema.optional(Schema.Boolean),
  /** Cline's name for `type`. */
  transportType: Schema.optional(
    Schema.Literal("stdio", "sse", "streamableHttp").annotations({
      message: () => ({ message: "must be stdio, sse or streamableHttp", override: true })
    })
  ),
  enabled: Schema.optional(Schema.Boolean),
  /** Milliseconds, as `requestTimeoutMs` (only in a `servers` map: Cline writes seconds in `mcpServers`). */
  timeout: Schema.optional(DurationMs),
  /** Milliseconds waited after the process starts (`startupDelayMs`). */
  startupDelay: Schema.optional(DurationMs)
})

const McpServers = Schema.Record({ key: Schema.String, value: McpServerEntry })

/** `defaults`: options laid beneath every entry of the server map (never a command or address). */
const ServerDefaults = McpServerEntry.omit("type", "command", "url", "args", "cwd", "displayName", "description")

/** Every GatewayOptions field but `backends`; shared by the file and `initializationOptions`. */
const optionFields = {
  OPENAI_API_KEY: Schema.optional(SecretString),
  logLevel: Schema.optional(LogLevelName),
  DEBUG_PORT: Schema.optional(Schema.NullOr(Port)),
  model: Schema.optional(NonEmptyString),
  openaiBaseUrl: Schema.optional(NonEmptyString),
  routing: Schema.optional(Routing),
  exposeBackendTools: Schema.optional(Schema.Boolean),
  maxToolsPerRequest: Schema.optional(BoundedInt(MAX_TOOLS_LIMIT, "tools")),
  requestTimeoutMs: Schema.optional(DurationMs),
  startupTimeoutMs: Schema.optional(DurationMs),
  maxFrameBytes: Schema.optional(FrameBytes),
  maxBackendFrameBytes: Schema.optional(FrameBytes),
  // Streamable HTTP (--http): process-wide, so a session's initializationOptions cannot set them.
  sessionIdleMs: Schema.optional(DurationMs),
  maxSessions: Schema.optional(BoundedInt(MAX_SESSIONS_LIMIT, "sessions")),
  /** Host header values accepted besides the bound address (DNS-rebinding protection). */
  allowedHosts: Schema.optional(Schema.Array(NonEmptyString)),
  /** Origin header values accepted besides loopback origins. */
  allowedOrigins: Schema.optional(Schema.Array(NonEmptyString)),
  /** Starts every Mcp-Session-Id this gateway issues, so a proxy in front of several can route by it. */
  sessionIdPrefix: Schema.optional(
    Schema.String.pipe(
      Schema.filter((s) => /^[A-Za-z0-9._-]{1,32}$/.test(s), {
        message: () => "must be 1 to 32 letters, digits, '.', '_' or '-'"
      })
    )
  )
}

/**
 * GatewayOptions as a source gives them: every field optional (an `initializationOptions`
 * carrying only a key is fine), `backends` or `mcpServers` (not both) when backends are given.
 */
export const GatewayOptions = Schema.Struct({
  ...optionFields,
  backends: Schema.optional(Backends),
  mcpServers: Schema.optional(McpServers),
  /** VS Code's name for the same map (`.vscode/mcp.json`), and that of the `servers`/`defaults` shape. */
  servers: Schema.optional(McpServers),
  defaults: Schema.optional(ServerDefaults)
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
        return [
          {
            _tag: issue._tag,
            path,
            message:
              issue._tag === "Type"
                ? `Expected ${String(issue.ast)}, actual a value nested too deeply to show`
                : "is invalid (a value nested too deeply to show)"
          }
        ]
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

// ---------------------------------------------------------------------------------------------
// Keys: unknown ones are errors, so a misspelt `backend` cannot silently leave the default running

/** Every key GatewayOptions accepts (the docs list each one: test/docs.test.ts). */
export const OPTION_KEYS = [...Object.keys(optionFields), "backends", "mcpServers", "servers", "defaults"]
/** Every key a BackendConfig accepts. */
export const BACKEND_KEYS = Object.keys(BackendFields.fields)
const MCP_SERVER_KEYS = Object.keys(McpServerEntry.fields)
const DEFAULTS_KEYS = Object.keys(ServerDefaults.fields)
/** Keys that other MCP clients keep in their own config files; they mean nothing to the gateway. */
const FOREIGN_TOP_KEYS = new Set(["$schema", "globalShortcut", "inputs"])
const FOREIGN_SERVER_KEYS = new Set(["autoApprove", "alwaysAllow", "disabledTools", "trust", "includeTools", "excludeTools"])
/** In `mcpServers`, `timeout` is Cline's, in seconds: ignored there (see `fromMcpServers`). */
const CLINE_FOREIGN_KEYS = new Set([...FOREIGN_SERVER_KEYS, "timeout"])
/** Names that JavaScript objects treat specially: a key like this would be dropped while decoding. */
const RESERVED_KEYS = new Set(["__proto__", "constructor", "prototype"])

/** `unknown key 'backend' (did you mean 'backends'?)` */
const unknownKey = (key: string, known: ReadonlyArray<string>): string => {
  const best = closest(key, known)
  return `unknown key '${key.slice(0, 64)}'${best === undefined ? "" : ` (did you mean '${best}'?)`}`
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * The key problems of a GatewayOptions document, as `path: problem` lines, and the foreign keys
 * it ignores. Only the gateway's own structures are checked (a backend's `env` is free-form).
 */
const checkKeys = (input: Record<string, unknown>): { problems: Array<string>; ignored: Array<string> } => {
  const problems: Array<string> = []
  const ignored: Array<string> = []
  const check = (object: Record<string, unknown>, where: string, known: ReadonlyArray<string>, foreign: ReadonlySet<string>) => {
    for (const key of Object.keys(object)) {
      const path = where === "" ? key : `${where}.${key}`
      if (RESERVED_KEYS.has(key)) problems.push(`${where === "" ? "" : `${where}: `}the key '${key}' is not allowed`)
      else if (foreign.has(key)) ignored.push(path)
      else if (!known.includes(key)) problems.push(`${where === "" ? "" : `${where}: `}${unknownKey(key, known)}`)
    }
  }
  check(input, "", OPTION_KEYS, FOREIGN_TOP_KEYS)
  /** A server's own keys, and `__proto__` in its free-form `env` (it would vanish in decoding). */
  const checkServer = (
    server: Record<string, unknown>,
    where: string,
    known: ReadonlyArray<string>,
    foreign: ReadonlySet<string> = FOREIGN_SERVER_KEYS
  ) => {
    check(server, where, known, foreign)
    if (isObject(server.env) && Object.hasOwn(server.env, "__proto__"))
      problems.push(`${where}.env: the key '__proto__' is not allowed`)
  }
  if (Array.isArray(input.backends)) {
    input.backends.forEach((backend, i) => {
      if (isObject(backend)) checkServer(backend, `backends[${i}]`, BACKEND_KEYS)
    })
  }
  for (const field of ["mcpServers", "servers"] as const) {
    const map = input[field]
    if (!isObject(map)) continue
    for (const [name, server] of Object.entries(map)) {
      if (RESERVED_KEYS.has(name)) problems.push(`${field}: the server name '${name}' is not allowed`)
      else if (isObject(server))
        checkServer(
          server,
          `${field}.${name}`,
          MCP_SERVER_KEYS,
          field === "mcpServers" ? CLINE_FOREIGN_KEYS : FOREIGN_SERVER_KEYS
        )
    }
  }
  if (isObject(input.defaults)) checkServer(input.defaults, "defaults", DEFAULTS_KEYS)
  return { problems, ignored }
}

/** The options with `mcpServers` turned into stdio backends. */
export interface NormalizedOptions extends Omit<GatewayOptions, "mcpServers" | "backends"> {
  readonly backends?: ReadonlyArray<BackendConfig>
  /** Keys other MCP clients write that the gateway ignores (logged at debug level). */
  readonly ignoredKeys?: ReadonlyArray<string>
}

export const decodeOptions = (given: unknown, what: string): Either.Either<NormalizedOptions, InvalidParams> => {
  const input =
    isMcpConfig(given) || (Array.isArray(given) && given.length > 0 && given.every(isMcpConfig)) ? fromMcpConfigs(given) : given
  if (input instanceof InvalidParams) return Either.left(input)
  if (!isObject(input)) {
    return Either.left(new InvalidParams({ message: `${what} must be a JSON object`, issues: [`${what}: must be an object`] }))
  }
  const keys = checkKeys(input)
  if (keys.problems.length > 0) {
    return Either.left(new InvalidParams({ message: `Invalid ${what}: ${keys.problems.join("; ")}`, issues: keys.problems }))
  }
  return decodeOptionsEither(input).pipe(
    Either.map((options): GatewayOptions & { ignoredKeys?: ReadonlyArray<string> } =>
      keys.ignored.length === 0 ? options : { ...options, ignoredKeys: keys.ignored }
    ),
    Either.mapLeft((error) => {
      const issues = formatIssues(error)
      return new InvalidParams({ message: `Invalid ${what}: ${issues.join("; ")}`, issues })
    }),
    Either.flatMap((options) => {
      const { mcpServers: claude, servers, backends, defaults, ...rest } = options
      const given = [backends && "backends", claude && "mcpServers", servers && "servers"].filter(Boolean)
      if (given.length > 1) {
        const issues = [`${given[1]}: give one of backends, mcpServers or servers, not ${given.join(" and ")}`]
        return Either.left(new InvalidParams({ message: `Invalid ${what}: ${issues[0]}`, issues }))
      }
      const mcpServers = claude ?? servers
      const field = claude === undefined ? "servers" : "mcpServers"
      if (mcpServers === undefined) {
        if (defaults !== undefined) {
          const issues = ["defaults: applies to the entries of mcpServers or servers, and there are none"]
          return Either.left(new InvalidParams({ message: `Invalid ${what}: ${issues[0]}`, issues }))
        }
        return Either.right(backends === undefined ? rest : { ...rest, backends })
      }
      const keys = Object.keys(mcpServers)
      return fromMcpServers(mcpServers, defaults ?? {}, field).pipe(
        Either.mapLeft((error) => {
          // The converted list is indexed; the user wrote keys, so name the key.
          const issues = formatIssues(error, ([index, ...rest]) => [
            field,
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

/**
 * A server name as a backend id: characters outside `[a-zA-Z0-9_-]` become `_`, at most 64, and a
 * name that two keys would share gets `_2`, `_3`...
 */
export const idsOf = (names: ReadonlyArray<string>): ReadonlyArray<string> => {
  const taken = new Set<string>()
  return names.map((name) => {
    const base = (name.replace(/[^a-zA-Z0-9_-]/g, "_") || "server").slice(0, 64)
    let id = base
    for (let n = 2; taken.has(id); n++) id = `${base.slice(0, 64 - String(n).length - 1)}_${n}`
    taken.add(id)
    return id
  })
}

/** Seed 002's `MCPConfig`: one server as `{serverName, transport, connection, auth}`. */
const isMcpConfig = (u: unknown): u is Record<string, unknown> => isObject(u) && typeof u.serverName === "string"

/**
 * One `MCPConfig` or an array of them, as the `servers` map it means: `connection` holds the
 * entry's own keys, `transport` is its `type`, a bearer `auth` becomes an Authorization header.
 * Other keys stay where the key check and the schema will judge them.
 */
const fromMcpConfigs = (given: unknown): Record<string, unknown> | InvalidParams => {
  const servers: Record<string, unknown> = {}
  for (const config of (Array.isArray(given) ? given : [given]) as Array<Record<string, unknown>>) {
    const { serverName, transport, connection, auth, ...rest } = config
    const name = serverName as string
    const problem = (issue: string) => new InvalidParams({ message: `Invalid ${name}: ${issue}`, issues: [`${name}.${issue}`] })
    if (connection !== undefined && !isObject(connection)) return problem("connection: must be an object")
    let authorization: Record<string, string> = {}
    if (auth !== undefined) {
      if (!isObject(auth) || (auth.type !== "bearer" && auth.type !== "none")) return problem("auth.type: must be bearer or none")
      if (auth.type === "bearer") {
        if (typeof auth.token !== "string" || auth.token.trim() === "") return problem("auth.token: must be a non-empty string")
        authorization = { Authorization: `Bearer ${auth.token}` }
      }
    }
    if (Object.hasOwn(servers, name)) return problem("serverName: the same name twice")
    const own = isObject(connection) ? connection : {}
    const headers = isObject(own.headers) ? own.headers : {}
    servers[name] = {
      ...rest,
      ...own,
      ...(transport === undefined ? {} : { type: transport }),
      // A `headers` that is not an object stays as it is, for the schema to refuse.
      ...(Object.keys(authorization).length === 0 || (own.headers !== undefined && !isObject(own.headers))
        ? {}
        : { headers: { ...headers, ...authorization } })
    }
  }
  return { servers }
}

/** Drops the keys whose value is undefined (an optional field absent stays absent). */
const defined = <A extends Record<string, unknown>>(record: A): A =>
  Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as A

/**
 * Server map entries become backends, one per key, in file order, each over `defaults`. `timeout`
 * counts only in a `servers` map: Cline writes seconds under the same name in `mcpServers`.
 */
const fromMcpServers = (
  servers: typeof McpServers.Type,
  defaults: typeof ServerDefaults.Type,
  field: "mcpServers" | "servers"
) => {
  const names = Object.keys(servers)
  const ids = idsOf(names)
  return Schema.decodeUnknownEither(Backends, { errors: "all" })(
    Object.entries(servers).map(([name, entry], i) => {
      const s = { ...defaults, ...defined(entry), env: { ...defaults.env, ...entry.env } }
      return defined({
        id: ids[i]!,
        type: ((type) => (type === "streamableHttp" ? "streamable-http" : type))(s.type ?? s.transportType),
        command: s.command,
        url: s.url,
        headers: s.headers,
        args: s.args ?? [],
        env: s.env,
        cwd: s.cwd,
        description: s.description,
        // A name that had to change to be an id is kept for display.
        displayName: s.displayName ?? (ids[i] !== name ? name : undefined),
        requestTimeoutMs: s.requestTimeoutMs ?? (field === "servers" ? s.timeout : undefined),
        restartOnCrash: s.restartOnCrash,
        inheritEnv: s.inheritEnv,
        maxFrameBytes: s.maxFrameBytes,
        roots: s.roots,
        startupDelayMs: s.startupDelayMs ?? s.startupDelay,
        protocolVersion: s.protocolVersion,
        maxInstances: s.maxInstances,
        requiresStatefulConnection: s.requiresStatefulConnection,
        enabled: s.enabled ?? s.disabled !== true
      })
    })
  )
}

// ---------------------------------------------------------------------------------------------
// The configuration in force

export const DEFAULT_MODEL = "gpt-4.1-mini"
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000
/**
 * How long `initialize` waits for backends: long enough for servers started from a local install
 * (measured under 1.5 s for ten), short enough that one slow `npx` download or a remote server
 * that does not answer holds no client up; later backends' tools arrive with `list_changed`.
 */
export const DEFAULT_STARTUP_TIMEOUT_MS = 5_000
export const DEFAULT_MAX_TOOLS = 32
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024
/** Larger than a client's: server-filesystem sends a file's text twice (content and structuredContent). */
export const DEFAULT_MAX_BACKEND_FRAME_BYTES = 64 * 1024 * 1024
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
  readonly requestTimeoutMs: number
  readonly startupTimeoutMs: number
  readonly maxFrameBytes: number
  /** The longest stdout line accepted from a backend (its own `maxFrameBytes` wins). */
  readonly maxBackendFrameBytes: number
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

/** What start-up gathered before any client spoke. */
export interface ConfigSources {
  readonly env: Readonly<Record<string, string | undefined>>
  /** The gateway settings a `.env` in the working directory supplied (see `readDotEnv`). */
  readonly dotEnv?: Readonly<Partial<Record<DotEnvSetting, string>>> | undefined
  readonly file?: { readonly path: string; readonly options: NormalizedOptions } | undefined
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
  const [key, keySource] =
    envKey !== undefined
      ? [envKey, "env" as const]
      : nonEmpty(dotEnv.OPENAI_API_KEY) !== undefined
        ? [dotEnv.OPENAI_API_KEY!, "dotenv" as const]
        : nonEmpty(init?.OPENAI_API_KEY) !== undefined
          ? [init!.OPENAI_API_KEY!, "initializationOptions" as const]
          : nonEmpty(file?.OPENAI_API_KEY) !== undefined
            ? [file!.OPENAI_API_KEY!, "file" as const]
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
  for (const found of sources.serversDir?.found ?? [])
    notes.push({ level: "info", message: `found in ${sources.serversDir!.path}: ${found}` })
  for (const skipped of sources.serversDir?.skipped ?? [])
    notes.push({ level: "info", message: `not a server in ${sources.serversDir!.path}: ${skipped}` })
  for (const ignored of [...(file?.ignoredKeys ?? []), ...(init?.ignoredKeys ?? [])]) {
    notes.push({ level: "debug", message: `ignoring ${ignored}: a key of other MCP clients' configs` })
  }

  const [given, backendsSource] =
    init?.backends !== undefined
      ? [init.backends, "initializationOptions"]
      : file?.backends !== undefined
        ? [file.backends, fileSource(sources)]
        : [embeddedDefault(sources.cwd ?? process.cwd(), sources.home), "default"]
  const backends = given.map((backend) => withEnvReferences(backend, env))
  for (const backend of backends) if (backend.refused !== undefined) notes.push({ level: "warn", message: backend.refused })

  const debugPort = pick("DEBUG_PORT")
  // Never from .env: a checkout's file must not open a window on the gateway's traffic.
  const envDebugPort = envNumber(env.DEBUG_PORT, 0, 65535)

  const config: ResolvedConfig = {
    backends,
    backendsSource,
    openaiApiKey: key === undefined ? Option.none() : Option.some(Redacted.make(key)),
    openaiApiKeySource: keySource,
    openaiBaseUrl: Option.fromNullable(baseUrl),
    model: pick("model") ?? setting("OPENAI_MODEL") ?? DEFAULT_MODEL,
    logLevel: sources.cliLogLevel ?? pick("logLevel") ?? envLogLevel(setting("LOG_LEVEL")) ?? "info",
    debugPort:
      sources.cliDebugPort !== undefined
        ? Option.some(sources.cliDebugPort)
        : debugPort === null
          ? Option.none()
          : Option.fromNullable(debugPort ?? envDebugPort),
    routing: pick("routing") ?? "tool",
    exposeBackendTools: pick("exposeBackendTools") ?? true,
    maxToolsPerRequest: pick("maxToolsPerRequest") ?? DEFAULT_MAX_TOOLS,
    requestTimeoutMs: pick("requestTimeoutMs") ?? DEFAULT_REQUEST_TIMEOUT_MS,
    startupTimeoutMs: pick("startupTimeoutMs") ?? DEFAULT_STARTUP_TIMEOUT_MS,
    maxFrameBytes:
      file?.maxFrameBytes ?? envNumber(setting("AGENTIFY_MAX_FRAME_BYTES"), 1, MAX_FRAME_LIMIT) ?? DEFAULT_MAX_FRAME_BYTES,
    maxBackendFrameBytes: pick("maxBackendFrameBytes") ?? DEFAULT_MAX_BACKEND_FRAME_BYTES,
    sessionIdleMs: file?.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS,
    maxSessions: file?.maxSessions ?? DEFAULT_MAX_SESSIONS,
    allowedHosts: file?.allowedHosts ?? [],
    allowedOrigins: file?.allowedOrigins ?? [],
    sessionIdPrefix: file?.sessionIdPrefix ?? "",
    notes
  }
  registerSecrets(config)
  return config
}

/** `${env:NAME}`, `${NAME}` or `${NAME:-default}` in a backend's args, env, headers, url and cwd. */
const ENV_REFERENCE = /\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g
/** VS Code's `${input:id}`: a value VS Code prompts for, which the gateway cannot. */
const INPUT_REFERENCE = /\$\{input:([^}]*)\}/
/** A variable whose value is a secret by its name: registered with the scrubber once substituted. */
const SECRET_NAME = /TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH/i

/**
 * A backend with its `${env:NAME}` references resolved from the gateway's environment, so a file
 * need not hold secrets. A variable that is not set leaves the backend refused, saying which.
 */
const withEnvReferences = (backend: BackendConfig, env: Readonly<Record<string, string | undefined>>): BackendConfig => {
  // Where each unset variable or VS Code input is used ("env MEMORY_FILE_PATH", "args[2]"): names
  // and places are not secrets, and a user needs both to fix the file.
  const missing = new Map<string, Set<string>>()
  const inputs = new Map<string, Set<string>>()
  const note = (into: Map<string, Set<string>>, name: string, where: string) =>
    into.set(name, (into.get(name) ?? new Set()).add(where))
  const expand = (where: string) => (text: string) => {
    const input = INPUT_REFERENCE.exec(text)
    if (input !== null) note(inputs, input[1]!, where)
    return text.replace(ENV_REFERENCE, (_, name: string, fallback: string | undefined) => {
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
    const [input, where] = [...inputs][0]!
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
  const file = sources.file!.path
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

/** Every secret the configuration holds goes into the scrubber before anything can log it. */
const registerSecrets = (config: ResolvedConfig) => {
  Option.map(config.openaiApiKey, Secrets.register)
  Option.map(config.openaiBaseUrl, registerUrlSecrets)
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
  envKeys: Object.keys(backend.env),
  ...(backend.cwd === undefined ? {} : { cwd: backend.cwd }),
  enabled: backend.enabled
})

// ---------------------------------------------------------------------------------------------
// Start-up sources: .env, the config file

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
 * Reads a regular file of at most `maxBytes`. Opened without blocking and checked on the open
 * descriptor, so a FIFO, a device such as /dev/zero or a directory is refused rather than read.
 */
export const readRegularFile = (file: string, maxBytes: number): Either.Either<string, string> => {
  let fd: number
  try {
    fd = openSync(file, fsConstants.O_RDONLY | (fsConstants.O_NONBLOCK ?? 0))
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return Either.left(
      code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : String((error as Error).message)
    )
  }
  try {
    const stat = fstatSync(fd)
    if (!stat.isFile()) return Either.left(stat.isDirectory() ? "it is a directory" : "it is not a regular file")
    if (stat.size > maxBytes) return Either.left(`it is ${stat.size} bytes, more than the ${maxBytes} allowed`)
    // One byte more than allowed: a file that grows while read is still caught.
    const buffer = Buffer.alloc(Math.min(maxBytes + 1, stat.size + 1))
    let length = 0
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null)
      if (n === 0) break
      length += n
      if (length === buffer.length) break
    }
    if (length > maxBytes) return Either.left(`it is more than the ${maxBytes} bytes allowed`)
    return Either.right(buffer.toString("utf8", 0, length))
  } catch (error) {
    return Either.left(String((error as Error).message))
  } finally {
    closeSync(fd)
  }
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
  if (Either.isLeft(text)) return { settings: {}, refused: [] }
  const settings: Partial<Record<DotEnvSetting, string>> = {}
  const refused: Array<string> = []
  for (const [name, value] of Object.entries(parseEnv(text.right))) {
    if (value === undefined) continue
    if ((DOTENV_SETTINGS as ReadonlyArray<string>).includes(name)) settings[name as DotEnvSetting] = value
    else refused.push(name)
  }
  return { settings, refused }
}

/** A config file that cannot be used; start-up prints `message` and exits with code 2. */
export class ConfigFileError extends Schema.TaggedError<ConfigFileError>()("ConfigFileError", {
  path: Schema.String,
  message: Schema.String
}) {}

/** Reads and validates a config file (GatewayOptions or the mcpServers shape). */
export const readConfigFile = (file: string): Either.Either<NonNullable<ConfigSources["file"]>, ConfigFileError> => {
  const absolute = path.resolve(file)
  const read = readRegularFile(absolute, MAX_CONFIG_FILE_BYTES)
  if (Either.isLeft(read)) {
    return Either.left(new ConfigFileError({ path: absolute, message: `Cannot read config file ${absolute}: ${read.left}` }))
  }
  const parsed = parseJsonc(read.right, absolute)
  if (Either.isLeft(parsed)) {
    return Either.left(new ConfigFileError({ path: absolute, message: `Config file is not valid JSON: ${parsed.left}` }))
  }
  return decodeOptions(parsed.right, "config file").pipe(
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
    /** The configuration in force, then each new one (a client's `initializationOptions`). */
    readonly changes: Stream.Stream<ResolvedConfig>
    /** Validates a client's `initializationOptions` and makes them the configuration in force. */
    readonly applyInitializationOptions: (options: unknown) => Effect.Effect<ResolvedConfig, InvalidParams>
  }
>() {
  /** From start-up sources (the CLI). */
  static layer = (sources: ConfigSources): Layer.Layer<GatewayConfig> =>
    Layer.effect(
      GatewayConfig,
      Effect.gen(function* () {
        const ref = yield* SubscriptionRef.make(resolve(sources))
        return {
          current: SubscriptionRef.get(ref),
          changes: ref.changes,
          applyInitializationOptions: (options: unknown) =>
            options === undefined || options === null
              ? SubscriptionRef.get(ref)
              : Either.match(decodeOptions(options, "initializationOptions"), {
                  onLeft: Effect.fail,
                  onRight: (init) => {
                    const resolved = resolve(sources, init)
                    return Effect.as(SubscriptionRef.set(ref, resolved), resolved)
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
