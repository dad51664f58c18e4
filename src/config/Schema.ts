/**
 * The configuration's shapes: GatewayOptions and BackendConfig as Effect schemas (with the
 * defaults and ranges docs/protocol.md documents), and the other clients' shapes they accept.
 * Longer than most modules: every key the configuration takes is declared here, once, beside its
 * range and default (Flow, Limits and State, which have rules of their own, are modules apart).
 */
import { Schema } from "effect"
import { Flow, FlowGuard } from "./Flow.js"
import { Limits } from "./Limits.js"
import { HttpUrl, State } from "./TeamStore.js"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import * as Mcp from "../protocol/Mcp.js"
import { LOG_LEVEL_NAMES, type LogLevelName as LevelName } from "../observability/Logging.js"

const ID_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/

const BackendId = Schema.String.pipe(
  Schema.filter((s) => ID_PATTERN.test(s), { message: () => "must match ^[a-zA-Z0-9_-]{1,64}$" })
)

/** OpenAI accepts at most 128 tools in one request. */
export const MAX_TOOLS_LIMIT = 128
/** The most model turns one orchestration may take (each may call tools). */
export const MAX_STEPS_LIMIT = 32
/** The bounds of `maxListedTools`: room for the gateway's own four tools and a few found ones. */
export const MIN_LISTED_TOOLS = 8
export const MAX_LISTED_LIMIT = 10_000

/** `maxListedTools`: the most tools `tools/list` gives a client (see gateway/methods/Listing). */
export const ListedTools = Schema.Number.pipe(
  Schema.filter((n) => Number.isInteger(n) && n >= MIN_LISTED_TOOLS && n <= MAX_LISTED_LIMIT, {
    message: () => `must be a whole number of tools from ${MIN_LISTED_TOOLS} to ${MAX_LISTED_LIMIT}`
  })
)

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

/**
 * Which tools orchestration runs only after the user agreed: "destructive" those annotated
 * `destructiveHint: true`, "writes" every tool not annotated `readOnlyHint: true`, "never" none.
 */
export const ConfirmTools = Schema.Literal("destructive", "writes", "never")
export type ConfirmTools = typeof ConfirmTools.Type

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

/**
 * A glob over names or URIs: `*` any run without `/`, `**` any run, `?` one character but `/`
 * (tool and prompt names have no `/`, so there `*` is any run). See catalog/Exposure.
 */
const Glob = Schema.String.pipe(
  Schema.filter((s) => s.length > 0 && s.length <= 512, { message: () => "must be a pattern of 1 to 512 characters" })
)
const Globs = Schema.Array(Glob).pipe(Schema.maxItems(1_000))

/** A backend tool's exposed name and description, instead of its own (`toolOverrides`). */
const ToolOverride = Schema.Struct({
  name: Schema.optional(
    Schema.String.pipe(
      Schema.filter((s) => /^[a-zA-Z0-9_-]{1,64}$/.test(s), { message: () => "must match ^[a-zA-Z0-9_-]{1,64}$" })
    )
  ),
  description: Schema.optional(Schema.String)
})

/** What a backend exposes of itself: the fields that shape names and lists, not how it runs. */
export const EXPOSURE_KEYS = [
  "allowTools",
  "denyTools",
  "allowResources",
  "denyResources",
  "allowPrompts",
  "denyPrompts",
  "toolOverrides",
  "namespace",
  "flow"
] as const

const exposureFields = {
  /** Globs over the backend's own tool names: only these are exposed (deny wins). */
  allowTools: Schema.optional(Globs),
  denyTools: Schema.optional(Globs),
  /** Globs over resource URIs (and resource template URIs). */
  allowResources: Schema.optional(Globs),
  denyResources: Schema.optional(Globs),
  /** Globs over the backend's own prompt names. */
  allowPrompts: Schema.optional(Globs),
  denyPrompts: Schema.optional(Globs),
  /** `{"<own name>": {name?, description?}}`, applied before the namespace. */
  toolOverrides: Schema.optional(Schema.Record({ key: Schema.String, value: ToolOverride })),
  /** What its data is (private, untrusted) and its tools' hints by glob, which its tools are listed with. */
  flow: Schema.optional(Flow),
  /** The prefix of its tool and prompt names (default: its id); false for its own names. */
  namespace: Schema.optional(
    Schema.Union(Schema.Literal(false), Schema.String.pipe(Schema.filter((s) => ID_PATTERN.test(s)))).annotations({
      message: () => ({ message: "must be false or match ^[a-zA-Z0-9_-]{1,64}$", override: true })
    })
  )
}

