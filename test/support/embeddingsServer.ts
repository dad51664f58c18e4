/**
 * A local embeddings endpoint (OpenAI's `/v1/embeddings` shape) on 127.0.0.1, for tests: its
 * vectors count the words of a few concepts, so texts about one concept are alike whatever words
 * they use ("rain" and "forecast", "euros" and "currency"). It records every input it embedded and
 * can be told to fail or to hang.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"

const CONCEPTS: ReadonlyArray<ReadonlyArray<string>> = [
  ["weather", "rain", "forecast", "storm", "storms", "sunny", "umbrella", "temperature"],
  ["money", "currency", "currencies", "dollars", "euros", "exchange", "rates", "price"],
  ["write", "save", "disk", "overwrite", "store", "keep"],
  ["file", "files", "document"],
  ["calendar", "meeting", "event", "events", "schedule", "appointment"]
]

const vectorOf = (text: string): Array<number> => {
  const words = text.toLowerCase().split(/[^a-z]+/)
  return [...CONCEPTS.map((concept) => words.filter((w) => concept.includes(w)).length), 0.01]
}

export interface EmbeddingsServer {
  readonly baseUrl: string
  /** Every text embedded so far, in order. */
  readonly inputs: ReadonlyArray<string>
  /** The requests' Authorization headers. */
  readonly authorizations: ReadonlyArray<string | undefined>
  readonly setMode: (mode: "ok" | "fail" | "hang") => void
  readonly close: () => Promise<void>
}

export const startEmbeddingsServer = async (): Promise<EmbeddingsServer> => {
  const inputs: Array<string> = []
  const authorizations: Array<string | undefined> = []
  let mode: "ok" | "fail" | "hang" = "ok"
  const server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (c: Buffer) => (body += c.toString("utf8")))
    req.on("end", () => {
      authorizations.push(req.headers.authorization)
      if (mode === "hang") return
      if (mode === "fail" || req.url !== "/v1/embeddings") {
        res.writeHead(500, { "content-type": "application/json" })
        return res.end(JSON.stringify({ error: { message: "down" } }))
      }
      const { input } = JSON.parse(body) as { input: Array<string> }
      inputs.push(...input)
      res.writeHead(200, { "content-type": "application/json" })
      res.end(
        JSON.stringify({
          object: "list",
          data: input.map((text, index) => ({ object: "embedding", index, embedding: vectorOf(text) }))
        })
      )
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    inputs,
    authorizations,
    setMode: (m) => (mode = m),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
