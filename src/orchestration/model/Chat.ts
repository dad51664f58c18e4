/**
 * What the LLM behind orchestration is asked and answers: one Chat Completions request offering
 * function tools, and the tool calls the model made. The shapes every implementation shares
 * (`OpenAi`, `Scripted`) and the service they provide (`LlmClient`, in `Llm`).
 */
import type { Effect } from "effect"
import type { NotConfigured } from "../../protocol/Errors.js"
import type { LlmRequestFailed } from "../Errors.js"

/** An OpenAI Chat Completions function tool: what `ToolCatalog` produces, declared there. */
export type { ChatTool } from "../../catalog/ToolCatalog.js"
import type { ChatTool } from "../../catalog/ToolCatalog.js"

/** The conversation: instructions, the request, and for each step the model's calls and their results. */
export type ChatMessage =
  | { readonly role: "system" | "user"; readonly content: string }
  | { readonly role: "assistant"; readonly content: string | null; readonly toolCalls: ReadonlyArray<ChatToolCall> }
  | { readonly role: "tool"; readonly toolCallId: string; readonly content: string }

export interface ChatRequest {
  /** The user's raw query, for scripted rules and logs; the model sees `messages`. */
  readonly query: string
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tools: ReadonlyArray<ChatTool>
  /** The one function the model must call (`tool_choice`); absent: it chooses (`"auto"`). */
  readonly toolChoice?: string | undefined
}

export interface ChatToolCall {
  readonly id: string
  readonly name: string
  /** The arguments as the model sent them: JSON text, not yet parsed or validated. */
  readonly arguments: string
}

export interface ChatResponse {
  readonly toolCalls: ReadonlyArray<ChatToolCall>
  /** What the model said, if anything (its refusal when it refused). */
  readonly content: string | null
  readonly model?: string
  /** Tokens the request used, when the endpoint says (the debug UI shows them). */
  readonly usage?: { readonly promptTokens: number; readonly completionTokens: number; readonly totalTokens: number }
}

export type LlmError = LlmRequestFailed | NotConfigured

/** What `LlmClient` provides. */
export interface LlmService {
  readonly chat: (request: ChatRequest) => Effect.Effect<ChatResponse, LlmError>
}
