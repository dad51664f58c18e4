/**
 * The command line read: the options and subcommands (with "did you mean"), the environment,
 * `.env` (documented settings only) and the config file, checked into what runs (`Parsed`); every
 * mistake a `UsageError` whose message says how to mend it. Nothing runs here.
 */
import { Result, Redacted } from "effect"
import * as path from "node:path"
import { parseArgs } from "node:util"
import { type ConfigSources, LogLevelName, MAX_DURATION_MS, readDotEnv } from "../config/Config.js"
import * as Secrets from "../observability/Secrets.js"
import { SERVER_VERSION } from "../gateway/methods/Aggregate.js"
import * as Load from "../config/Load.js"
import { closest } from "../config/Suggest.js"
import type * as Terminal from "./Terminal.js"
import type * as DebugServer from "../debug/DebugServer.js"
import type * as Http from "../transport/Http.js"
import { isLoopback, parseAddress } from "../transport/Address.js"
import { messageOf } from "../json/Json.js"

export const USAGE = `Usage: mcp-agentify [--config FILE] [--servers-dir DIR] [--log-level LEVEL] [--http [HOST:]PORT]
                    [--http-token TOKEN] [--http-auth oauth] [--debug-port [HOST:]PORT] [--profile NAME]
       mcp-agentify check [--config FILE] [--servers-dir DIR] [--log-level LEVEL] [--profile NAME] [--verbose]
       mcp-agentify tools ["query"] | call NAME ['{json}'] | ask "query" [--cwd DIR] [--mode code]   (same options as check)
       mcp-agentify trust BACKEND_ID [TOOL]   accept a backend's changed tool definitions (same options as check)
       mcp-agentify auth BACKEND_ID [--no-browser]   sign in to a remote backend that requires OAuth
       mcp-agentify auth --revoke BACKEND_ID [--subject S]   forget its tokens (or user S's) and revoke them
       mcp-agentify policy schema   print the Cedar schema of the configured tools, for \`policies\` (same options as check)

Serves MCP over stdio (stdout carries protocol frames only; logs go to stderr), or over Streamable
HTTP with --http. "check" starts every configured backend, prints what each offers and every
problem with its fix, and exits 1 if a backend is not ready. For a person in a terminal: "tools"
lists the whole catalog, every tool with its backend (a terminal is not a model's context: a
client's tools/list past maxListedTools holds the search tools instead), "tools QUERY" the
catalog's tools that match QUERY, best first; "call" calls one and prints its result, "ask" runs one
orchestration and prints the tools offered, the model's choice, the plan and the result; each
exits 1 when what it ran failed.

Options:
  --config FILE       GatewayOptions or Claude Desktop style {"mcpServers": ...} JSON (env AGENTIFY_CONFIG)
  --servers-dir DIR   every subfolder of DIR is a server, run as its package.json, pyproject.toml, go.mod
                      or Cargo.toml says; DIR/config.json ({"servers": ..., "defaults": ...}) overrides
                      per folder. Added to --config's backends.
  --profile NAME      serve (or check) only the tools of the configuration's profile NAME (over HTTP every
                      profile is served at /profiles/<name>/mcp instead)
  --log-level LEVEL   trace | debug | info | warn | error | fatal | silent (env LOG_LEVEL; default info)
  --http [HOST:]PORT  serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (env AGENTIFY_HTTP;
                      HOST defaults to 127.0.0.1; PORT 0 picks a free one). Each backend is also served
                      as itself at /servers/<id>/mcp; /healthz and /readyz report health.
  --http-token TOKEN  require "Authorization: Bearer TOKEN" on every HTTP request (env AGENTIFY_HTTP_TOKEN;
                      required when HOST is not a loopback address, unless --http-auth oauth)
  --http-auth oauth   require an OAuth access token (a JWT of the config file's httpAuth.issuer for its
                      httpAuth.audience, with its scopes) on every HTTP request; serves the protected-
                      resource metadata at /.well-known/oauth-protected-resource
  --debug-port [HOST:]PORT
                      serve the debug UI and its API at http://HOST:PORT/ (env DEBUG_PORT; HOST defaults to
                      127.0.0.1; another host needs AGENTIFY_DEBUG_TOKEN, sent as a bearer token or ?token=)
  --no-browser        auth: print the sign-in URL without opening a browser
  --revoke            auth: forget the backend's tokens, revoking them at its authorization server
  --subject S         auth --revoke: user S's own tokens of a backend that acts as each user (auth.perUser)
  --mode code         ask: the model writes one script that calls the tools (code mode), printed with its run
  --verbose           check: name each tool without annotations (by default, a count per backend)
  --help              print this and exit
  --version           print the version and exit

Environment: OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL, OPENAI_TIMEOUT_MS, LOG_LEVEL, DEBUG_PORT,
AGENTIFY_CONFIG, AGENTIFY_MAX_FRAME_BYTES, AGENTIFY_HTTP, AGENTIFY_HTTP_TOKEN, AGENTIFY_DEBUG_TOKEN,
AGENTIFY_STATE_DIR (the state directory: tool pins, remembered tool lists, the compiled-code cache;
default $XDG_STATE_HOME/mcp-agentify, else ~/.local/state/mcp-agentify), AGENTIFY_TOKEN_DIR (OAuth tokens
of remote backends; default $XDG_CONFIG_HOME/mcp-agentify/tokens, else ~/.config/mcp-agentify/tokens),
AGENTIFY_TOKEN_KEY (the key they are sealed with, 32 bytes hex or base64; default token.key in the state
directory), AGENTIFY_CODE_CACHE=off (no compiled-code cache; NODE_COMPILE_CACHE names its folder);
OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and OTEL_EXPORTER_OTLP_METRICS_ENDPOINT;
with OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, OTEL_BSP_SCHEDULE_DELAY; OTEL_SDK_DISABLED=true
turns it off) exports traces and metrics. A .env file in the current directory may supply
OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL, OPENAI_TIMEOUT_MS, LOG_LEVEL and AGENTIFY_MAX_FRAME_BYTES
(nothing else) and never overrides variables already set; backends never inherit the gateway's
settings (see inheritEnv).
With no config, one backend is started: @modelcontextprotocol/server-filesystem rooted at the current
directory (refused when that is / or the home directory).
`

