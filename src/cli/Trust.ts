/**
 * `mcp-agentify trust <backend> [tool]`: accepts a backend's tool definitions as they are now, after
 * a change quarantined them (see backend/Pins). It starts that backend alone, shows what differs
 * from each pin, stores the definitions presented now as the new pins, and says which it trusted.
 * Without a tool, every tool the backend lists now is trusted. With a `state` store, the pins are
 * the team's: every running gateway takes them up at once (see gateway/SharedFiles).
 */
import { Effect } from "effect"
import { Backends, startOptionsOf } from "../backend/Backends.js"
import * as Pins from "../backend/Pins.js"
import { type ConfigSources, GatewayConfig } from "../config/Config.js"
import * as Logging from "../observability/Logging.js"
import { withCore } from "./Core.js"
import * as SharedFiles from "../gateway/SharedFiles.js"
import { WrittenFiles } from "../store/WrittenFiles.js"
import * as Secrets from "../observability/Secrets.js"

/** The least time a backend is given to start (a first `npx` download takes a while). */
const TRUST_STARTUP_MS = 30_000

/** Runs the command; succeeds with the process's exit code (2: no such backend, 1: it did not start or has no such tool). */
export const run = (
  backendId: string,
  tool: string | undefined,
  sources: ConfigSources,
  print: (text: string) => void
): Effect.Effect<number> =>
  Effect.gen(function* () {
    const config = yield* (yield* GatewayConfig).current
    yield* Logging.applyLevel(config.logLevel)
    const configured = config.backends.find((b) => b.id === backendId)
    if (configured === undefined) {
      print(`no backend '${backendId}' in the configuration (${config.backends.map((b) => b.id).join(", ") || "none"})\n`)
      return 2
    }
    const settings: Pins.Settings = { mode: config.toolPins, stateDir: config.stateDir, told: (yield* WrittenFiles).wrote }
    const backends = yield* Backends
    // Started without pins: what it presents now, every tool, is what may be trusted.
    yield* backends.start(
      [configured],
      startOptionsOf({
        ...config,
        start: "always",
        toolPins: "off",
        startupTimeoutMs: Math.max(config.startupTimeoutMs, TRUST_STARTUP_MS)
      })
    )
    const listed = backends.toolsSync().find((b) => b.backendId === backendId)
    if (listed === undefined) {
      const status = (yield* backends.states).find((s) => s.id === backendId)
      print(`${backendId} did not start: ${Secrets.scrub(status?.lastError ?? status?.state ?? "unknown")}\n`)
      yield* backends.stopAll
      return 1
    }
    if (tool !== undefined && !listed.tools.some((t) => t.name === tool)) {
      print(`${backendId} lists no tool '${tool}' (it lists ${listed.tools.map((t) => t.name).join(", ") || "none"})\n`)
      yield* backends.stopAll
      return 1
    }
    // What differs from each pin, before it is replaced.
    const server = Pins.serverOf(configured)
    const review = Pins.review({ ...settings, mode: "quarantine" }, server, listed.tools, () => {})
    const lines: Array<string> = []
    for (const change of review.changed) {
      if (tool !== undefined && change.name !== tool) continue
      lines.push(`${backendId}: ${change.name} changed (${change.changed.join(", ")})`, Pins.describeChange(change))
    }
    for (const name of review.pinned) if (tool === undefined || name === tool) lines.push(`${backendId}: ${name} is new`)
    if (lines.length === 0) {
      // Nothing to accept: said so, and the pins are left as they are.
      const what = tool === undefined ? `${backendId}'s ${listed.tools.length} tools match` : `${backendId}'s ${tool} matches`
      print(`nothing changed: ${what} their pins (in ${settings.stateDir})\n`)
      yield* backends.stopAll
      return 0
    }
    const trusted = Pins.trust(settings, server, listed.tools, tool)
    lines.push(
      `trusted ${trusted.length} tool${trusted.length === 1 ? "" : "s"} of ${backendId}: ${trusted.join(", ")} (pins in ${settings.stateDir})`
    )
    print(`${lines.join("\n")}\n`)
    yield* backends.stopAll
    return 0
  }).pipe(withCore(sources), SharedFiles.around(sources))
