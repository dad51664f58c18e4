/**
 * MCP over WebSocket (subprotocol `mcp`): one text message per JSON-RPC message, both ways. On
 * `ws`: Node's own WebSocket (the browser's API) cannot send the headers a backend's
 * configuration or sign-in gives (`Authorization`).
 */
import { Effect } from "effect"
import WebSocket from "ws"
import { describeFetchError } from "./Fetch.js"
import { CONNECT_TIMEOUT_MS, type Sent, RemoteChannel } from "./RemoteChannel.js"

export class WebSocketChannel extends RemoteChannel {
  private socket: WebSocket | undefined = undefined

  get connect(): Effect.Effect<void, Error> {
    return Effect.callback<void, Error>((resumeOnce) => {
      let settled = false
      const resume = (outcome: Effect.Effect<void, Error>) => {
        if (settled) return
        settled = true
        resumeOnce(outcome)
      }
      const socket = new WebSocket(this.url, ["mcp"], {
        headers: this.options.headers,
        maxPayload: this.options.maxFrameBytes,
        handshakeTimeout: CONNECT_TIMEOUT_MS,
        followRedirects: false
      })
      this.socket = socket
      let open = false
      socket.on("open", () => {
        open = true
        resume(Effect.void)
      })
      socket.on("unexpected-response", (_request, response) => {
        resume(Effect.fail(new Error(`the WebSocket handshake was refused: HTTP ${response.statusCode}`)))
        socket.terminate()
      })
      socket.on("message", (data, isBinary) => {
        if (!isBinary) this.incoming(data.toString())
      })
      socket.on("error", (error) => {
        if (!open) resume(Effect.fail(new Error(`could not be reached (${describeFetchError(error)})`)))
        else this.note(`WebSocket error: ${describeFetchError(error)}`)
      })
      socket.on("close", (code) => {
        if (!open) resume(Effect.fail(new Error(`the WebSocket closed before it opened (code ${code})`)))
        else if (!this.closed) this.lose(`closed the WebSocket (code ${code})`)
      })
    })
  }

  protected send(_message: Sent, line: string) {
    this.socket?.send(line)
  }

  protected override finish(reason: string | undefined) {
    if (!this.closed) this.socket?.terminate()
    super.finish(reason)
  }
}