/** A command line that cannot run: its message goes to stderr and the process exits 2. */
export class UsageError extends Error {}

/** What the command line asked for. */
export interface Settings {
  readonly sources: ConfigSources
  readonly openaiTimeoutMs: number | undefined
  /** Serve Streamable HTTP instead of stdio. */
  readonly http: Http.Options | undefined
  /** `.env` names ignored because only the real environment may set them. */
  readonly dotEnvRefused: ReadonlyArray<string>
  /** Where the debug UI listens (its port comes from the configuration) and its token. */
  readonly debug: Omit<DebugServer.Options, "port"> | undefined
  /** `--profile`: the configured profile the stdio client (or `check`) is served. */
  readonly profile?: string | undefined
}

export type Parsed =
  | { readonly _tag: "Run"; readonly settings: Settings }
  | {
      readonly _tag: "Check"
      readonly settings: Settings
      /** `--verbose`: each tool without annotations, not a count per backend. */
      readonly verbose: boolean
    }
  | {
      readonly _tag: "Auth"
      readonly backendId: string
      readonly browser: boolean
      /** `--revoke`: forget the backend's tokens (and tell its authorization server) instead of signing in. */
      readonly revoke: boolean
      /** `--subject`: with `--revoke`, a user's own tokens of a `perUser` backend. */
      readonly subject: string | undefined
      readonly settings: Settings
    }
  | { readonly _tag: "Trust"; readonly backendId: string; readonly tool: string | undefined; readonly settings: Settings }
  | { readonly _tag: "PolicySchema"; readonly settings: Settings }
  | { readonly _tag: "Terminal"; readonly command: Terminal.Command; readonly settings: Settings }
  | { readonly _tag: "Print"; readonly text: string }

