/**
 * The store's driver in this process (see store/Driver): every replica's driver built on one
 * `MemoryServer` shares what it holds, as drivers on one Redis do, so that two gateways embedded
 * in one process, or a test, share state with nothing installed. It never fails (nothing is out of
 * reach), and its heartbeat, times to live and announcements are real.
 */
import { Effect, Layer, Option, PubSub, Schedule } from "effect"
import { randomBytes } from "node:crypto"
import type { Announcement } from "../Contract.js"
import { DEFAULT_LEASE_MS } from "../Contract.js"
import { StoreDriver, type StoreDriverService } from "../Driver.js"
import { MemoryServer } from "./Server.js"

export { MemoryServer } from "./Server.js"

export interface Options {
  /** The store the replica shares (default: one of its own). */
  readonly server?: MemoryServer | undefined
  /** The replica this driver speaks for (default: a new random one: each driver of a team must have its own). */
  readonly replicaId?: string | undefined
  readonly leaseMs?: number | undefined
}

const make = (options: Options) =>
  Effect.gen(function* () {
    const server = options.server ?? new MemoryServer()
    const replicaId = options.replicaId ?? randomBytes(6).toString("hex")
    const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS
    let address: string | undefined
    const kept = new Set<string>()
    const holder = () => ({ replicaId, address })

    const heard = yield* PubSub.unbounded<Announcement>()
    const unlisten = server.listen((from, announcement) => {
      if (from !== replicaId) Effect.runSync(PubSub.publish(heard, announcement))
    })

    const beat = Effect.sync(() => {
      if (address === undefined) return
      server.present(replicaId, address, leaseMs)
      for (const lease of kept) server.claim(lease, holder(), leaseMs)
    })
    // Every third of the lease, from the moment this replica says where it listens (see listeningAt).
    yield* Effect.forkScoped(Effect.repeat(beat, Schedule.spaced(Math.max(50, Math.floor(leaseMs / 3)))))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        unlisten()
        // Kept no more (a beat between this and the heartbeat's end claims nothing), and gone at once.
        for (const lease of kept) server.release(lease, replicaId)
        kept.clear()
        address = undefined
        server.absent(replicaId)
      })
    )

    const driver: StoreDriverService = {
      replicaId,
      leaseMs,
      listeningAt: (at) =>
        Effect.suspend(() => {
          address ??= at
          return beat
        }),
      addressOf: (other) => Effect.sync(() => Option.fromNullishOr(server.addressOf(other))),
      health: Effect.succeed({ where: "in this process", failing: undefined }),
      leases: {
        claim: (lease, ttlMs) => Effect.sync(() => server.claim(lease, holder(), ttlMs)),
        renew: (lease, ttlMs) => Effect.sync(() => server.renew(lease, replicaId, ttlMs)),
        release: (lease) =>
          Effect.sync(() => {
            kept.delete(lease)
            server.release(lease, replicaId)
          }),
        holderOf: (lease) => Effect.sync(() => Option.fromNullishOr(server.holderOf(lease))),
        keep: (lease) =>
          Effect.sync(() => {
            kept.add(lease)
            server.claim(lease, holder(), leaseMs)
          })
      },
      counters: {
        take: (counts, windowMs) =>
          Effect.sync(() => {
            const took = server.take(replicaId, counts, windowMs)
            if (took._tag === "Refused") return took
            let released = false
            return {
              _tag: "Taken",
              release: Effect.sync(() => {
                if (released) return
                released = true
                server.releaseAtOnce(replicaId, took.atOnce)
              })
            }
          })
      },
      blobs: {
        list: (kind) => Effect.sync(() => server.filesOf(kind)),
        get: (kind, name) => Effect.sync(() => Option.fromNullishOr(server.file(kind, name))),
        put: (kind, name, file) => Effect.sync(() => server.putFile(replicaId, kind, name, file)),
        remove: (kind, name) => Effect.sync(() => server.putFile(replicaId, kind, name, { text: "", at: server.now() })),
        announcements: PubSub.subscribe(heard)
      },
      values: {
        get: (key) => Effect.sync(() => Option.fromNullishOr(server.get(key))),
        set: (key, value, ttlMs, group) => Effect.sync(() => server.set(key, value, ttlMs, group)),
        setIfAbsent: (key, value, ttlMs) => Effect.sync(() => server.setIfAbsent(key, value, ttlMs))
      }
    }
    return driver
  })

/** A replica's driver on `options.server` (for the layer's life: its leases are released when it ends). */
export const layerLocal = (options: Options = {}): Layer.Layer<StoreDriver> => Layer.effect(StoreDriver, make(options))
