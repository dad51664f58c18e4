/**
 * A local embeddings endpoint (OpenAI's `/v1/embeddings` shape) on 127.0.0.1, for tests: its
 * vectors count the words of a few concepts, so texts about one concept are alike whatever words
 * they use ("rain" and "forecast", "euros" and "currency"). It records every input it embedded and
 * every request it had, and can be told to fail, to hang, or to answer as a hostile endpoint would:
 * a huge body (streamed until the client stops reading), vectors of zeros or of `1e999`, vectors of
 * another length, an index out of range, one index twice (another left out), or a redirect elsewhere or
 * back to itself.
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

/** How the endpoint answers. */
export type Mode =
  | "ok"
  | "fail"
  | "hang"
  /** 300 MB of a vector that never ends, streamed while the client reads. */
  | "huge"
  | "zeros"
  /** `1e999` in each vector: JSON's way to an Infinity. */
  | "infinite"
  /** Vectors of 3 dimensions, not the 6 of "ok". */
  | "dims"
  /** Each answer's index past the inputs. */
  | "index"
  /** The first input's index named twice, the last one's left out (as many vectors as inputs). */
  | "twice"
  /** A 307 from `/v1/embeddings` to `redirectTo` (set with setRedirect). */
  | "redirect"

/** What "huge" offers to send. */
export const HUGE_BYTES = 300 * 1024 * 1024

export interface EmbeddingsServer {
  readonly baseUrl: string
  /** Every text embedded so far, in order. */
  readonly inputs: ReadonlyArray<string>
  /** The requests' Authorization headers (one per request, whatever the mode). */
  readonly authorizations: ReadonlyArray<string | undefined>
  /** Requests had (to any path, in any mode). */
  readonly requests: () => number
  /** Bytes of answers written so far (a "huge" one stops when the client stops reading). */
  readonly bytesWritten: () => number
  readonly setMode: (mode: Mode) => void
  readonly setRedirect: (url: string) => void
  readonly close: () => Promise<void>
}

export const startEmbeddingsServer = async (): Promise<EmbeddingsServer> => {
  const inputs: Array<string> = []
  const authorizations: Array<string | undefined> = []
  let mode: Mode = "ok"
  let redirectTo = ""
  let requests = 0
  let written = 0
  const answer = (res: http.ServerResponse, text: string) => {
    written += Buffer.byteLength(text)
    res.writeHead(200, { "content-type": "application/json" })
    res.end(text)
  }
  /** Writes `HUGE_BYTES` of one vector's numbers, as fast as the client reads, until it stops. */
  const huge = (res: http.ServerResponse) => {
    res.writeHead(200, { "content-type": "application/json" })
    const chunk = Buffer.from("0.123456789,".repeat(8_192))
    let sent = 0
    const more = () => {
      while (sent < HUGE_BYTES && !res.destroyed) {
        sent += chunk.length
        written += chunk.length
        if (!res.write(chunk)) return void res.once("drain", more)
      }
      if (!res.destroyed) res.end("0]}]}")
    }
    res.write('{"object":"list","data":[{"object":"embedding","index":0,"embedding":[')
    more()
  }
  const server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (c: Buffer) => (body += c.toString("utf8")))
    req.on("end", () => {
      requests++
      authorizations.push(req.headers.authorization)
      if (mode === "hang") return
      if (mode === "redirect" && req.url === "/v1/embeddings") {
        res.writeHead(307, { location: redirectTo })
        return res.end()
      }
      if (mode === "fail" || req.url !== "/v1/embeddings") {
        res.writeHead(500, { "content-type": "application/json" })
        return res.end(JSON.stringify({ error: { message: "down" } }))
      }
      if (mode === "huge") return huge(res)
      const { input } = JSON.parse(body) as { input: Array<string> }
      if (mode === "infinite") {
        const items = input.map((_, index) => `{"object":"embedding","index":${index},"embedding":[1e999,0.5,0,0,0,0.01]}`)
        return answer(res, `{"object":"list","data":[${items.join(",")}]}`)
      }
      inputs.push(...input)
      const vector = (text: string) => (mode === "zeros" ? [0, 0, 0, 0, 0, 0] : mode === "dims" ? [1, 0.5, 0.01] : vectorOf(text))
      answer(
        res,
        JSON.stringify({
          object: "list",
          data: input.map((text, index) => ({
            object: "embedding",
            index: mode === "index" ? index + input.length : mode === "twice" && index === input.length - 1 ? 0 : index,
            embedding: vector(text)
          }))
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
    requests: () => requests,
    bytesWritten: () => written,
    setMode: (m) => (mode = m),
    setRedirect: (url) => (redirectTo = url),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
