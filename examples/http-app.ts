import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Layer } from "effect"
import { createServer } from "node:http"
import { Config, Llm, Transport } from "mcp-agentify"

// The app's own routes.
const AppRoutes = HttpRouter.add("GET", "/hello", HttpServerResponse.text("hello from the app"))

// The gateway on the same router under /agentify: /agentify/mcp, /agentify/servers/<id>/mcp,
// /agentify/healthz... Its backends start with the layer and stop when the app stops.
const GatewayRoutes = Transport.layerHttp({ path: "/agentify" }).pipe(
  Layer.provide([
    Config.GatewayConfig.layerFromOptions({
      backends: [{ id: "filesystem", command: process.execPath, args: [Config.serverFilesystemEntry(), process.cwd()] }]
    }),
    // In production: Llm.LlmClient.layerOpenAI (reads OPENAI_API_KEY).
    Llm.LlmClient.layerScripted([
      { match: "package.json", reply: { tool: "filesystem__read_text_file", arguments: { path: "package.json" } } }
    ])
  ])
)

// One server for both; `Layer.launch(App(8080))` runs it until interrupted. `serve` logs each
// request and "Listening on ..." with the app's logger unless told not to.
export const App = (port: number) =>
  HttpRouter.serve(Layer.mergeAll(AppRoutes, GatewayRoutes), { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port }))
  )
