/**
 * A request handed to its session's holder goes to the holder's own path, whatever its request
 * line names: with the real thing (a `redis-server`, two gateways sharing it, a raw socket for
 * the request line a browser never sends). A request line in absolute form (`POST
 * http://other/mcp HTTP/1.1`) or in the `//host` form names an origin; a gateway that resolved it
 * against the holder's address would send the client's request (its token included) there. A
 * listener on that other address stands by and must hear nothing.
 *
 * Each session's first request at the gateway that does not hold it is handed on by the app (the
 * store asked), the next by the listener (the holder known a moment ago): both roads are taken.
 */
import * as http from "node:http"
import * as net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HttpGateway, openSession, startHttpGateway } from "../../support/httpClient.js"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { REDIS_SERVER, type Redis, startRedis } from "../../support/redis.js"

const SKIP = REDIS_SERVER === undefined && process.env.CI !== "true"
if (SKIP)
  process.stderr.write("replicas-handoff.test.ts: no redis-server (apt-get install redis-server), so these tests are skipped\n")

let redis: Redis
let holder: HttpGateway
let other: HttpGateway
/** The address a misdirected hand-off would reach, and every request it heard. */
let decoy: { server: http.Server; port: number; heard: Array<string> }

beforeAll(async () => {
  if (SKIP) return
  redis = await startRedis()
  const config = { backends: [fixtureBackend("fx")], state: { url: redis.url } }
  ;[holder, other] = await Promise.all([startHttpGateway({ config }), startHttpGateway({ config })])
  const heard: Array<string> = []
  const server = http.createServer((request, response) => {
    heard.push(`${request.method} ${request.url} ${JSON.stringify(request.headers)}`)
    response.end("{}")
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  decoy = { server, port: (server.address() as net.AddressInfo).port, heard }
}, 60_000)

afterAll(async () => {
  await Promise.all([holder?.close(), other?.close()])
  await new Promise((resolve) => decoy?.server.close(resolve))
  await redis?.close()
})

/** One POST on a socket of its own, its request line as given; the status and the body as they came. */
const rawPost = (port: number, target: string, sessionId: string, body: unknown) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const payload = JSON.stringify(body)
    const socket = net.connect(port, "127.0.0.1")
    let received = ""
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => (received += chunk))
    socket.once("error", reject)
    socket.once("close", () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0)
      resolve({ status, body: received.slice(received.indexOf("\r\n\r\n") + 4) })
    })
    socket.write(
      [
        `POST ${target} HTTP/1.1`,
        `Host: 127.0.0.1:${port}`,
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        `Mcp-Session-Id: ${sessionId}`,
        "Mcp-Protocol-Version: 2025-11-25",
        "Authorization: Bearer the-clients-own-token",
        `Content-Length: ${Buffer.byteLength(payload)}`,
        "Connection: close",
        "",
        payload
      ].join("\r\n")
    )
  })

describe.skipIf(SKIP)("a request handed to its session's holder", () => {
  it.each([
    ["an absolute-form request line", () => `http://127.0.0.1:${decoy.port}/mcp`],
    ["a //host request line", () => `//127.0.0.1:${decoy.port}/mcp`]
  ])("reaches the holder's own /mcp, never the origin %s names", async (_, target) => {
    const { sessionId } = await openSession(`${holder.base}/mcp`)
    // The first by the app (the store asked), the second at the listener (the holder known).
    for (const id of [1, 2]) {
      const reply = await rawPost(other.port, target(), sessionId, { jsonrpc: "2.0", id, method: "tools/list" })
      expect(reply.status, reply.body).toBe(200)
      // The fixture's tools: the holder served the session's request at its /mcp.
      expect(reply.body).toContain(`"id":${id}`)
      expect(reply.body).toContain("fx__echo")
    }
    expect(decoy.heard).toEqual([])
  })
})
