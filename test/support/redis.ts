/**
 * A real `redis-server` (Debian's package) on a free port of 127.0.0.1, for the tests of several
 * gateways sharing state: nothing persisted, so a restart comes back empty (the harder case).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { once } from "node:events"
import { freePort } from "../bench/httpClient.js"

export const REDIS_SERVER = spawnSync("redis-server", ["--version"]).status === 0 ? "redis-server" : undefined

export interface Redis {
  readonly url: string
  readonly port: number
  /** Stops it (SIGKILL: as a crash). */
  readonly kill: () => Promise<void>
  /** Starts it again on the same port, empty. */
  readonly restart: () => Promise<void>
  readonly close: () => Promise<void>
}

const launch = async (port: number): Promise<ChildProcess> => {
  const child = spawn(
    REDIS_SERVER!,
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning"],
    { stdio: ["ignore", "pipe", "pipe"] }
  )
  // Ready when it answers.
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    const ping = spawnSync("redis-cli", ["-p", String(port), "ping"], { encoding: "utf8" })
    if (ping.stdout.trim() === "PONG") return child
    if (child.exitCode !== null) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  child.kill("SIGKILL")
  throw new Error(`redis-server did not start on ${port}`)
}

export const startRedis = async (): Promise<Redis> => {
  const port = await freePort()
  let child = await launch(port)
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, "exit")
    child.kill("SIGKILL")
    await exited
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    restart: async () => {
      await kill()
      child = await launch(port)
    },
    close: kill
  }
}
