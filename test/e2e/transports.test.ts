/**
 * One suite, run in process over both transports (as Effect's own RpcServer tests run one suite
 * over every protocol): the gateway's public Layers (`Transport.layerStdio` on streams of the
 * test's, `Transport.layerHttp` on a real HTTP server on 127.0.0.1), the SDK's client on the
 * other side, real server-filesystem and server-memory behind, the scripted model for
 * orchestration. What a client sees must not depend on what carries its frames.
 */
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js"
import type { Transport as SdkTransport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { Context, Effect, Layer, type Scope } from "effect"
import { readFileSync } from "node:fs"
import { createServer } from "node:http"
import { join } from "node:path"
import { PassThrough } from "node:stream"
import { Backends, Config, Llm, Transport } from "../../src/index.js"
import { firstText } from "../support/mcpFixture.js"
import { ROOT, tempDir } from "../support/stdioClient.js"

const MEMORY = join(ROOT, "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js")

/** The SDK's client side of a byte stream: the gateway's stdin and stdout as pipes in this process. */
class PipeTransport implements SdkTransport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void
  private readonly buffer = new ReadBuffer()
  constructor(
    private readonly toGateway: PassThrough,
    private readonly fromGateway: PassThrough
  ) {}
  start = async () => {
    this.fromGateway.on("data", (chunk: Buffer) => {
      this.buffer.append(chunk)
      for (let message = this.buffer.readMessage(); message !== null; message = this.buffer.readMessage()) {
        this.onmessage?.(message)
      }
    })
    this.fromGateway.on("end", () => this.onclose?.())
  }
  send = async (message: JSONRPCMessage) => void this.toGateway.write(serializeMessage(message))
  close = async () => {
    this.toGateway.end()
  }
}

const gatewayOptions = (dir: string) => ({
  backends: [
    { id: "fs", command: process.execPath, args: [Config.serverFilesystemEntry(), ROOT] },
    { id: "mem", command: process.execPath, args: [MEMORY], env: { MEMORY_FILE_PATH: join(dir, "memory.jsonl") } }
  ]
})

const model = Llm.LlmClient.layerScripted([
  { match: "package.json", reply: { tool: "fs__read_text_file", arguments: { path: join(ROOT, "package.json") } } }
])

type Open = (dir: string) => Effect.Effect<{ client: Client; backends: Backends.BackendsService }, unknown, Scope.Scope>

const connected = (client: Client, transport: SdkTransport) =>
  Effect.acquireRelease(
    Effect.promise(() => client.connect(transport)),
    () => Effect.promise(() => client.close())
  )

/** The gateway as `Transport.layerStdio` on two pipes, and the SDK's client on their other ends. */
const overStdio: Open = (dir) =>
  Effect.gen(function* () {
    const stdin = new PassThrough()
    const stdout = new PassThrough()
    const context = yield* Layer.build(
      Transport.layerStdio({ stdin, stdout }).pipe(
        Layer.provide([Config.GatewayConfig.layerFromOptions(gatewayOptions(dir)), model])
      )
    )
    const client = new Client({ name: "transports-e2e", version: "1" })
    yield* connected(client, new PipeTransport(stdin, stdout))
    const backends = Context.get(context, Backends.Backends)
    // `initialize` is answered while the backends start: their processes are read once they run.
    yield* until(() => backends.backend("fs") !== undefined && backends.backend("mem") !== undefined)
    return { client, backends }
  })

/** The gateway as `Transport.layerHttp` on a real HTTP server on a free port, and the SDK's client at /mcp. */
const overHttp = (dir: string) =>
  Effect.gen(function* () {
    const served = HttpRouter.serve(
      Transport.layerHttp().pipe(Layer.provide([Config.GatewayConfig.layerFromOptions(gatewayOptions(dir)), model])),
      { disableLogger: true, disableListenLog: true }
    ).pipe(Layer.provideMerge(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })))
    const context = yield* Layer.build(served)
    const address = Context.get(context, HttpServer.HttpServer).address
    const port = address._tag === "UnixPathAddress" ? 0 : address.port
    const connect = () =>
      Effect.gen(function* () {
        const client = new Client({ name: "transports-e2e", version: "1" })
        yield* connected(client, new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)))
        return client
      })
    const client = yield* connect()
    const backends = Context.get(context, Backends.Backends)
    yield* until(() => backends.backend("fs") !== undefined && backends.backend("mem") !== undefined)
    return { client, backends, connect }
  })