/** A backend's exposure settings (the `EXPOSURE_KEYS`). */
export type Exposure = Partial<Schema.Struct.Type<typeof exposureFields>>

/**
 * A remote backend's OAuth (see auth/Client): the client identity when it is not registered
 * dynamically, the scopes to ask for, and the grant: "authorization_code" (a person signs in once,
 * `mcp-agentify auth <id>`) or "client_credentials" (machine to machine, no one signs in).
 */
export const OAuthSettings = Schema.Struct({
  type: Schema.Literal("oauth"),
  clientId: Schema.optional(NonEmptyString),
  clientSecret: Schema.optional(SecretString),
  scopes: Schema.optional(Schema.Array(NonEmptyString)),
  grant: Schema.optional(Schema.Literal("authorization_code", "client_credentials")),
  /** An https URL of the gateway's Client ID Metadata Document, for servers that accept one as client_id. */
  clientMetadataUrl: Schema.optional(NonEmptyString),
  /**
   * Each user of the gateway acts upstream as themselves: tokens per subject, each user asked to
   * sign in when a call of theirs first reaches the backend (see backend/Lanes).
   */
  perUser: Schema.optional(Schema.Boolean)
})
export type OAuthSettings = typeof OAuthSettings.Type

/** `auth`: "oauth", or the settings above. */
const Auth = Schema.Union(Schema.Literal("oauth"), OAuthSettings).annotations({
  message: () => ({
    message: 'must be "oauth" or {"type": "oauth", clientId?, clientSecret?, scopes?, grant?, clientMetadataUrl?, perUser?}',
    override: true
  })
})

/** A backend's OAuth settings, if it uses OAuth ("oauth" means all defaults). */
export const oauthOf = (backend: { readonly auth?: typeof Auth.Type | undefined }): OAuthSettings | undefined =>
  backend.auth === undefined ? undefined : backend.auth === "oauth" ? { type: "oauth" } : backend.auth

/** The most processes one backend may run (`maxInstances`). */
export const MAX_INSTANCES = 16

/** When a backend whose tools are known starts: on its first use, or always at `initialize`. */
export const BackendStart = Schema.Literal("onUse", "always").annotations({
  message: () => ({ message: 'must be "onUse" or "always"', override: true })
})

export const BackendFields = Schema.Struct({
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
  /** A remote server that requires OAuth: the gateway signs in as its client (see `oauthOf`). */
  auth: Schema.optional(Auth),
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
  /** "onUse": started on first use once its tools are known (the gateway's `start`, else the default); "always": at `initialize`, and kept. */
  start: Schema.optional(BackendStart),
  /** A backend started on use is stopped after this long without use (the gateway's `idleMs`, else 10 minutes). */
  idleMs: Schema.optional(DurationMs),
  ...exposureFields,
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
export const remoteUrlProblem = (transport: BackendType, url: string): string | undefined => {
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
      if (backend.auth !== undefined)
        return { path: ["auth"], message: "is for remote servers (a url): a process is not signed in to" }
      if (backend.command === undefined) return { path: ["command"], message: "is required (or give a url for a remote server)" }
      if (backend.url !== undefined) return { path: ["url"], message: "is for remote servers: give a type other than stdio" }
      return true
    }
    if (backend.url === undefined) return { path: ["url"], message: `is required for a ${transport} backend` }
    if (backend.auth !== undefined && (transport === "sse" || transport === "websocket")) {
      return {
        path: ["auth"],
        message: `is spoken over Streamable HTTP (type http or streamable-http); over ${transport}, give a token in headers`
      }
    }
    if (backend.command !== undefined) return { path: ["command"], message: "is for stdio servers: a remote one has a url" }
    const oauth = oauthOf(backend)
    if (oauth?.perUser === true && oauth.grant === "client_credentials") {
      return {
        path: ["auth"],
        message: "perUser: the \"client_credentials\" grant is the gateway's own identity, never a user's"
      }
    }
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

/** The namespace a backend's names take: its id by default, "" for `namespace: false`. */
export const namespaceOf = (backend: { readonly id: string; readonly namespace?: string | false | undefined }): string =>
  backend.namespace === false ? "" : (backend.namespace ?? backend.id)

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
    // Two overrides giving one name in one namespace: known before any tool is listed.
    const named = new Map<string, string>()
    for (let i = 0; i < backends.length; i++) {
      const backend = backends[i]!
      for (const [own, override] of Object.entries(backend.toolOverrides ?? {})) {
        if (override.name === undefined) continue
        const key = `${namespaceOf(backend)}\u0000${override.name}`
        const first = named.get(key)
        const here = `${backend.id}'s '${own}'`
        if (first !== undefined) {
          return {
            path: [i, "toolOverrides", own, "name"],
            message: `'${override.name}' is also the name given to ${first} in the same namespace: the names would collide`
          }
        }
        named.set(key, here)
      }
    }
    return true
  })
)

