/**
 * What sharing state costs (`state: {url: "redis://..."}`), with a real redis-server: a request for
 * a session that another gateway holds (handed to it over HTTP) against the same request at its
 * holder, one at a time; and a session's throughput at its own gateway with a store configured
 * against without (calls at once from 8 clients), in alternating rounds.
 */
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { percentile } from "./client.js"
import { freePort, type HttpRpcClient, startHttpServer } from "./httpClient.js"
import { startRedis } from "../support/redis.js"

const round3 = (n: number) => Math.round(n * 1_000) / 1_000

export interface ReplicasResult {
  readonly forwardedP50Ms: number
  readonly localP50Ms: number
  readonly addedP50Ms: number
  readonly forwardedP99Ms: number
  readonly localP99Ms: number
  readonly withStoreCallsPerS: ReadonlyArray<number>
  readonly withoutStoreCallsPerS: ReadonlyArray<number>
  readonly throughputRatio: number
}

export const benchReplicas = async (options: {
  readonly bin: string
  readonly fixture: string
  readonly env: NodeJS.ProcessEnv
  readonly quick: boolean
}): Promise<ReplicasResult> => {
  const work = mkdtempSync(join(tmpdir(), "agentify-replicas-"))
  const redis = await startRedis()
  const backends = [{ id: "fx", type: "stdio", command: process.execPath, args: [options.fixture] }]
  const start = async (name: string, state: boolean) => {
    const port = await freePort()
    const config = join(work, `${name}.json`)
    writeFileSync(config, JSON.stringify({ backends, ...(state ? { state: { url: redis.url } } : {}) }))
    const url = `http://127.0.0.1:${port}/mcp`
    const client = await startHttpServer(
      process.execPath,
      [options.bin, "--http", `127.0.0.1:${port}`, "--config", config, "--log-level", "warn"],
      url,
      { env: options.env, stderrFile: join(work, `${name}.stderr`) }
    )
    return { client, url }
  }
  const holder = await start("holder", true)
  const other = await start("other", true)
  const plain = await start("plain", false)
  const call = { name: "fx__echo", arguments: { text: "x" } }
  try {
    await holder.client.initialize()
    // The same session, addressed at the other gateway: every request is handed to its holder.
    const viaOther = new (holder.client.constructor as typeof HttpRpcClient)(other.url, undefined)
    viaOther.sessionId = holder.client.sessionId
    const runs = options.quick ? 300 : 2_000
    const sample = async (client: HttpRpcClient) => {
      const ms = new Float64Array(runs)
      for (let i = 0; i < runs; i++) {
        const reply = await client.request("tools/call", call)
        if (reply.error !== undefined) throw new Error(`a call failed: ${reply.error.message}`)
        ms[i] = reply.ms
      }
      return ms.sort()
    }
    // Warm both paths, then alternate halves so that a busy moment hits both alike.
    await sample(holder.client)
    await sample(viaOther)
    const local: Array<number> = []
    const forwarded: Array<number> = []
    for (let half = 0; half < 2; half++) {
      local.push(...(await sample(holder.client)))
      forwarded.push(...(await sample(viaOther)))
    }
    const sorted = (xs: Array<number>) => Float64Array.from(xs).sort()
    const l = sorted(local)
    const f = sorted(forwarded)

    // Throughput of a gateway's own sessions: 8 clients, calls back to back, store or none.
    const clientsOf = async (url: string) => {
      const clients: Array<HttpRpcClient> = []
      for (let i = 0; i < 8; i++) {
        const c = new (holder.client.constructor as typeof HttpRpcClient)(url, undefined)
        await c.initialize()
        clients.push(c)
      }
      return clients
    }
    const withStore = await clientsOf(holder.url)
    const withoutStore = await clientsOf(plain.url)
    const roundMs = options.quick ? 500 : 1_500
    const rate = async (clients: ReadonlyArray<HttpRpcClient>) => {
      let done = 0
      const until = performance.now() + roundMs
      await Promise.all(
        clients.map(async (c) => {
          while (performance.now() < until) {
            await c.request("tools/call", call)
            done++
          }
        })
      )
      return Math.round(done / (roundMs / 1_000))
    }
    await rate(withStore)
    await rate(withoutStore)
    const withRates: Array<number> = []
    const withoutRates: Array<number> = []
    for (let round = 0; round < (options.quick ? 2 : 6); round++) {
      withRates.push(await rate(withStore))
      withoutRates.push(await rate(withoutStore))
    }
    const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    return {
      forwardedP50Ms: round3(percentile(f, 50)),
      localP50Ms: round3(percentile(l, 50)),
      addedP50Ms: round3(percentile(f, 50) - percentile(l, 50)),
      forwardedP99Ms: round3(percentile(f, 99)),
      localP99Ms: round3(percentile(l, 99)),
      withStoreCallsPerS: withRates,
      withoutStoreCallsPerS: withoutRates,
      throughputRatio: round3(median(withRates) / median(withoutRates))
    }
  } finally {
    await Promise.all([holder.client.close(), other.client.close(), plain.client.close()])
    await redis.close()
  }
}
