/**
 * mcp-agentify as a library: the gateway's Layers and services for Effect apps that embed it
 * (see the README's "Embedding" section), and the pure pieces (framing, ranking) on their own.
 */
export * as Backend from "./Backend.js"
export * as Backends from "./Backends.js"
export * as Cli from "./Cli.js"
export * as Config from "./Config.js"
export * as Errors from "./Errors.js"
export * as Events from "./Events.js"
export * as Gateway from "./Gateway.js"
export * as JsonRpc from "./JsonRpc.js"
export * as Llm from "./Llm.js"
export * as Logging from "./Logging.js"
export * as Mcp from "./Mcp.js"
export * as Orchestrator from "./Orchestrator.js"
export * as Peer from "./Peer.js"
export * as Secrets from "./Secrets.js"
export * as Server from "./Server.js"
export * as Session from "./Session.js"
export * as Http from "./transport/Http.js"
export * as Stdio from "./transport/Stdio.js"
export * as ToolCatalog from "./ToolCatalog.js"
export { rank } from "./ToolCatalog.js"