export const Backends = UniqueBackends.pipe(Schema.filter((backends) => backends.length > 0 || "must list at least one backend"))

/**
 * An entry of a server map: Claude Desktop / Cursor `mcpServers`, VS Code `servers` (stdio, or
 * remote with `url`, `type` and `headers`), and the `servers`/`defaults` shape whose options
 * (`enabled`, `timeout`, `startupDelay`, ...) are in milliseconds.
 */
export const McpServerEntry = Schema.Struct({
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
    "requiresStatefulConnection",
    "start",
    "idleMs",
    "auth",
    ...EXPOSURE_KEYS
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
  startupDelay: Schema.optional(DurationMs),
  /** Gemini CLI's and others' names for `allowTools` and `denyTools` (exact tool names). */
  includeTools: Schema.optional(Schema.Array(Schema.String)),
  excludeTools: Schema.optional(Schema.Array(Schema.String)),
  disabledTools: Schema.optional(Schema.Array(Schema.String))
})

export const McpServers = Schema.Record({ key: Schema.String, value: McpServerEntry })

/** `defaults`: options laid beneath every entry of the server map (never a command or address). */
export const ServerDefaults = McpServerEntry.omit("type", "command", "url", "args", "cwd", "displayName", "description")

/**
 * A named subset of the aggregate: the backends it draws on (default all) and globs over the
 * exposed (namespaced) tool names (deny wins). A client picks it by endpoint or `--profile`.
 */
export const Profile = Schema.Struct({
  description: Schema.optional(Schema.String),
  backends: Schema.optional(Schema.Array(BackendId)),
  allowTools: Schema.optional(Globs),
  denyTools: Schema.optional(Globs),
  /** The most tools its `tools/list` gives a client (beside the gateway's `maxListedTools`). */
  maxListedTools: Schema.optional(ListedTools),
  /** Globs over exposed tool names listed even when the catalog is larger than `maxListedTools`. */
  alwaysListTools: Schema.optional(Globs),
  /** With `--http-auth oauth`: the scopes a token needs to use this profile (beside `httpAuth.scopes`). */
  scopes: Schema.optional(Schema.Array(NonEmptyString))
})
export type Profile = typeof Profile.Type

/** Profiles by name; a name is a path segment (`/profiles/<name>/mcp`) and an argument (`--profile`). */
export const Profiles = Schema.Record({ key: Schema.String, value: Profile }).pipe(
  Schema.filter((profiles) => {
    const bad = Object.keys(profiles).find((name) => !ID_PATTERN.test(name))
    return bad === undefined || { path: [bad], message: "a profile's name must match ^[a-zA-Z0-9_-]{1,64}$" }
  })
)

/**
 * `--http-auth oauth`: the gateway's endpoint as an OAuth 2.1 resource server. Access tokens are
 * JWTs of `issuer`, for `audience` (the gateway's public URL, as clients reach it), carrying every
 * one of `scopes`.
 */
export const HttpAuth = Schema.Struct({
  issuer: HttpUrl,
  audience: HttpUrl,
  scopes: Schema.optional(Schema.Array(NonEmptyString))
})
export type HttpAuth = typeof HttpAuth.Type
export { State }

/**
 * `audit`: one JSON line per tool call and per orchestration or script run, appended to `file`;
 * `arguments` says how much of a call's arguments it holds ("hash" by default).
 */
export const Audit = Schema.Struct({
  file: NonEmptyString,
  arguments: Schema.optional(Schema.Literal("hash", "full", "none")),
  maxBytes: Schema.optional(BoundedInt(1024 * 1024 * 1024, "bytes")),
  keep: Schema.optional(BoundedInt(100, "files"))
})
export type Audit = typeof Audit.Type

/** `codeMode`: false removes `agentify_run_code`; an object sets its limits. */
export const CodeMode = Schema.Union(
  Schema.Literal(false),
  Schema.Struct({
    timeoutMs: Schema.optional(BoundedInt(600_000, "milliseconds")),
    memoryMb: Schema.optional(
      Schema.Number.pipe(
        Schema.filter((n) => Number.isInteger(n) && n >= 16 && n <= 1024, {
          message: () => "must be a whole number of MiB from 16 to 1024"
        })
      )
    ),
    maxCalls: Schema.optional(BoundedInt(100_000, "calls")),
    maxConcurrentCalls: Schema.optional(BoundedInt(64, "calls")),
    maxOutputBytes: Schema.optional(BoundedInt(64 * 1024 * 1024, "bytes")),
    /** Scripts running at once in the gateway, and waiting for a turn beyond those. */
    maxRuns: Schema.optional(BoundedInt(256, "runs")),
    maxQueuedRuns: Schema.optional(
      Schema.Number.pipe(
        Schema.filter((n) => Number.isInteger(n) && n >= 0 && n <= 10_000, {
          message: () => "must be a whole number of runs from 0 to 10000"
        })
      )
    )
  })
)
export type CodeMode = typeof CodeMode.Type

