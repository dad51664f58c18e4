import { Effect, Layer } from "effect"
import { Config, Gateway, Llm, Orchestrator } from "mcp-agentify"

// The backends to run, as GatewayOptions (validated: a bad option fails the layer with -32602's issues).
const ConfigLive = Config.GatewayConfig.layerFromOptions({
  backends: [{ id: "filesystem", command: process.execPath, args: [Config.serverFilesystemEntry(), process.cwd()] }]
})

// In production: Llm.LlmClient.layerOpenAI (reads OPENAI_API_KEY). Here, a scripted model.
const LlmLive = Llm.LlmClient.layerScripted([
  { match: "package.json", reply: { tool: "filesystem__read_text_file", arguments: { path: "package.json" } } }
])

// Starts every backend while the layer builds; closing it stops them (and their children).
export const GatewayLive = Gateway.layer.pipe(Layer.provide([ConfigLive, LlmLive]))

export const program = Effect.gen(function* () {
  const orchestrator = yield* Orchestrator.Orchestrator
  return yield* orchestrator.orchestrate(
    { query: "show me package.json", context: { currentWorkingDirectory: process.cwd() }, maxSteps: 3 },
    // Told as each step starts; `confirm` and `profile` may be given too.
    { onStep: (step, maxSteps, tools) => Effect.logInfo(`step ${step}/${maxSteps}: ${tools.join(", ")}`) }
  )
})

export const main = program.pipe(Effect.provide(GatewayLive))
