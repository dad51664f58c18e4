/**
 * Every failure a client may see, as the library's `Errors`: the wire's and the backends' (protocol/Errors)
 * and the orchestrator's, kept beside it (orchestration/Errors).
 */
export * from "./protocol/Errors.js"
export * from "./orchestration/Errors.js"