const COMMANDS = ["check", "tools", "call", "ask", "auth", "trust", "policy"] as const
const OPTIONS = [
  "config",
  "servers-dir",
  "log-level",
  "http",
  "http-token",
  "http-auth",
  "debug-port",
  "profile",
  "no-browser",
  "revoke",
  "subject",
  "cwd",
  "mode",
  "verbose",
  "help",
  "version"
] as const

/** " (did you mean X?)" when one of `known` is close to `given`, else "". */
export const didYouMean = (given: string, known: ReadonlyArray<string>, prefix = ""): string => {
  const best = closest(given.replace(/^-+/, "").split("=")[0]!, known)
  return best === undefined ? "" : ` (did you mean ${prefix}${best}?)`
}

const SEE_HELP = "mcp-agentify --help shows the usage"

/** The command line as options and positionals; an unknown option is a `UsageError` with a suggestion. */
const readArguments = (
  argv: ReadonlyArray<string>
): { readonly values: Record<string, string | boolean | undefined>; readonly positionals: ReadonlyArray<string> } => {
  try {
    const parsedArgs = parseArgs({
      args: [...argv],
      options: {
        config: { type: "string", short: "c" },
        "servers-dir": { type: "string" },
        "log-level": { type: "string" },
        http: { type: "string" },
        "http-token": { type: "string" },
        "http-auth": { type: "string" },
        "debug-port": { type: "string" },
        profile: { type: "string" },
        "no-browser": { type: "boolean" },
        revoke: { type: "boolean" },
        subject: { type: "string" },
        cwd: { type: "string" },
        mode: { type: "string" },
        verbose: { type: "boolean" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "v" }
      },
      strict: true,
      allowPositionals: true
    })
    return { values: parsedArgs.values, positionals: parsedArgs.positionals }
  } catch (error) {
    const message = messageOf(error)
    const unknown = /^Unknown option '([^']+)'/.exec(message)?.[1]
    if (unknown !== undefined) {
      throw new UsageError(`unknown option '${unknown.slice(0, 100)}'${didYouMean(unknown, OPTIONS, "--")}; ${SEE_HELP}`)
    }
    throw new UsageError(`${message.split(". ")[0]}; ${SEE_HELP}`)
  }
}

/** `--profile`, checked: stdio's, and one the configuration has. */
const profileOf = (
  profile: string | undefined,
  command: Terminal.Command | undefined,
  values: Record<string, string | boolean | undefined>,
  env: Readonly<Record<string, string | undefined>>,
  file: Load.Loaded["file"]
): string | undefined => {
  if (profile !== undefined) {
    if (command !== undefined) throw new UsageError(`--profile is used with the gateway itself and with check; ${SEE_HELP}`)
    if (values.http !== undefined || env.AGENTIFY_HTTP?.trim()) {
      throw new UsageError("--profile is for stdio: over HTTP every profile is served at /profiles/<name>/mcp")
    }
    const known = Object.keys(file?.options.profiles ?? {})
    if (!known.includes(profile)) {
      throw new UsageError(
        `no profile '${profile.slice(0, 64)}' is configured (${known.length === 0 ? "there are none: add profiles to the config file" : `there are: ${known.join(", ")}`})`
      )
    }
  }
  return profile
}

/** The LLM request timeout per attempt (default 30 s): a knob for slow local models and for tests. */
const openaiTimeoutOf = (raw: string | undefined): number | undefined => {
  const rawTimeout = raw?.trim()
  if (rawTimeout === undefined || rawTimeout === "") return undefined
  const ms = Number(rawTimeout)
  if (!(Number.isInteger(ms) && ms > 0 && ms <= MAX_DURATION_MS)) {
    throw new UsageError(`OPENAI_TIMEOUT_MS must be a whole number of milliseconds from 1 to ${MAX_DURATION_MS}`)
  }
  return ms
}

