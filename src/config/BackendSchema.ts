/**
 * One backend's configuration (BackendConfig, with the defaults and ranges docs/protocol.md
 * documents), the list of them, and the other clients' server maps (`mcpServers`) it accepts.
 */
import { Effect, Schema, Struct } from "effect"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import * as Mcp from "../protocol/Mcp.js"
import { Flow } from "./Flow.js"
import { BackendId, BoundedInt, DurationMs, FrameBytes, ID_PATTERN, NonEmptyString, SecretEnv, SecretString } from "./Fields.js"

const isFileUri = (s: string) => /^file:\/\//i.test(s)

/** A root: an absolute path or a `file://` URI, or `{uri, name}`. */
const Root = Schema.Union([
  Schema.String.check(
    Schema.makeFilter((s) => path.isAbsolute(s) || isFileUri(s), { message: "must be an absolute path or a file:// URI" })
  ),
  Schema.Struct({
    uri: Schema.String.check(Schema.makeFilter(isFileUri, { message: "must be a file:// URI" })),
    name: Schema.optional(Schema.String)
  })
])
const Roots = Schema.Array(Root).check(Schema.isMaxLength(100))

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
export const BackendType = Schema.Literals(["stdio", "http", "streamable-http", "sse", "websocket"]).annotate({
  message: "must be stdio, http, streamable-http, sse or websocket"
})
export type BackendType = typeof BackendType.Type

/** A remote server's address: http(s) for the HTTP transports, ws(s) for WebSocket. */
const RemoteUrl = Schema.String.check(
  Schema.makeFilter(
    (s) => {
      // A ${env:NAME} reference is checked once it is resolved.
      if (s.includes("${")) return true
      try {
        return /^(https?|wss?):$/.test(new URL(s).protocol)
      } catch {
        return false
      }
    },
    { message: "must be an http://, https://, ws:// or wss:// URL" }
  )
)

/** A protocol version a backend can be pinned to. */
const ProtocolVersion = Schema.Literals([...Mcp.SUPPORTED_PROTOCOL_VERSIONS, Mcp.STATELESS_PROTOCOL_VERSION]).annotate({
  message: `must be one of ${[Mcp.STATELESS_PROTOCOL_VERSION, ...Mcp.SUPPORTED_PROTOCOL_VERSIONS].join(", ")}`
})

/**
 * A glob over names or URIs: `*` any run without `/`, `**` any run, `?` one character but `/`
 * (tool and prompt names have no `/`, so there `*` is any run). See catalog/Exposure.
 */
const Glob = Schema.String.check(
  Schema.makeFilter((s) => s.length > 0 && s.length <= 512, { message: "must be a pattern of 1 to 512 characters" })
)
export const Globs = Schema.Array(Glob).check(Schema.isMaxLength(1_000))

