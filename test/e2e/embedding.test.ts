/**
 * docs/embedding.md shows the examples word for word; this runs them: the orchestrator in an app,
 * the gateway mounted on an app's own HTTP router (reached by the SDK's client), and the stdio
 * transport as a Layer over streams the app gives.
 */
import * as HttpServer from "effect/http/HttpServer"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Context, Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import { PassThrough } from "node:stream"
import { main } from "../../examples/embedding.js"
import { App } from "../../examples/http-app.js"
import { Backends, Config, Llm, Transport } from "../../src/index.js"
import { firstText } from "../support/mcpFixture.js"

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8")

describe("embedding the gateway in an Effect app", () => {
  it("docs/embedding.md shows exactly examples/embedding.ts and examples/http-app.ts", () => {
    const page = read("docs/embedding.md")
    for (const file of ["examples/embedding.ts", "examples/http-app.ts"]) {
      expect(page).toContain("```ts\n" + read(file).trim() + "\n```")
    }
  })

  it.live(
    "the gateway mounted on the app's router: the app's route answers, and an SDK client lists and calls tools at /agentify/mcp",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(App(0))
          const address = Context.get(context, HttpServer.HttpServer).address
          const port = address._tag === "UnixPathAddress" ? 0 : address.port
          const hello = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/hello`).then((r) => r.text()))
          expect(hello).toBe("hello from the app")
          const healthz = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/agentify/healthz`).then((r) => r.status))
          expect(healthz).toBe(200)
          const client = new Client({ name: "embedding-test", version: "1" })
          yield* Effect.acquireRelease(
            Effect.promise(() =>
              client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/agentify/mcp`)))
            ),
            () => Effect.promise(() => client.close())
          )
          const { tools } = yield* Effect.promise(() => client.listTools())
          expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["agentify_orchestrate", "filesystem__read_text_file"]))
          const read = yield* Effect.promise(() =>
            client.callTool({ name: "filesystem__read_text_file", arguments: { path: "package.json" } })
          )
          expect(JSON.parse(firstText(read)).name).toBe("mcp-agentify")
          const orchestrated = yield* Effect.promise(() =>
            client.callTool({ name: "agentify_orchestrate", arguments: { query: "show me package.json" } })
          )
          expect(JSON.parse(firstText(orchestrated)).name).toBe("mcp-agentify")
        })
      )
  )

  it.live("Transport.layerStdio serves a client on the app's streams, and the backends stop when its input ends", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stdin = new PassThrough()
        const stdout = new PassThrough()
        const replies: Array<{ id?: unknown; result?: { tools?: Array<{ name: string }> } }> = []
        let buffered = ""
        stdout.on("data", (chunk: Buffer) => {
          buffered += chunk.toString("utf8")
          for (let at = buffered.indexOf("\n"); at >= 0; at = buffered.indexOf("\n")) {
            replies.push(JSON.parse(buffered.slice(0, at)))
            buffered = buffered.slice(at + 1)
          }
        })
        const reply = (id: number) =>
          Effect.callback<(typeof replies)[number]>((resume) => {
            const poll = () => {
              const found = replies.find((r) => r.id === id)
              if (found === undefined) return void stdout.once("data", () => setImmediate(poll))
              resume(Effect.succeed(found))
            }
            poll()
          })
        const layer = Transport.layerStdio({ stdin, stdout }).pipe(
          Layer.provide([
            Config.GatewayConfig.layerFromOptions({
              backends: [{ id: "filesystem", command: process.execPath, args: [Config.serverFilesystemEntry(), process.cwd()] }]
            }),
            Llm.LlmClient.layerScripted([])
          ])
        )
        const context = yield* Layer.build(layer)
        const backends = Context.get(context, Backends.Backends)
        const send = (message: unknown) => stdin.write(`${JSON.stringify(message)}\n`)
        send({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "app", version: "1" } }
        })
        yield* reply(1)
        send({ jsonrpc: "2.0", method: "notifications/initialized" })
        send({ jsonrpc: "2.0", id: 2, method: "tools/list" })
        const listed = yield* reply(2)
        expect(listed.result?.tools?.map((t) => t.name)).toContain("filesystem__list_directory")
        expect(backends.backend("filesystem")).toBeDefined()
        stdin.end()
        // The client's end stops its backends, as the CLI's stdin EOF does.
        yield* Effect.callback<void>((resume) => {
          const check = () => (backends.backend("filesystem") === undefined ? resume(Effect.void) : void setTimeout(check, 10))
          check()
        })
      })
    )
  )

  it.live("the example runs: the orchestrator reads package.json through server-filesystem", () =>
    Effect.gen(function* () {
      const result = yield* main
      expect(JSON.parse(firstText(result)).name).toBe("mcp-agentify")
    })
  )
})
