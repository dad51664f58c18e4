/**
 * ToolCatalog: the gateway's view of its backends' tools, as pure synchronous functions over their
 * tool lists: `Naming` (exposed names and the catalog), `Exposure` (filters, overrides, namespaces, profiles), `Functions` (the model's function
 * definitions for both routing modes), `Rank` (which tools to offer first). This module is their
 * public interface.
 */
export * from "./Naming.js"
export {
  admits,
  filtersAnything,
  matchesGlob,
  namespaced,
  ownToolName,
  profileAdmits,
  profileServes,
  promptAdmitted,
  resourceAdmitted,
  toolAdmitted
} from "./Exposure.js"
export * from "./Functions.js"
export * from "./Rank.js"
export { matchingTask, rankTask } from "./TaskRank.js"
export * as Apps from "./Apps.js"
export type { BackendTools } from "../backend/Backends.js"
