/**
 * The LLM behind orchestration: `LlmClient` is the service; `layerOpenAI` talks to OpenAI or any
 * OpenAI-compatible server (`OpenAi`), `layerScripted` answers from rules (`Scripted`), for tests
 * and for apps that embed the gateway. The shapes they share are in `Chat`; this module is the
 * public interface and re-exports them.
 */
import { Context, Effect, Layer } from "effect"
import type { GatewayConfig } from "../../config/Config.js"
import type { LlmService } from "./Chat.js"
import { makeOpenAI, type OpenAIOptions } from "./OpenAi.js"
import { makeScripted, type ScriptedOptions, ScriptedLlm, type ScriptRule } from "./Scripted.js"

export type { ChatMessage, ChatRequest, ChatResponse, ChatTool, ChatToolCall, LlmError, LlmService } from "./Chat.js"
export {
  DEFAULT_MAX_RETRIES,
  DEFAULT_MAX_RETRY_DELAY_MS,
  DEFAULT_TIMEOUT_MS,
  makeOpenAI,
  OPENAI_BASE_URL,
  type OpenAIOptions
} from "./OpenAi.js"
export {
  makeScripted,
  type ScriptMatch,
  type ScriptReply,
  type ScriptRule,
  type ScriptedOptions,
  ScriptedLlm
} from "./Scripted.js"

// ---------------------------------------------------------------------------------------------
// The service

export class LlmClient extends Context.Service<LlmClient, LlmService>()("mcp-agentify/LlmClient") {
  /** `layerOpenAI` with its timeout and retries chosen by the caller. */
  static layerOpenAIWith = (options: OpenAIOptions = {}): Layer.Layer<LlmClient, never, GatewayConfig> =>
    Layer.effect(LlmClient, makeOpenAI(options))

  /** OpenAI or a compatible server, as configured, with the default timeout and retries. */
  static layerOpenAI: Layer.Layer<LlmClient, never, GatewayConfig> = LlmClient.layerOpenAIWith()

  /** Answers from `rules`, first match wins; also provides `ScriptedLlm` to inspect requests. */
  static layerScripted = (
    rules: ReadonlyArray<ScriptRule>,
    options: ScriptedOptions = {}
  ): Layer.Layer<LlmClient | ScriptedLlm> =>
    Layer.effectContext(
      Effect.map(makeScripted(rules, options), ({ client, control }) =>
        Context.make(LlmClient, client).pipe(Context.add(ScriptedLlm, control))
      )
    )
}
