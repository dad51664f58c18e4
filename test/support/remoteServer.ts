/**
 * The remote fixture server (test/fixtures/remote-server.mjs) as a child process on a loopback
 * port: Streamable HTTP at /mcp, HTTP+SSE at /sse, WebSocket at /ws.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { fileURLToPath } from "node:url"

export const REMOTE_SERVER = fileURLToPath(new URL("../fixtures/remote-server.mjs", import.meta.url))

export interface RemoteServer {
  readonly port: number
  readonly url: (path: "/mcp" | "/sse" | "/ws") => string
  /** Stops it (the port is free afterwards). */
  readonly stop: () => Promise<void>
  /** Starts it again on the same port. */
  readonly restart: () => Promise<void>
}

const launch = async (port: number, token: string | undefined): Promise<{ child: ChildProcess; port: number }> => {
  const child = spawn(process.execPath, [REMOTE_SERVER, "--port", String(port), ...(token ? ["--token", token] : [])], {
    stdio: ["ignore", "pipe", "pipe"]
  })
  child.stderr!.resume()
  const [line] = (await Promise.race([
    once(child.stdout!, "data"),
    once(child, "exit").then(() => {
      throw new Error("the remote fixture server exited before listening")
    })
  ])) as [Buffer]
  return { child, port: JSON.parse(String(line)).port as number }
}

export const startRemoteServer = async (options: { readonly token?: string } = {}): Promise<RemoteServer> => {
  let current = await launch(0, options.token)
  const port = current.port
  const stop = async () => {
    if (current.child.exitCode !== null || current.child.signalCode !== null) return
    const exited = once(current.child, "exit")
    current.child.kill("SIGKILL")
    await exited
  }
  return {
    port,
    url: (path) => `${path === "/ws" ? "ws" : "http"}://127.0.0.1:${port}${path}`,
    stop,
    restart: async () => {
      await stop()
      current = await launch(port, options.token)
    }
  }
}
