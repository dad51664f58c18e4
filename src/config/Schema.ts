/**
 * The gateway's options (GatewayOptions, with the defaults and ranges docs/protocol.md documents):
 * profiles, the HTTP endpoint's, audit and code mode's settings, over each backend's (BackendSchema)
 * and the kinds of value they share (Fields); Flow, Limits and the team's store have rules of their
 * own, in modules apart. Every key is declared once, beside its range and default.
 */
import { Schema } from "effect"
import * as Mcp from "../protocol/Mcp.js"
import { FlowGuard } from "./Flow.js"
import { Limits } from "./Limits.js"
import { HttpUrl, State } from "./TeamStore.js"
import { BackendStart, Backends, Globs, McpServers, ServerDefaults } from "./BackendSchema.js"
import {
  BackendId,
  BoundedInt,
  ConfirmTools,
  DurationMs,
  FrameBytes,
  ID_PATTERN,
  ListedTools,
  LogLevelName,
  MAX_SESSIONS_LIMIT,
  MAX_STEPS_LIMIT,
  MAX_TOOLS_LIMIT,
  NonEmptyString,
  Port,
  Routing,
  SecretString
} from "./Fields.js"

export * from "./Fields.js"
export * from "./BackendSchema.js"

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
export const Profiles = Schema.Record(Schema.String, Profile).check(
  Schema.makeFilter((profiles) => {
    const bad = Object.keys(profiles).find((name) => !ID_PATTERN.test(name))
    return bad === undefined || { path: [bad], issue: "a profile's name must match ^[a-zA-Z0-9_-]{1,64}$" }
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
  arguments: Schema.optional(Schema.Literals(["hash", "full", "none"])),
  maxBytes: Schema.optional(BoundedInt(1024 * 1024 * 1024, "bytes")),
  keep: Schema.optional(BoundedInt(100, "files"))
})
export type Audit = typeof Audit.Type

/** `codeMode`: false removes `agentify_run_code`; an object sets its limits. */
export const CodeMode = Schema.Union([
  Schema.Literal(false),
  Schema.Struct({
    timeoutMs: Schema.optional(BoundedInt(600_000, "milliseconds")),
    memoryMb: Schema.optional(
      Schema.Number.check(
        Schema.makeFilter((n) => Number.isInteger(n) && n >= 16 && n <= 1024, {
          message: "must be a whole number of MiB from 16 to 1024"
        })
      )
    ),
    maxCalls: Schema.optional(BoundedInt(100_000, "calls")),
    maxConcurrentCalls: Schema.optional(BoundedInt(64, "calls")),
    maxOutputBytes: Schema.optional(BoundedInt(64 * 1024 * 1024, "bytes")),
    /** Scripts running at once in the gateway, and waiting for a turn beyond those. */
    maxRuns: Schema.optional(BoundedInt(256, "runs")),
    maxQueuedRuns: Schema.optional(
      Schema.Number.check(
        Schema.makeFilter((n) => Number.isInteger(n) && n >= 0 && n <= 10_000, {
          message: "must be a whole number of runs from 0 to 10000"
        })
      )
    )
  })
])
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
  toolPins: Schema.optional(Schema.Literals(["quarantine", "warn", "off"])),
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
    Schema.String.check(
      Schema.makeFilter((s) => /^[A-Za-z0-9._-]{1,32}$/.test(s), {
        message: "must be 1 to 32 letters, digits, '.', '_' or '-'"
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