const promise = <A>(thunk: () => Promise<A>) => Effect.promise(thunk)
const failureOf = <A>(thunk: () => Promise<A>) =>
  Effect.promise(() =>
    thunk().then(
      () => undefined,
      (error: { code?: number; message: string }) => error
    )
  )

for (const [name, open] of [
  ["stdio", overStdio],
  ["Streamable HTTP", overHttp]
] as const) {
  describe(`one suite over ${name}, in process`, () => {
    it.live("lists every backend's tools beside the gateway's own, and calls them under their names", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { client } = yield* open(tempDir())
          const names = (yield* promise(() => client.listTools())).tools.map((t) => t.name)
          expect(names).toEqual(
            expect.arrayContaining(["agentify_orchestrate", "fs__read_text_file", "mem__create_entities", "mem__read_graph"])
          )
          const read = yield* promise(() =>
            client.callTool({ name: "fs__read_text_file", arguments: { path: join(ROOT, "package.json") } })
          )
          expect(JSON.parse(firstText(read)).name).toBe("mcp-agentify")
          yield* promise(() =>
            client.callTool({
              name: "mem__create_entities",
              arguments: { entities: [{ name: "gateway", entityType: "program", observations: [`over ${name}`] }] }
            })
          )
          const graph = yield* promise(() => client.callTool({ name: "mem__read_graph", arguments: {} }))
          expect(firstText(graph)).toContain(`over ${name}`)
        })
      )
    )

    it.live("answers a natural-language request through the model, the tool it picked and its backend", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { client } = yield* open(tempDir())
          const result = yield* promise(() =>
            client.callTool({ name: "agentify_orchestrate", arguments: { query: "show me package.json" } })
          )
          expect(result.isError).not.toBe(true)
          expect(JSON.parse(firstText(result)).name).toBe(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).name)
        })
      )
    )

    it.live("refuses a tool nobody offers with a clear error, and serves the next request", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { client } = yield* open(tempDir())
          const refused = yield* failureOf(() => client.callTool({ name: "fs__no_such_tool", arguments: {} }))
          expect(refused?.code).toBe(-32602)
          expect(refused?.message).toContain("Unknown tool: fs__no_such_tool")
          expect(yield* promise(() => client.ping())).toEqual({})
          expect((yield* promise(() => client.listTools())).tools.map((t) => t.name)).toContain("fs__read_text_file")
        })
      )
    )
  })
}

describe("what each transport does at the end of its client", () => {
  it.live("stdio: the client's end stops the backends (the connection owns them)", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { client, backends } = yield* overStdio(tempDir())
        expect(backends.backend("fs")).toBeDefined()
        yield* promise(() => client.close())
        yield* until(() => backends.backend("fs") === undefined && backends.backend("mem") === undefined)
      })
    )
  )

  it.live("Streamable HTTP: a client's end closes its session only; the backends serve the next client", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { client, backends, connect } = yield* overHttp(tempDir())
        const running = [backends.backend("fs"), backends.backend("mem")]
        expect(running.every((b) => b !== undefined)).toBe(true)
        yield* promise(() => client.close())
        // The next client is served by the same processes, none stopped or restarted meanwhile.
        const next = yield* connect()
        const read = yield* promise(() =>
          next.callTool({ name: "fs__read_text_file", arguments: { path: join(ROOT, "package.json") } })
        )
        expect(JSON.parse(firstText(read)).name).toBe("mcp-agentify")
        expect(backends.backend("fs")).toBe(running[0])
        expect(backends.backend("mem")).toBe(running[1])
      })
    )
  )
})

/** Waits for a condition the gateway makes true on its own (a backend stopping): polled, bounded by the test's timeout. */
const until = (condition: () => boolean) =>
  Effect.callback<void>((resume) => {
    let timer: NodeJS.Timeout | undefined
    const check = () => (condition() ? resume(Effect.void) : void (timer = setTimeout(check, 10)))
    check()
    return Effect.sync(() => clearTimeout(timer))
  })