/** `--http` and how it is protected, checked. Never from .env: a checkout's file must not open the gateway to the network. */
const httpOptionsOf = (
  values: Record<string, string | boolean | undefined>,
  env: Readonly<Record<string, string | undefined>>,
  file: Load.Loaded["file"]
): Http.Options | undefined => {
  const text = (name: string) => optionText(values, name)
  const httpText = text("http") ?? (env.AGENTIFY_HTTP?.trim() || undefined)
  let http: Http.Options | undefined
  if (httpText !== undefined) {
    const address = parseAddress(httpText)
    if (address === undefined)
      throw new UsageError(`--http must be [HOST:]PORT (PORT from 0 to 65535), not '${httpText.slice(0, 100)}'`)
    const tokenText = text("http-token") ?? (env.AGENTIFY_HTTP_TOKEN || undefined)
    if (tokenText !== undefined && tokenText.trim().length < 16) {
      throw new UsageError("the HTTP token must be at least 16 characters")
    }
    if (tokenText !== undefined) Secrets.register(tokenText)
    const auth = text("http-auth")
    if (auth !== undefined && auth !== "oauth") throw new UsageError(`--http-auth must be oauth, not '${auth.slice(0, 100)}'`)
    if (auth === "oauth" && tokenText !== undefined) {
      throw new UsageError("--http-auth oauth and --http-token are two ways to protect the endpoint: choose one")
    }
    if (auth === "oauth" && file?.options.httpAuth === undefined) {
      throw new UsageError('--http-auth oauth needs "httpAuth": {"issuer", "audience", "scopes"?} in the config file (--config)')
    }
    http = { ...address, token: tokenText === undefined ? undefined : Redacted.make(tokenText.trim()), oauth: auth === "oauth" }
    if (!isLoopback(http.host) && http.token === undefined && !http.oauth) {
      throw new UsageError(
        `--http on ${http.host} is reachable from other machines: set a token with --http-token or AGENTIFY_HTTP_TOKEN, or use --http-auth oauth`
      )
    }
  } else if (values["http-token"] !== undefined || values["http-auth"] !== undefined) {
    throw new UsageError(`${values["http-token"] !== undefined ? "--http-token" : "--http-auth"} is only used with --http`)
  }
  return http
}

/** The debug UI: --debug-port [HOST:]PORT, else DEBUG_PORT (env, .env, file, initializationOptions). */
const debugOptionsOf = (debugText: string | undefined, env: Readonly<Record<string, string | undefined>>) => {
  const debugAddress = debugText === undefined ? undefined : parseAddress(debugText)
  if (debugText !== undefined && debugAddress === undefined) {
    throw new UsageError(`--debug-port must be [HOST:]PORT (PORT from 0 to 65535), not '${debugText.slice(0, 100)}'`)
  }
  const debugTokenText = env.AGENTIFY_DEBUG_TOKEN?.trim() || undefined
  if (debugTokenText !== undefined && debugTokenText.length < 16) {
    throw new UsageError("AGENTIFY_DEBUG_TOKEN must be at least 16 characters")
  }
  if (debugTokenText !== undefined) Secrets.register(debugTokenText)
  const debugHost = debugAddress?.host ?? "127.0.0.1"
  if (!isLoopback(debugHost) && debugTokenText === undefined) {
    throw new UsageError(`--debug-port on ${debugHost} is reachable from other machines: set AGENTIFY_DEBUG_TOKEN`)
  }
  const debug = {
    host: debugHost,
    token: debugTokenText === undefined ? undefined : Redacted.make(debugTokenText)
  }
  return { debug, debugAddress }
}

