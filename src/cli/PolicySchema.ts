/**
 * `mcp-agentify policy schema`: the Cedar schema a `policies` file is written against, generated
 * from the tools the configured backends list now (see policy/CedarSchema). It starts every
 * backend, prints the schema on stdout and stops them; a backend that did not start is named on
 * stderr, its tools missing from the schema's arguments.
 */
import { Effect } from "effect"
import { Backends, startOptionsOf } from "../backend/Backends.js"
import { catalogOf } from "../catalog/ToolCatalog.js"
import { type ConfigSources, GatewayConfig } from "../config/Config.js"
import * as Logging from "../observability/Logging.js"
import { withCore } from "./Core.js"
import * as CedarSchema from "../policy/CedarSchema.js"

/** Prints the schema; succeeds with the exit code (1: a backend did not start). */
export const run = (sources: ConfigSources, print: (text: string) => void): Effect.Effect<number> =>
  Effect.gen(function* () {
    const config = yield* (yield* GatewayConfig).current
    yield* Logging.applyLevel(config.logLevel)
    const backends = yield* Backends
    yield* backends.start(config.backends, startOptionsOf({ ...config, start: "always" }))
    const missing = (yield* backends.states).filter((s) => s.enabled && s.state !== "ready")
    for (const s of missing) yield* Effect.logWarning(`${s.id} is ${s.state}: its tools are not in the schema`)
    const tools = catalogOf(backends.toolsSync()).entries.map((e) => ({ name: e.name, inputSchema: e.tool.inputSchema }))
    print(CedarSchema.generate(tools))
    yield* backends.stopAll
    return missing.length === 0 ? 0 : 1
  }).pipe(withCore(sources))