/** Every GatewayOptions field but `backends`; shared by the file and `initializationOptions`. */
export const optionFields = {
  OPENAI_API_KEY: Schema.optional(SecretString),
  logLevel: Schema.optional(LogLevelName),
  DEBUG_PORT: Schema.optional(Schema.NullOr(Port)),
  model: Schema.optional(NonEmptyString),
  openaiBaseUrl: Schema.optional(NonEmptyString),
  routing: Schema.optional(Routing),
  exposeBackendTools: Schema.optional(Schema.Boolean),
  maxToolsPerRequest: Schema.optional(BoundedInt(MAX_TOOLS_LIMIT, "tools")),
  /** A catalog larger than this is listed as the gateway's search and call tools (see gateway/methods/Listing). */
  maxListedTools: Schema.optional(ListedTools),
  maxSteps: Schema.optional(BoundedInt(MAX_STEPS_LIMIT, "steps")),
  confirmTools: Schema.optional(ConfirmTools),
  flowGuard: Schema.optional(FlowGuard),
  limits: Schema.optional(Limits),
  /**
   * A semantic ranking beside the lexical one: tool and query vectors from an OpenAI-compatible
   * `/v1/embeddings` (its `baseUrl`, else the model's endpoint). Its `apiKey`, else the model's key
   * when `baseUrl` is on the model endpoint's origin; an endpoint elsewhere gets no key.
   */
  embeddings: Schema.optional(
    Schema.Struct({ model: NonEmptyString, baseUrl: Schema.optional(NonEmptyString), apiKey: Schema.optional(SecretString) })
  ),
  /** A Cedar policy file checked on every call, read, prompt, orchestration and script (see policy/). */
  policies: Schema.optional(NonEmptyString),
  maxResultChars: Schema.optional(Mcp.MaxResultChars),
  maxCallsPerTurn: Schema.optional(Mcp.MaxCallsPerTurn),
  codeMode: Schema.optional(CodeMode),
  audit: Schema.optional(Audit),
  /** What a tool whose definition changed since it was first seen becomes: held back, flagged, or nothing. */
  toolPins: Schema.optional(Schema.Literal("quarantine", "warn", "off")),
  orchestrationMode: Schema.optional(Mcp.OrchestrationMode),
  requestTimeoutMs: Schema.optional(DurationMs),
  startupTimeoutMs: Schema.optional(DurationMs),
  /** When backends whose tools are known start: "onUse" (the default) or "always" (every one at `initialize`). */
  start: Schema.optional(BackendStart),
  /** A backend started on use is stopped after this long without use (default 10 minutes). */
  idleMs: Schema.optional(DurationMs),
  maxFrameBytes: Schema.optional(FrameBytes),
  maxBackendFrameBytes: Schema.optional(FrameBytes),
  /** The largest frame sent to a stdio client, and to a stdio backend (the SDK's peers drop lines over 10 MiB). */
  maxReplyBytes: Schema.optional(FrameBytes),
  maxBackendRequestBytes: Schema.optional(FrameBytes),
  // Streamable HTTP (--http): process-wide, so a session's initializationOptions cannot set them.
  sessionIdleMs: Schema.optional(DurationMs),
  maxSessions: Schema.optional(BoundedInt(MAX_SESSIONS_LIMIT, "sessions")),
  /** Host header values accepted besides the bound address (DNS-rebinding protection). */
  allowedHosts: Schema.optional(Schema.Array(NonEmptyString)),
  /** Origin header values accepted besides loopback origins. */
  allowedOrigins: Schema.optional(Schema.Array(NonEmptyString)),
  /** Starts every Mcp-Session-Id this gateway issues, so a proxy in front of several can route by it. */
  /** `--http-auth oauth`: how tokens are checked (file only, as the HTTP settings above). */
  httpAuth: Schema.optional(HttpAuth),
  /** Shared with the other gateways of a team (file only, as the HTTP settings above). */
  state: Schema.optional(State),
  /** Named subsets of the tools, served at `/profiles/<name>/mcp` and chosen with `--profile`. */
  profiles: Schema.optional(Profiles),
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
