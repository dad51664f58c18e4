/**
 * mcp-agentify as a library: the gateway's Layers and services for Effect apps that embed it
 * (see docs/embedding.md), and the pure pieces (framing, ranking) on their own.
 */
export * as Backend from "./backend/Backend.js"
export * as Backends from "./backend/Backends.js"
export * as Cli from "./cli/Cli.js"
export * as Config from "./config/Config.js"
export * as Errors from "./protocol/Errors.js"
export * as Events from "./observability/Events.js"
export * as Gateway from "./gateway/Gateway.js"
export * as JsonRpc from "./jsonrpc/JsonRpc.js"
export * as Llm from "./orchestration/Llm.js"
export * as Logging from "./observability/Logging.js"
export * as Mcp from "./protocol/Mcp.js"
export * as Orchestrator from "./orchestration/Orchestrator.js"
export * as Peer from "./jsonrpc/Peer.js"
export * as Secrets from "./observability/Secrets.js"
export * as Server from "./gateway/Server.js"
export * as Session from "./gateway/Session.js"
export * as Http from "./transport/Http.js"
export * as Stdio from "./transport/Stdio.js"
export * as ToolCatalog from "./catalog/ToolCatalog.js"
export { rank } from "./catalog/ToolCatalog.js"
