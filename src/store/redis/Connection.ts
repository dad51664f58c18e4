/**
 * The team's store as the Redis driver's parts share it (see store/redis/Driver): one connection to
 * Redis (or Valkey) on the official client (`@redis/client`: no dependencies of its own, reconnects
 * by itself), the heartbeat that keeps this gateway's keys alive, and what went wrong last.
 *
 * The store never stops a request: a command waits at most `STORE_TIMEOUT_MS`, the client queues
 * nothing while disconnected (a command fails at once), and a failure is `StoreUnavailable` to the
 * driver's caller and "degraded" to /readyz until the store answers again.
 */
import { createClient } from "@redis/client"
import { Context, Effect, Layer, Schedule } from "effect"
import type { State } from "../../config/Config.js"
import * as Secrets from "../../observability/Secrets.js"
import { messageOf } from "../../json/Json.js"
import { DEFAULT_LEASE_MS, STORE_TIMEOUT_MS } from "../Contract.js"
import { StoreUnavailable } from "../Driver.js"
import { REPLICA_ID } from "../Replica.js"

/** Every key of the gateway's, under one prefix. */
export const PREFIX = "mcp-agentify:"
/** How long a gateway's start waits for the store before it serves without it. */
const CONNECT_WAIT_MS = 2_000

/** A client that queues nothing while disconnected (a command then fails at once) and reconnects with backoff. */
const clientOf = (url: string) =>
  createClient({
    url,
    disableOfflineQueue: true,
    socket: { connectTimeout: 2_000, reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 5_000) }
  })

export type Client = ReturnType<typeof clientOf>
/** What a heartbeat writes, in one round trip. */
export type Beat = ReturnType<Client["multi"]>

/** The store's address as shown (no password). */
const shown = (url: string): string => {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}`
  } catch {
    return "the store"
  }
}

/** A wait that keeps no process alive. */
export const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref())

export interface RedisConnectionService {
  readonly client: Client
  readonly replicaId: string
  readonly leaseMs: number
  /** The store's address as shown. */
  readonly where: string
  /** A command, within the store's time; `StoreUnavailable` when it failed or took too long. */
  readonly run: <A>(command: () => Promise<A>) => Effect.Effect<A, StoreUnavailable>
  /** What went wrong last, until the store answers again. */
  readonly failing: () => string | undefined
  /** Where this gateway listens, once its listener said (nothing is written for it before). */
  readonly address: () => string | undefined
  /** Says where this gateway listens (the first time only), and beats at once. */
  readonly listeningAt: (address: string) => Effect.Effect<void>
  /** Adds what `write` puts in each heartbeat (a service's own keys, kept alive with the gateway). */
  readonly onBeat: (write: (beat: Beat) => void) => void
}

export class RedisConnection extends Context.Service<RedisConnection, RedisConnectionService>()("mcp-agentify/RedisConnection") {
  /** Connected (waiting a moment at most) for the layer's life; heartbeating every third of the lease. */
  static readonly layer = (settings: State, replicaId: string = REPLICA_ID): Layer.Layer<RedisConnection> =>
    Layer.effect(
      RedisConnection,
      Effect.gen(function* () {
        const leaseMs = settings.leaseMs ?? DEFAULT_LEASE_MS
        const where = shown(settings.url)
        let failing: string | undefined
        let address = settings.address
        const writers: Array<(beat: Beat) => void> = []
        const client = clientOf(settings.url)
        client.on("error", (error: unknown) => {
          failing = Secrets.scrub(messageOf(error)).slice(0, 200) || "unreachable"
        })
        // Connecting (and reconnecting, with backoff) goes on by itself; the start waits for it a
        // moment only, so that a store that is down delays nothing much.
        const connected = client.connect().then(
          () => true,
          () => false
        )
        yield* Effect.promise(() => Promise.race([connected, pause(CONNECT_WAIT_MS)]))

        const run = <A>(command: () => Promise<A>): Effect.Effect<A, StoreUnavailable> =>
          Effect.tryPromise({ try: command, catch: (error) => error }).pipe(
            Effect.timeoutOrElse({
              duration: STORE_TIMEOUT_MS,
              orElse: () => Effect.fail(new Error(`no answer within ${STORE_TIMEOUT_MS} ms`))
            }),
            Effect.tap(() =>
              Effect.sync(() => {
                failing = undefined
              })
            ),
            Effect.catch((error) => {
              failing = Secrets.scrub(messageOf(error)).slice(0, 200)
              return Effect.fail(new StoreUnavailable({ why: failing }))
            })
          )

        const beat = Effect.suspend(() => {
          if (address === undefined) return Effect.void
          const multi = client
            .multi()
            .set(`${PREFIX}replica:${replicaId}`, address, { expiration: { type: "PX", value: leaseMs } })
          for (const write of writers) write(multi)
          return Effect.ignore(run(() => multi.execAsPipeline()))
        })
        // Said when it starts failing and when it answers again, not at every failed heartbeat.
        let wasFailing = false
        const sayWhatChanged = Effect.suspend(() => {
          if ((failing !== undefined) === wasFailing) return Effect.void
          wasFailing = failing !== undefined
          return failing === undefined
            ? Effect.logInfo(`shared state: ${where} answers again`)
            : Effect.logWarning(`shared state: ${where} is failing (${failing}); this gateway's own sessions go on`)
        })
        yield* Effect.forkScoped(
          Effect.andThen(beat, sayWhatChanged).pipe(Effect.repeat(Schedule.spaced(Math.max(50, Math.floor(leaseMs / 3)))))
        )
        yield* Effect.addFinalizer(() =>
          Effect.promise(async () => {
            // Stopping cleanly: this gateway is gone at once, not after the lease (and a heartbeat
            // still running writes nothing more).
            address = undefined
            await Promise.race([client.del(`${PREFIX}replica:${replicaId}`), pause(STORE_TIMEOUT_MS)]).catch(() => {})
            client.destroy()
          })
        )
        return {
          client,
          replicaId,
          leaseMs,
          where,
          run,
          failing: () => failing,
          address: () => address,
          listeningAt: (at) =>
            Effect.suspend(() => {
              address ??= at
              return beat
            }),
          onBeat: (write) => {
            writers.push(write)
          }
        }
      })
    )
}
