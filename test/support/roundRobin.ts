/**
 * A load balancer with no stickiness at all: each HTTP request goes to the next of the upstreams
 * in turn, whatever session it names, streamed both ways (as nginx's round-robin upstream with
 * buffering off). Counts what each upstream was sent.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface RoundRobin {
  readonly url: string
  readonly sent: Array<number>
  /** Upstreams taken out (a dead replica a health check removed): skipped from now on. */
  readonly remove: (index: number) => void
  readonly close: () => Promise<void>
}

export const startRoundRobin = async (upstreams: ReadonlyArray<string>): Promise<RoundRobin> => {
  const sent = upstreams.map(() => 0)
  const removed = new Set<number>()
  let next = 0
  const agent = new http.Agent({ keepAlive: true })
  const server = http.createServer((request, response) => {
    let index = next++ % upstreams.length
    while (removed.has(index)) index = next++ % upstreams.length
    sent[index]!++
    const target = new URL(request.url ?? "/", upstreams[index])
    const headers = { ...request.headers }
    delete headers.connection
    const outgoing = http.request(target, { method: request.method, headers, agent }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(response)
    })
    outgoing.on("error", () => {
      if (!response.headersSent) response.writeHead(502)
      response.end()
    })
    response.on("close", () => outgoing.destroy())
    request.pipe(outgoing)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    sent,
    remove: (index) => removed.add(index),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
        agent.destroy()
      })
  }
}
