/**
 * `mcp-agentify check`: what a user runs before wiring the gateway into an IDE. It reads the
 * configuration as the gateway would, starts every backend, and prints a table of what each one
 * offers (state, protocol, tools, resources, prompts, start-up time) and every problem with its fix.
 * The exit code says whether every enabled backend became ready with every tool exposed (0) or
 * not (1: a backend not ready, a name conflict, a tool quarantined because its definition changed
 * since it was pinned, a policy file that does not load or validate against the tools' schema).
 * `--profile` checks one profile: its backends, and the tools it serves.
 */
import { objectOr } from "../json/Json.js"
import * as Capabilities from "../catalog/Capabilities.js"
import { Array as Arr, Effect, Fiber, Stream } from "effect"
import type { BackendStatus } from "../observability/BackendStatus.js"
import { Backends, type BackendsService, type StartOptions, startOptionsOf } from "../backend/Backends.js"
import * as Pins from "../backend/Pins.js"
import * as CedarSchema from "../policy/CedarSchema.js"
import * as Store from "../auth/Store.js"
import {
  type BackendConfig,
  GatewayConfig,
  type ConfigSources,
  oauthOf,
  type Profile,
  type ResolvedConfig,
  transportOf
} from "../config/Config.js"
import { type Catalog, type CatalogEntry, catalogOf, describeConflict, inProfile, profileServes } from "../catalog/ToolCatalog.js"
import * as Logging from "../observability/Logging.js"
import { withCore } from "./Core.js"
import * as SharedFiles from "../gateway/SharedFiles.js"
import * as Secrets from "../observability/Secrets.js"
import * as Embeddings from "../catalog/semantic/Embeddings.js"

interface Row {
  readonly id: string
  readonly transport: string
  readonly state: string
  readonly protocol: string
  readonly tools: string
  readonly resources: string
  readonly prompts: string
  readonly startup: string
}

