/**
 * Remote backends: an MCP server reached over the network, by Streamable HTTP (both protocol eras,
 * falling back to HTTP+SSE for "http"), the HTTP+SSE transport of 2024-11-05, or WebSocket
 * (subprotocol `mcp`). Each is a channel (see ../Channel) in a module of its own; the backend's
 * connection, its requests, timeouts, cancellation and the supervisor's reconnects with backoff
 * are the same as for a process.
 *
 * Written on Node's `fetch` and `ws` rather than the MCP SDK's client transports: those do not
 * speak the 2026-07-28 era, Node's own WebSocket sends no headers of ours, and the SDK would bring express
 * and a dozen packages into the install.
 */
import type { Receiver } from "../Channel.js"
import { type Options, RemoteChannel, type Runner } from "./RemoteChannel.js"
import { SseChannel } from "./Sse.js"
import { StreamableHttpChannel } from "./StreamableHttp.js"
import { WebSocketChannel } from "./WebSocket.js"

export { CONNECT_TIMEOUT_MS, type Options, RemoteChannel, runner, type Runner, type Transport } from "./RemoteChannel.js"

/** The channel for `options.transport`, its work run by `runner` (see RemoteChannel); `connect` opens it. */
export const open = (options: Options, receiver: Receiver, runner: Runner): RemoteChannel => {
  switch (options.transport) {
    case "sse":
      return new SseChannel(options, receiver, runner)
    case "websocket":
      return new WebSocketChannel(options, receiver, runner)
    case "http":
    case "streamable-http":
      return new StreamableHttpChannel(options, receiver, runner)
  }
}
