/**
 * mcp-agentify as a library: what an Effect app embeds (see docs/embedding.md). The configuration,
 * the backends, the orchestrator and its model (with the scripted layer for tests), the errors and
 * events, the tool catalog, the gateway's Layers, and the transports as Layers the app serves.
 * The machinery beneath them (the JSON-RPC peer, sessions, the method tables, the CLI) is not
 * part of it.
 */
export * as Backends from "./backend/Backends.js"
export * as Caller from "./gateway/pipeline/Caller.js"
export * as Config from "./config/Config.js"
export * as Errors from "./Errors.js"
export * as Events from "./observability/Events.js"
export * as Gateway from "./gateway/Gateway.js"
export * as JsonRpc from "./jsonrpc/JsonRpc.js"
export * as Llm from "./orchestration/model/Llm.js"
export * as Logging from "./observability/Logging.js"
export * as Mcp from "./protocol/Mcp.js"
export * as Orchestrator from "./orchestration/Orchestrator.js"
export * as Rules from "./gateway/pipeline/Rule.js"
export * as Secrets from "./observability/Secrets.js"
export * as ToolCatalog from "./catalog/ToolCatalog.js"
export * as Transport from "./transport/Transport.js"
export { rank } from "./catalog/ToolCatalog.js"