/** What to do about a backend that did not become ready, from why it did not. */
export const fixFor = (status: BackendStatus, startupTimeoutMs: number): string => {
  const why = status.lastError ?? ""
  if (!status.enabled) return "it is disabled in the configuration (enabled: false / disabled: true)"
  if (status.state === "needs auth") return `sign in: mcp-agentify auth ${status.id} (the gateway picks the token up by itself)`
  if (status.state === "starting")
    return `it was still starting after ${startupTimeoutMs} ms: raise startupTimeoutMs, or check that it speaks MCP on stdout`
  if (/command not found/.test(why)) return "install the command or give its absolute path in `command`"
  if (/permission denied/.test(why)) return "make the command executable (chmod +x) or run it through its interpreter"
  if (/working directory not found/.test(why)) return "create the directory or fix `cwd`"
  if (/Cannot find module|MODULE_NOT_FOUND|No such file or directory|can't open file/.test(why))
    return "a file it names does not exist: a relative path is the gateway's current directory's; write ${configDir}/... for a file beside the config"
  if (/no common MCP protocol version/.test(why)) return "the server speaks no MCP version the gateway knows: update it"
  if (/HTTP 40[13]/.test(why))
    return "the server refused the credentials: check `headers` (or `auth`) and the variables they refer to"
  if (/HTTP 404/.test(why))
    return "nothing answers MCP at that address: check the path of `url` (often /mcp, or /sse for older servers)"
  if (/could not be reached|closed the WebSocket|closed its event stream/.test(why))
    return "check that the server is running and that `url` (host, port, http/https) is right"
  if (/\$\{input:/.test(why))
    return "VS Code inputs are prompted by VS Code: set the value in the environment and use ${env:NAME}"
  if (/\$\{env:/.test(why)) return "set that variable in the environment the gateway runs in (or in its client's env block)"
  if (/refuse|home directory/.test(why)) return "give the server a directory of its own in the configuration"
  return "run its command by hand to see why it exits; its first error line and last stderr lines are in the error above"
}

const pad = (rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join("  ")
        .trimEnd()
    )
    .join("\n")
}

/**
 * Tools that say nothing of what they do, and what the gateway's safeties take them for (MCP's
 * defaults, or what `flow.tools` declares of them): per backend, how many of its tools and taken
 * for what (a catalog of hundreds is hundreds of lines otherwise); with `verbose`, each tool.
 */
export const unannotatedLines = (entries: ReadonlyArray<CatalogEntry>, verbose: boolean): Array<string> => {
  const silent = entries.filter((e) =>
    ["readOnlyHint", "destructiveHint", "openWorldHint"].every((h) => !Object.hasOwn(objectOr(e.source.annotations), h))
  )
  const takenFor = (e: CatalogEntry) => Capabilities.describe(Capabilities.of(e.toolName, e.tool.annotations, undefined))
  if (verbose) return silent.map((e) => `  ${e.name}: ${takenFor(e)}`)
  const byBackend = Arr.groupBy(silent, (e) => e.backendId)
  return Object.entries(byBackend).map(([backendId, tools]) => {
    const all = entries.filter((e) => e.backendId === backendId).length
    const kinds = Object.entries(Arr.groupBy(tools, takenFor)).map(([kind, some]) => `${some.length} ${kind}`)
    return `  ${backendId}: ${tools.length} of ${all} ${all === 1 ? "tool" : "tools"} (${kinds.join("; ")})`
  })
}

/** The least time a check gives backends to start (a first `npx` download takes a while). */
const CHECK_STARTUP_MS = 30_000

/** What a check found wrong (the exit code is 1 when there is one) and what it found doubtful. */
interface Findings {
  readonly problems: Array<string>
  readonly warnings: Array<string>
}

/**
 * Starts `checked` and says how long each took to settle (ready or failed), in ms from the start:
 * watched while they start, since the states read afterwards no longer say when.
 */
const startTimed = (
  backends: BackendsService,
  checked: ReadonlyArray<BackendConfig>,
  options: StartOptions
): Effect.Effect<ReadonlyMap<string, number>> =>
  Effect.gen(function* () {
    const started = Date.now()
    const settledIn = new Map<string, number>()
    const watcher = yield* backends.statusChanges.pipe(
      Stream.runForEach((status) =>
        Effect.sync(() => {
          if ((status.state === "ready" || status.state === "failed") && !settledIn.has(status.id))
            settledIn.set(status.id, Date.now() - started)
        })
      ),
      // Listening before the first start is told: a fork that waited for this fiber to yield could miss it.
      Effect.forkChild({ startImmediately: true })
    )
    yield* backends.start(checked, options)
    yield* Fiber.interrupt(watcher)
    return settledIn
  })

/** The table's rows: one per backend, what it offers once ready and how long it took to start. */
const rowsOf = (
  backends: BackendsService,
  config: ResolvedConfig,
  states: ReadonlyArray<BackendStatus>,
  settledIn: ReadonlyMap<string, number>
): Effect.Effect<Array<Row>> =>
  Effect.gen(function* () {
    // "5 of 14" when filters, conflicts or quarantine hide some of what a backend lists; quarantine named.
    const exposed = catalogOf(backends.toolsSync())
    const exposedOf = (id: string, listed: number) => {
      const shown = exposed.entries.filter((e) => e.backendId === id).length
      const backend = backends.toolsSync().find((b) => b.backendId === id)
      const held = backend?.pinMode === "quarantine" ? (backend.changed?.length ?? 0) : 0
      // `listed` counts the tools it may serve: the held ones are added back, and named.
      if (held > 0) return `${shown} of ${listed + held} (${held} quarantined)`
      return shown === listed ? String(listed) : `${shown} of ${listed}`
    }
    const rows: Array<Row> = []
    for (const status of states) {
      const ready = status.state === "ready"
      const configured = config.backends.find((b) => b.id === status.id)
      const ms = settledIn.get(status.id)
      rows.push({
        id: status.displayName === undefined ? status.id : `${status.id} (${status.displayName})`,
        transport: configured === undefined ? "-" : transportOf(configured),
        state: status.state,
        protocol: status.protocolVersion ?? "-",
        tools: ready ? exposedOf(status.id, status.toolCount) : "-",
        resources: ready ? yield* backends.countListed(status.id, "resources", "resources/list", "resources") : "-",
        prompts: ready ? yield* backends.countListed(status.id, "prompts", "prompts/list", "prompts") : "-",
        startup: ms === undefined ? "-" : `${ms} ms`
      })
    }
    return rows
  })

/** Each enabled backend that is not ready, why (scrubbed of secrets), and what to do about it. */
const notReady = (states: ReadonlyArray<BackendStatus>, startupTimeoutMs: number): Array<string> =>
  states
    .filter((s) => s.state !== "ready" && s.enabled)
    .map(
      (s) =>
        `- ${s.id}: ${s.state}${s.lastError === undefined ? "" : `: ${Secrets.scrub(s.lastError)}`}\n  fix: ${fixFor(s, startupTimeoutMs)}`
    )

/**
 * What the listed tools themselves give away: descriptions that hide characters (removed from
 * what the gateway's model reads: warnings), definitions changed since they were pinned (held back:
 * problems; flagged: warnings), and the pins' notes.
 */
const toolFindings = (backends: BackendsService): Effect.Effect<Findings> =>
  Effect.gen(function* () {
    const warnings: Array<string> = []
    const problems: Array<string> = []
    for (const listed of backends.toolsSync()) {
      for (const h of yield* backends.hiddenIn(listed.backendId, listed.tools)) {
        warnings.push(
          `- ${h.backendId}: ${h.what} ${h.name}'s description hides characters (${h.found}); the gateway's model never reads them`
        )
      }
    }
    for (const listed of backends.toolsSync()) {
      for (const change of listed.changed ?? []) {
        const line = `- ${listed.backendId}: tool ${change.name} changed since it was pinned (${change.changed.join(", ")})${
          listed.pinMode === "quarantine" ? ": quarantined" : ""
        }\n${Pins.describeChange(change)}\n  fix: review the change, then run \`mcp-agentify trust ${listed.backendId} ${change.name}\``
        if (listed.pinMode === "quarantine") problems.push(line)
        else warnings.push(line)
      }
    }
    for (const listed of backends.toolsSync()) for (const note of listed.pinNotes ?? []) warnings.push(`- ${note}`)
    return { problems, warnings }
  })

/** The policy file, validated against the schema of the tools listed now; undefined without one. */
const reviewPolicies = (config: ResolvedConfig, backends: BackendsService) => {
  if (config.policies === undefined) return undefined
  const file = config.policies
  const review = CedarSchema.review(
    file,
    catalogOf(backends.toolsSync()).entries.map((e) => ({ name: e.name, inputSchema: e.tool.inputSchema }))
  )
  return {
    ids: review.ids,
    line: `policies: ${review.ids.length} in ${file}${review.ids.length === 0 ? "" : ` (${review.ids.join(", ")})`}`,
    problems: review.problems.map((p) => `- policies ${file}: ${p}`),
    warnings: review.warnings.map((w) => `- policies ${file}: ${w}`)
  }
}

/**
 * Who the gateway is signed in as at each remote OAuth backend: issuer and scopes, never a token.
 * A backend that acts as each user: each user's own sign-in under it, by name.
 */
const signInLines = (config: ResolvedConfig, env: ConfigSources["env"]): Array<string> => {
  const tokenDir = Store.directory(env)
  return config.backends
    .filter((b) => b.url !== undefined && oauthOf(b) !== undefined)
    .flatMap((b) => [
      `  ${b.id}: ${Store.describe(Store.read(tokenDir, b.id, env), b.id)}`,
      ...(oauthOf(b)?.perUser === true
        ? Store.usersOf(tokenDir, b.id, env).map((u) => `    ${u.subject}: ${Store.describe(u, b.id)}`)
        : [])
    ])
}

/** The tools a `--profile` check serves, under a line naming the profile; nothing without one. */
const servedLines = (profileName: string | undefined, profile: Profile | undefined, catalog: Catalog): Array<string> =>
  profileName === undefined
    ? []
    : [
        "",
        `profile ${profileName}${profile?.description === undefined ? "" : ` (${profile.description})`}: ${catalog.entries.length} tools`,
        ...catalog.entries.map((e) => `  ${e.name}  [${e.backendId}]`)
      ]

/**
 * Runs the check; succeeds with the process's exit code. Writes the report with `print`. With a
 * `profile` (known to the configuration: the command line checked), only its backends start and
 * the tools it serves are listed.
 */
export const check = (
  sources: ConfigSources,
  print: (text: string) => void,
  profileName?: string,
  verbose = false
): Effect.Effect<number> =>
  Effect.gen(function* () {
    const config = yield* (yield* GatewayConfig).current
    const profile = profileName === undefined ? undefined : config.profiles[profileName]
    yield* Logging.applyLevel(config.logLevel)
    const backends = yield* Backends
    // A check waits longer than a client's initialize: it reports what each backend ends up as.
    const startupTimeoutMs = Math.max(config.startupTimeoutMs, CHECK_STARTUP_MS)
    const checked = config.backends.filter((b) => profileServes(profile, b.id))
    const settledIn = yield* startTimed(backends, checked, startOptionsOf({ ...config, startupTimeoutMs, start: "always" }))
    const states = yield* backends.states
    const rows = yield* rowsOf(backends, config, states, settledIn)
    const tools = yield* toolFindings(backends)
    const problems = [...notReady(states, startupTimeoutMs), ...tools.problems]
    const warnings = [...tools.warnings]
    // Tools two backends would share a name for: the later one's are not exposed.
    const catalog = inProfile(catalogOf(backends.toolsSync()), profile)
    for (const conflict of catalog.conflicts) {
      problems.push(`- ${conflict.dropped.backendId}: ${describeConflict(conflict)}`)
    }
    // Tools that say nothing of what they do: what the gateway's safeties take them for (MCP's defaults,
    // or what `flow.tools` declares of them), so that a user can declare better.
    const unannotated = unannotatedLines(catalog.entries, verbose)
    const policies = reviewPolicies(config, backends)
    problems.push(...(policies?.problems ?? []))
    warnings.push(...(policies?.warnings ?? []))
    const signIns = signInLines(config, sources.env)
    // What --servers-dir found (info) and the folders it could not use.
    const found = config.notes.filter((n) => n.level === "info" || n.message.startsWith("not a server in "))
    const lines = [
      `configuration: ${config.backendsSource}`,
      ...found.map((n) => `  ${n.message}`),
      "",
      pad([
        ["backend", "transport", "state", "protocol", "tools", "resources", "prompts", "start-up"],
        ...rows.map((r) => [r.id, r.transport, r.state, r.protocol, r.tools, r.resources, r.prompts, r.startup])
      ]),
      ...servedLines(profileName, profile, catalog),
      "",
      ...(policies === undefined ? [] : [policies.line]),
      ...(signIns.length === 0 ? [] : ["sign-ins:", ...signIns]),
      `OpenAI key: ${config.openaiApiKeySource === "none" ? "not set (tools/call works; orchestration needs OPENAI_API_KEY)" : `set (from ${config.openaiApiKeySource})`}`,
      `embeddings: ${Embeddings.describe(config)}`,
      problems.length === 0 ? "every enabled backend is ready" : `problems:\n${problems.join("\n")}`,
      ...(warnings.length === 0 ? [] : [`warnings:\n${warnings.join("\n")}`]),
      ...(unannotated.length === 0
        ? []
        : [
            `tools without annotations, taken for (declare better in a backend's flow.tools${verbose ? "" : "; --verbose names each"}):\n${unannotated.join("\n")}`
          ])
    ]
    print(`${lines.join("\n")}\n`)
    yield* backends.stopAll
    return problems.length === 0 ? 0 : 1
  }).pipe(withCore(sources), SharedFiles.around(sources))
