/**
 * ToolCatalog: the gateway's view of its backends' tools, as pure synchronous functions over their
 * tool lists: `Naming` (exposed names and the catalog), `Functions` (the model's function
 * definitions for both routing modes), `Rank` (which tools to offer first). This module is their
 * public interface.
 */
export * from "./Naming.js"
export * from "./Functions.js"
export * from "./Rank.js"
export type { BackendTools } from "../backend/Backends.js"
