/**
 * Every failure a client may see, as the library's `Errors`: the closed union `GatewayError` and its
 * members, the wire's and the backends' (protocol/Errors) and the orchestrator's, kept beside it
 * (orchestration/Errors); `toRpcError` is their wire form, `codeOf` its code.
 */
export * from "./protocol/Errors.js"
export * from "./orchestration/Errors.js"
