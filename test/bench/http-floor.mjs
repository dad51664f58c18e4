#!/usr/bin/env node
// What an HTTP exchange costs before the gateway does anything: a server that reads a small JSON
// POST and answers 600 bytes of JSON, written on raw node:http and on Effect's Node HTTP
// server (body read from Node's request, no span: as the gateway does), loaded by 64 keep-alive
// clients for 3 s. Prints calls/s and the server's CPU per request (start-up excluded).
// Usage: node test/bench/http-floor.mjs
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Effect, Layer } from "effect"
import * as HttpMiddleware from "effect/http/HttpMiddleware"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { fork } from "node:child_process"
import { Agent, createServer, request } from "node:http"
import { fileURLToPath } from "node:url"

const body = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "x".repeat(512) }] } })

const serve = (mode) => {
  const readBody = (source) =>
    new Promise((resolve) => {
      const chunks = []
      source.on("data", (chunk) => chunks.push(chunk))
      source.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    })
  if (mode === "raw") {
    const server = createServer(async (req, res) => {
      JSON.parse(await readBody(req))
      res.writeHead(200, { "content-type": "application/json" })
      res.end(body)
    })
    server.listen(0, "127.0.0.1", () => process.send({ port: server.address().port }))
    return
  }
  const app = Effect.gen(function* () {
    const req = yield* HttpServerRequest.HttpServerRequest
    JSON.parse(yield* Effect.promise(() => readBody(NodeHttpServerRequest.toIncomingMessage(req))))
    return HttpServerResponse.text(body, { contentType: "application/json" })
  })
  const node = createServer()
  const live = Layer.effectDiscard(Effect.flatMap(Effect.service(HttpServer.HttpServer), (server) => server.serve(app))).pipe(
    Layer.provide(NodeHttpServer.layerServer(() => node, { port: 0, host: "127.0.0.1" })),
    Layer.provide(Layer.succeed(HttpMiddleware.TracerDisabledWhen)(() => true))
  )
  Effect.runFork(Layer.launch(live))
  node.on("listening", () => process.send({ port: node.address().port }))
}

if (process.argv[2] === "--serve") {
  serve(process.argv[3])
  process.on("message", () => {
    const cpu = process.cpuUsage()
    process.send({ cpuMs: (cpu.user + cpu.system) / 1000 })
  })
} else {
  const payload = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "x", arguments: {} } })
  for (const mode of ["raw", "effect", "raw", "effect"]) {
    const child = fork(fileURLToPath(import.meta.url), ["--serve", mode])
    const messages = []
    let wake
    child.on("message", (m) => (wake ? wake(m) : messages.push(m)))
    const next = () =>
      messages.length > 0 ? Promise.resolve(messages.shift()) : new Promise((r) => (wake = (m) => ((wake = undefined), r(m))))
    const { port } = await next()
    const agent = new Agent({ keepAlive: true, maxSockets: 256 })
    const one = () =>
      new Promise((resolve) => {
        const req = request(
          {
            agent,
            port,
            host: "127.0.0.1",
            method: "POST",
            path: "/mcp",
            headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }
          },
          (res) => {
            res.resume()
            res.on("end", resolve)
          }
        )
        req.end(payload)
      })
    const load = async (ms) => {
      let n = 0
      const end = Date.now() + ms
      await Promise.all(
        Array.from({ length: 64 }, async () => {
          while (Date.now() < end) {
            await one()
            n++
          }
        })
      )
      return n
    }
    await load(500) // warm-up
    child.send("cpu")
    const before = (await next()).cpuMs
    const n = await load(3_000)
    child.send("cpu")
    const after = (await next()).cpuMs
    process.stdout.write(
      `${mode.padEnd(6)} ${Math.round(n / 3)} calls/s, ${Math.round(((after - before) * 1000) / n)} µs CPU per request\n`
    )
    agent.destroy()
    child.kill()
  }
}
