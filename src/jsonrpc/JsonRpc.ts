/**
 * JSON-RPC 2.0 messages and framing, for both sides of the gateway: message classification,
 * encoding, and byte framing (newline-delimited JSON and `Content-Length` headers, detected from
 * the first bytes). The client side's dispatch is `Peer`; the backend side (`Backend`) reads its
 * process's stdout with the same `FrameDecoder` and classifies with the same `classify`.
 *
 * Written by hand rather than with Effect's RPC serialization (`effect/rpc`, `ndJsonRpc`), which
 * drops the good lines of a chunk with one malformed line (no -32700), reads a message with neither
 * method nor result as a success, and puts Effect's cause in an error's `data`. A bad frame never
 * stops the frames after it.
 * This module is the public interface over `Message` and `FrameDecoder`.
 */
export * from "./Message.js"
export * from "./FrameDecoder.js"
