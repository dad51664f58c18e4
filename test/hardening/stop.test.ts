/**
 * Stopping is bounded and clean whatever is open: a debug page's WebSocket (open, or opened and
 * closed), a call in flight over HTTP. The gateway's forced exit comes 8 s after a signal; each
 * case must end well before it, with exit 0, its backends stopped by the gateway (logged), and
 * every request in flight answered.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { once } from "node:events"
import WebSocket from "ws"
import { BIN, cleanEnv, startGateway, tempDir } from "../support/stdioClient.js"
import { fixtureBackend } from "../support/mcpFixture.js"
import { call, openSession, startHttpGateway } from "../support/httpClient.js"
import { sleep, until } from "../support/process.js"

/** Well below the 8 s forced exit, well above a clean stop (40-100 ms) on a loaded machine. */
const BOUND_MS = 4_000

const debugPortOf = (stderr: () => string) =>
  until("the debug UI to listen", () => /debug UI at http:\/\/127\.0\.0\.1:(\d+)\//.exec(stderr())?.[1])

const openSocket = async (url: string) => {
  const socket = new WebSocket(url)
  socket.on("error", () => {})
  await new Promise((resolve) => socket.once("open", resolve))
  return socket
}

describe("stopping with the debug page open", () => {
  for (const page of ["opened and closed", "still open"] as const) {
    it(`stdio: end of input with a page WebSocket ${page} exits 0 at once`, async () => {
      const client = startGateway({ args: ["--debug-port", "0"] })
      try {
        await client.initialize({ backends: [fixtureBackend("fx")] })
        const port = await debugPortOf(() => client.stderr())
        const socket = await openSocket(`ws://127.0.0.1:${port}/ws/logs`)
        await client.callTool("fx__echo", { x: 1 })
        if (page === "opened and closed") {
          socket.close()
          await new Promise((resolve) => socket.once("close", resolve))
        }
        const started = Date.now()
        const exit = await client.close(BOUND_MS)
        expect(exit).toEqual({ code: 0, signal: null })
        expect(Date.now() - started).toBeLessThan(BOUND_MS)
        expect(client.stderr()).toMatch(/"msg":"backend stopped","backend":"fx"/)
      } finally {
        if (client.running) client.child.kill("SIGKILL")
      }
    }, 30_000)
  }

  it("--http: SIGTERM with a page WebSocket open exits 0 at once, the backends stopped by the gateway", async () => {
    const gateway = await startHttpGateway({ args: ["--debug-port", "0"], config: { backends: [fixtureBackend("fx")] } })
    try {
      const port = await debugPortOf(gateway.stderr)
      const socket = await openSocket(`ws://127.0.0.1:${port}/ws/mcptrace`)
      const closed = new Promise((resolve) => socket.once("close", resolve))
      const started = Date.now()
      const exit = await gateway.close()
      expect(exit).toEqual({ code: 0, signal: null })
      expect(Date.now() - started).toBeLessThan(BOUND_MS)
      expect(gateway.stderr()).toMatch(/"msg":"backend stopped","backend":"fx"/)
      await closed
    } finally {
      gateway.child.kill("SIGKILL")
    }
  }, 30_000)
})

describe("stopping with a call in flight over HTTP", () => {
  it("SIGTERM: the call gets an error reply (cancelled at the backend), the backend is stopped, exit 0 within the bound", async () => {
    const gateway = await startHttpGateway({ config: { backends: [fixtureBackend("fx")] } })
    try {
      const mcp = `${gateway.base}/mcp`
      const { sessionId } = await openSession(mcp)
      const inFlight = call(mcp, sessionId, "long", "tools/call", { name: "fx__slow", arguments: { ms: 30_000 } })
      // Time for the call to reach the backend (it is in flight either way).
      await sleep(500)
      const started = Date.now()
      const exited = gateway.close()
      const reply = await inFlight
      expect(reply.status).toBe(200)
      expect(reply.messages.at(-1)).toMatchObject({ id: "long", error: { code: -32800 } })
      const exit = await exited
      expect(exit).toEqual({ code: 0, signal: null })
      expect(Date.now() - started).toBeLessThan(BOUND_MS)
      expect(gateway.stderr()).toMatch(/"msg":"backend stopped","backend":"fx"/)
    } finally {
      gateway.child.kill("SIGKILL")
    }
  }, 30_000)
})

describe("a signal while the gateway is still loading", () => {
  // A load hook that makes every large module slow to load (a slow disk, a busy machine) and says
  // when it starts delaying one: the signal is sent then, while the gateway's code is loading.
  // In-thread hooks (`registerHooks`): what they write reaches stderr as they run, where hooks on
  // a thread of their own (`register`) are heard only once loading is done on Node 24 and later.
  const hook = `import { registerHooks } from "node:module"
  registerHooks({
    load(url, context, next) {
      const result = next(url, context)
      const size = result.source?.length ?? 0
      if (size > 100000 && url.includes("/dist/")) {
        process.stderr.write("slow-load " + url + "\\n")
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 400)
      }
      return result
    }
  })`

  it("SIGTERM or SIGINT as soon as the program runs exits 0 every time (the launcher handles it before loading the rest)", async () => {
    const outcomes: Array<string> = []
    for (let i = 0; i < 10; i++) {
      const child = spawn(process.execPath, ["--import", `data:text/javascript,${encodeURIComponent(hook)}`, BIN], {
        cwd: tempDir(),
        env: cleanEnv(),
        stdio: ["pipe", "pipe", "pipe"]
      })
      let stderr = ""
      child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
      const exited = once(child, "exit")
      await until("a module to load slowly", () => stderr.includes("slow-load") || undefined)
      child.kill(i % 2 === 0 ? "SIGTERM" : "SIGINT")
      const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null]
      outcomes.push(`${code}/${signal}`)
    }
    expect(outcomes).toEqual(Array.from({ length: 10 }, () => "0/null"))
  }, 60_000)

  // A resolve hook that sends the signal itself, from inside the process, the moment the launcher
  // asks for the first of Node's modules beyond `node:module` (which every chunk's banner imports):
  // the handlers must be in by then, whatever the machine's speed. An ES module's static imports
  // are all resolved before any of them runs, so a launcher that imports anything statically
  // beside the handlers' module dies here by the signal.
  const registerSelfSignal = `import { registerHooks } from "node:module"
  let sent = false
  registerHooks({
    resolve(specifier, context, next) {
      if (!sent && specifier.startsWith("node:") && specifier !== "node:module") {
        sent = true
        process.kill(process.pid, process.env.AGENTIFY_TEST_SIGNAL)
      }
      return next(specifier, context)
    }
  })`

  it.each(["SIGTERM", "SIGINT"] as const)(
    "%s while the launcher imports its first module beyond the handlers' exits 0 (handlers installed first)",
    async (signal) => {
      const child = spawn(process.execPath, ["--import", `data:text/javascript,${encodeURIComponent(registerSelfSignal)}`, BIN], {
        cwd: tempDir(),
        env: cleanEnv({ AGENTIFY_TEST_SIGNAL: signal }),
        stdio: ["pipe", "pipe", "pipe"]
      })
      let stderr = ""
      child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
      const [code, exitSignal] = (await once(child, "exit")) as [number | null, NodeJS.Signals | null]
      expect({ code, signal: exitSignal }).toEqual({ code: 0, signal: null })
      expect(stderr).toContain(`${signal} received`)
    },
    30_000
  )
})