/** What a subcommand other than a terminal one runs, its arguments checked. */
const subcommandOf = (
  subcommand: (typeof COMMANDS)[number] | undefined,
  positionals: ReadonlyArray<string>,
  values: Record<string, string | boolean | undefined>,
  settings: Settings
): Parsed => {
  if (subcommand === "auth") {
    const backendId = positionals[1]
    if (backendId === undefined || positionals.length > 2) {
      throw new UsageError("auth needs one backend id: mcp-agentify auth BACKEND_ID")
    }
    if (values.subject !== undefined && values.revoke !== true) throw new UsageError(`--subject goes with --revoke; ${SEE_HELP}`)
    const [browser, revoke, subject] = [values["no-browser"] !== true, values.revoke === true, values.subject]
    return { _tag: "Auth", backendId, browser, revoke, subject: typeof subject === "string" ? subject : undefined, settings }
  }
  const onlyWith = { "no-browser": "auth", revoke: "auth", subject: "auth --revoke" }
  for (const [name, only] of Object.entries(onlyWith))
    if (values[name] !== undefined) throw new UsageError(`--${name} is only used with ${only}; ${SEE_HELP}`)
  if (subcommand === "trust") {
    const backendId = positionals[1]
    if (backendId === undefined || positionals.length > 3) {
      throw new UsageError("trust needs a backend id, and may name one tool: mcp-agentify trust BACKEND_ID [TOOL]")
    }
    return { _tag: "Trust", backendId, tool: positionals[2], settings }
  }
  if (subcommand === "policy") {
    if (positionals[1] !== "schema" || positionals.length > 2) {
      throw new UsageError("policy has one command: mcp-agentify policy schema")
    }
    return { _tag: "PolicySchema", settings }
  }
  if (subcommand === "check") return { _tag: "Check", settings, verbose: values.verbose === true }
  return { _tag: "Run", settings }
}

/** Reads the command line, the environment, `.env` and the config file; throws `UsageError`. */
export const parse = (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>> = process.env,
  cwd: string = process.cwd()
): Parsed => {
  const { values, positionals } = readArguments(argv)
  const text = (name: string) => optionText(values, name)
  if (values.help) return { _tag: "Print", text: USAGE }
  if (values.version) return { _tag: "Print", text: `${SERVER_VERSION}\n` }
  const first = positionals[0]
  const subcommand = COMMANDS.find((known) => known === first)
  if (first !== undefined && subcommand === undefined) {
    throw new UsageError(`unknown command '${first.slice(0, 100)}'${didYouMean(first, COMMANDS)}; ${SEE_HELP}`)
  }
  const command = terminalCommand(subcommand, positionals.slice(1), values, cwd)
  if (subcommand !== undefined && subcommand !== "ask" && values.cwd !== undefined) {
    throw new UsageError(`--cwd is only used with ask; ${SEE_HELP}`)
  }
  if (subcommand !== "ask" && values.mode !== undefined) throw new UsageError(`--mode is only used with ask; ${SEE_HELP}`)
  if (subcommand !== "check" && values.verbose !== undefined)
    throw new UsageError(`--verbose is only used with check; ${SEE_HELP}`)
  const checking = subcommand === "check"
  if (
    subcommand !== undefined &&
    (values.http !== undefined || values["http-token"] !== undefined || values["http-auth"] !== undefined)
  ) {
    throw new UsageError(`${subcommand} starts the backends and reports; it serves nothing (no --http)`)
  }

  const dotEnv = readDotEnv(cwd)
  const cliLogLevelText = text("log-level")
  const cliLogLevel = LogLevelName.literals.find((level) => level === cliLogLevelText)
  if (cliLogLevelText !== undefined && cliLogLevel === undefined) {
    throw new UsageError(`--log-level must be one of ${LogLevelName.literals.join(", ")}`)
  }
  const configPath = text("config") ?? (env.AGENTIFY_CONFIG?.trim() || undefined)
  const disk = { configPath, serversDir: text("servers-dir") }
  const loaded = Result.getOrElse(Load.load(disk, env), (message) => {
    throw new UsageError(message)
  })
  const file = loaded.file
  const profile = profileOf(text("profile"), command, values, env, file)

  const openaiTimeoutMs = openaiTimeoutOf(env.OPENAI_TIMEOUT_MS ?? dotEnv.settings.OPENAI_TIMEOUT_MS)

  const http = httpOptionsOf(values, env, file)

  const { debug, debugAddress } = debugOptionsOf(text("debug-port"), env)

  const settings: Settings = {
    sources: {
      env,
      dotEnv: dotEnv.settings,
      file,
      serversDir: loaded.serversDir,
      disk,
      ...(debugAddress === undefined ? {} : { cliDebugPort: debugAddress.port }),
      // A person at a terminal wants the answer, not the start-up log: warnings only, unless asked.
      cliLogLevel:
        cliLogLevel ??
        ((command !== undefined || checking || subcommand === "trust" || subcommand === "policy") && env.LOG_LEVEL === undefined
          ? "warn"
          : undefined),
      cwd
    },
    openaiTimeoutMs,
    http,
    dotEnvRefused: dotEnv.refused,
    debug: subcommand === undefined ? debug : undefined,
    profile
  }
  if (command !== undefined) return { _tag: "Terminal", command, settings }
  return subcommandOf(subcommand, positionals, values, settings)
}