/** A backend tool's exposed name and description, instead of its own (`toolOverrides`). */
const ToolOverride = Schema.Struct({
  name: Schema.optional(
    Schema.String.check(
      Schema.makeFilter((s) => /^[a-zA-Z0-9_-]{1,64}$/.test(s), { message: "must match ^[a-zA-Z0-9_-]{1,64}$" })
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
  toolOverrides: Schema.optional(Schema.Record(Schema.String, ToolOverride)),
  /** What its data is (private, untrusted) and its tools' hints by glob, which its tools are listed with. */
  flow: Schema.optional(Flow),
  /** The prefix of its tool and prompt names (default: its id); false for its own names. */
  namespace: Schema.optional(
    Schema.Union([Schema.Literal(false), Schema.String.check(Schema.makeFilter((s) => ID_PATTERN.test(s)))]).annotate({
      message: "must be false or match ^[a-zA-Z0-9_-]{1,64}$"
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
  grant: Schema.optional(Schema.Literals(["authorization_code", "client_credentials"])),
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
const Auth = Schema.Union([Schema.Literal("oauth"), OAuthSettings]).annotate({
  message: 'must be "oauth" or {"type": "oauth", clientId?, clientSecret?, scopes?, grant?, clientMetadataUrl?, perUser?}'
})

/** A backend's OAuth settings, if it uses OAuth ("oauth" means all defaults). */
export const oauthOf = (backend: { readonly auth?: typeof Auth.Type | undefined }): OAuthSettings | undefined =>
  backend.auth === undefined ? undefined : backend.auth === "oauth" ? { type: "oauth" } : backend.auth

/** The most processes one backend may run (`maxInstances`). */
export const MAX_INSTANCES = 16

/** When a backend whose tools are known starts: on its first use, or always at `initialize`. */
export const BackendStart = Schema.Literals(["onUse", "always"]).annotate({ message: 'must be "onUse" or "always"' })

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
  args: Schema.Array(SecretString).pipe(Schema.withDecodingDefaultType(Effect.sync(() => []))),
  env: SecretEnv.pipe(Schema.withDecodingDefaultType(Effect.sync(() => ({})))),
  /** Gateway settings a backend may inherit all the same (e.g. OPENAI_API_KEY); see `backendEnv`. */
  inheritEnv: Schema.optional(Schema.Array(Schema.String)),
  cwd: Schema.optional(Schema.String),
  enabled: Schema.Boolean.pipe(Schema.withDecodingDefaultType(Effect.succeed(true))),
  requestTimeoutMs: Schema.optional(DurationMs),
  restartOnCrash: Schema.Boolean.pipe(Schema.withDecodingDefaultType(Effect.succeed(true))),
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
    Schema.Union([
      Schema.Literal(false),
      Schema.Struct({
        intervalMs: Schema.optional(DurationMs),
        timeoutMs: Schema.optional(DurationMs),
        failures: Schema.optional(BoundedInt(100, "failures"))
      })
    ])
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

export const BackendConfig = BackendFields.check(
  Schema.makeFilter((backend) => {
    const transport = transportOf(backend)
    if ((backend.maxInstances ?? 1) > 1) {
      if (transport !== "stdio") return { path: ["maxInstances"], issue: "is for stdio servers (processes run here)" }
      if (backend.requiresStatefulConnection !== false) {
        return {
          path: ["maxInstances"],
          issue: "needs requiresStatefulConnection: false (a server that keeps state per connection must be one process)"
        }
      }
    }
    if (transport === "stdio") {
      if (backend.auth !== undefined)
        return { path: ["auth"], issue: "is for remote servers (a url): a process is not signed in to" }
      if (backend.command === undefined) return { path: ["command"], issue: "is required (or give a url for a remote server)" }
      if (backend.url !== undefined) return { path: ["url"], issue: "is for remote servers: give a type other than stdio" }
      return true
    }
    if (backend.url === undefined) return { path: ["url"], issue: `is required for a ${transport} backend` }
    if (backend.auth !== undefined && (transport === "sse" || transport === "websocket")) {
      return {
        path: ["auth"],
        issue: `is spoken over Streamable HTTP (type http or streamable-http); over ${transport}, give a token in headers`
      }
    }
    if (backend.command !== undefined) return { path: ["command"], issue: "is for stdio servers: a remote one has a url" }
    const oauth = oauthOf(backend)
    if (oauth?.perUser === true && oauth.grant === "client_credentials") {
      return {
        path: ["auth"],
        issue: "perUser: the \"client_credentials\" grant is the gateway's own identity, never a user's"
      }
    }
    // A ${env:NAME} reference is checked once it is resolved (see `withEnvReferences`).
    const problem = backend.url.includes("${") ? undefined : remoteUrlProblem(transport, backend.url)
    return problem === undefined || { path: ["url"], issue: problem }
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

const UniqueBackends = Schema.Array(BackendConfig).check(
  Schema.makeFilter((backends) => {
    const seen = new Set<string>()
    for (let i = 0; i < backends.length; i++) {
      const id = backends[i]!.id
      if (seen.has(id)) {
        return { path: [i, "id"], issue: `duplicate backend id '${id}'` }
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
            issue: `'${override.name}' is also the name given to ${first} in the same namespace: the names would collide`
          }
        }
        named.set(key, here)
      }
    }
    return true
  })
)

export const Backends = UniqueBackends.check(
  Schema.makeFilter((backends) => backends.length > 0 || "must list at least one backend")
)

/**
 * An entry of a server map: Claude Desktop / Cursor `mcpServers`, VS Code `servers` (stdio, or
 * remote with `url`, `type` and `headers`), and the `servers`/`defaults` shape whose options
 * (`enabled`, `timeout`, `startupDelay`, ...) are in milliseconds.
 */
export const McpServerEntry = Schema.Struct({
  type: Schema.optional(
    // Cline writes streamableHttp.
    Schema.Literals([...BackendType.literals, "streamableHttp"]).annotate({
      message: "must be stdio, http, streamable-http, sse or websocket"
    })
  ),
  // BackendConfig's own options are accepted here too, so one file can keep the familiar shape
  // (those with a default are optional here, so `defaults` can tell an absent one).
  ...BackendFields.mapFields(
    Struct.pick([
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
    ])
  ).fields,
  args: Schema.optional(Schema.Array(SecretString)),
  env: Schema.optional(SecretEnv),
  restartOnCrash: Schema.optional(Schema.Boolean),
  disabled: Schema.optional(Schema.Boolean),
  /** Cline's name for `type`. */
  transportType: Schema.optional(
    Schema.Literals(["stdio", "sse", "streamableHttp"]).annotate({ message: "must be stdio, sse or streamableHttp" })
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

export const McpServers = Schema.Record(Schema.String, McpServerEntry)

/** `defaults`: options laid beneath every entry of the server map (never a command or address). */
export const ServerDefaults = McpServerEntry.mapFields(
  Struct.omit(["type", "command", "url", "args", "cwd", "displayName", "description"])
)