/** An option's text (the parser gives strings for string options). */
const optionText = (values: Record<string, string | boolean | undefined>, name: string): string | undefined => {
  const value = values[name]
  return typeof value === "string" ? value : undefined
}

/** `tools`, `call NAME [JSON]` and `ask QUERY` as commands (their arguments checked), or undefined. */
const terminalCommand = (
  subcommand: (typeof COMMANDS)[number] | undefined,
  rest: ReadonlyArray<string>,
  values: Record<string, string | boolean | undefined>,
  cwd: string
): Terminal.Command | undefined => {
  const text = (name: string) => optionText(values, name)
  const extra = (allowed: number) => {
    if (rest.length > allowed) throw new UsageError(`unexpected argument '${String(rest[allowed]).slice(0, 100)}'; ${SEE_HELP}`)
  }
  switch (subcommand) {
    case undefined:
    case "check":
      extra(0)
      return undefined
    case "auth":
    case "trust":
    case "policy":
      return undefined
    case "tools": {
      extra(1)
      const query = rest[0]?.trim()
      return query === undefined || query === "" ? { _tag: "Tools" } : { _tag: "Tools", query }
    }
    case "call": {
      extra(2)
      const name = rest[0]
      if (name === undefined) throw new UsageError(`call needs a tool name: mcp-agentify call NAME '{"arg": "value"}'`)
      let args: unknown = {}
      if (rest[1] !== undefined) {
        try {
          args = JSON.parse(rest[1])
        } catch (error) {
          throw new UsageError(`call: the arguments are not JSON (${messageOf(error)})`)
        }
        if (typeof args !== "object" || args === null || Array.isArray(args)) {
          throw new UsageError(`call: the arguments must be a JSON object, as '{"path": "README.md"}'`)
        }
      }
      return { _tag: "Call", name, arguments: args }
    }
    case "ask": {
      extra(1)
      const query = rest[0]?.trim()
      if (query === undefined || query === "")
        throw new UsageError(`ask needs a question: mcp-agentify ask "list the files here"`)
      const mode = text("mode")
      if (mode !== undefined && mode !== "tools" && mode !== "code") {
        throw new UsageError(`--mode is tools or code, not '${mode.slice(0, 40)}'`)
      }
      return {
        _tag: "Ask",
        query,
        cwd: path.resolve(cwd, text("cwd") ?? "."),
        ...(mode === undefined ? {} : { mode })
      }
    }
  }
}
