/**
 * Shared state in Redis (or Valkey), on the official client (`@redis/client`: no dependencies of
 * its own, reconnects by itself). Keys, under `mcp-agentify:`:
 * - `replica:<id>` = its address, for `leaseMs`: the gateway is alive;
 * - `session:<id>` = `<replica id> <address>`, for `leaseMs`: who holds the session, where;
 * - `secret:<name>`: a secret the gateways share (the key of 2026-07-28 request states);
 * - `quota:<key>:minute` and `quota:<key>:inflight`: `limits` counted team-wide (see RedisQuotas);
 * - `task:<id>`: a finished 2026-07-28 task's record, for its ttl (it outlives its gateway);
 * - `turn:<name>`: which gateway does something alone (renews a token), for a while;
 * - `files:<kind>`: the shared files (see state/Mirror), a hash of name to `{text, at}`, each
 *   change published on the channel `announced` for the other gateways (heard on a connection of
 *   its own; after it reconnects, every file is taken as changed: it may have missed some).
 * Both are written again by the holder's heartbeat every third of `leaseMs` (and so put back by
 * the first heartbeat after the store restarted empty); a gateway that stops heartbeating (killed,
 * cut off) loses them when they expire, and its sessions' next requests get 404.
 *
 * The store never stops a request: a command waits at most `STORE_TIMEOUT_MS`, the client queues
 * nothing while disconnected (a command fails at once), and a failure is "not known" to the caller
 * and "degraded" to /readyz until the store answers again.
 */
import { createClient } from "@redis/client"
import { Effect, PubSub, Schedule, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import type { State } from "../config/Config.js"
import { messageOf } from "../data/Json.js"
import * as Secrets from "../observability/Secrets.js"
import {
  type Announcement,
  DEFAULT_LEASE_MS,
  type FileKind,
  type SharedFile,
  type Owner,
  type QuotaTaken,
  type SharedStateService,
  STORE_TIMEOUT_MS,
  type TaskRecord
} from "./Contract.js"
import * as Quotas from "./RedisQuotas.js"
import * as Tasks from "./RedisTasks.js"

const PREFIX = "mcp-agentify:"
/** How long a gateway's start waits for the store before it serves without it. */
const CONNECT_WAIT_MS = 2_000
/** Holders of other gateways' sessions remembered at most (then forgotten all at once). */
const MAX_KNOWN_OWNERS = 10_000

/** The store's address as shown (no password). */
const shown = (url: string): string => {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}`
  } catch {
    return "the store"
  }
}

const KINDS: ReadonlyArray<FileKind> = ["tokens", "pins", "embeddings"]
const ANNOUNCED = `${PREFIX}announced`

const parseFile = (value: string): SharedFile | undefined => {
  try {
    const file = JSON.parse(value) as Partial<SharedFile>
    return typeof file.text === "string" && typeof file.at === "number" ? { text: file.text, at: file.at } : undefined
  } catch {
    return undefined
  }
}

const parseAnnouncement = (message: string): { readonly from: string; readonly announcement: Announcement } | undefined => {
  try {
    const said = JSON.parse(message) as { from?: unknown; kind?: unknown; name?: unknown }
    if (typeof said.from !== "string" || typeof said.name !== "string") return undefined
    if (!KINDS.includes(said.kind as FileKind)) return undefined
    return { from: said.from, announcement: { kind: said.kind as FileKind, name: said.name } }
  } catch {
    return undefined
  }
}

/** A wait that keeps no process alive. */
const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref())

export const make = (settings: State, replicaId: string): Effect.Effect<SharedStateService, never, Scope.Scope> =>
  Effect.gen(function* () {
    const leaseMs = settings.leaseMs ?? DEFAULT_LEASE_MS
    const where = shown(settings.url)
    /** What went wrong last, until the store answers again. */
    let failing: string | undefined
    let address = settings.address
    const held = new Set<string>()
    /** This gateway's calls in flight per quota key: written whole at each heartbeat, so a lost release heals. */
    const inflight = new Map<string, number>()
    /** Other gateways' sessions, as the store named their holders a moment ago. */
    const owners = new Map<string, { readonly owner: Owner; readonly until: number }>()
    const ownerKeptMs = Math.min(1_000, Math.floor(leaseMs / 3))
    const client = createClient({
      url: settings.url,
      // A command while disconnected fails at once rather than waiting for a reconnect.
      disableOfflineQueue: true,
      socket: { connectTimeout: 2_000, reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 5_000) }
    })
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

    /** A command, within the store's time; undefined when it failed or took too long. */
    const run = <A>(command: () => Promise<A>): Effect.Effect<A | undefined> =>
      Effect.tryPromise({ try: command, catch: (error) => error }).pipe(
        Effect.timeoutFail({ duration: STORE_TIMEOUT_MS, onTimeout: () => new Error(`no answer within ${STORE_TIMEOUT_MS} ms`) }),
        Effect.map((answer) => {
          failing = undefined
          return answer as A | undefined
        }),
        Effect.catchAll((error) =>
          Effect.sync(() => {
            failing = Secrets.scrub(messageOf(error)).slice(0, 200)
            return undefined
          })
        )
      )

    const valueOf = () => `${replicaId} ${address}`
    const beat = Effect.suspend(() => {
      if (address === undefined) return Effect.void
      const multi = client.multi().set(`${PREFIX}replica:${replicaId}`, address, { expiration: { type: "PX", value: leaseMs } })
      for (const id of held) multi.set(`${PREFIX}session:${id}`, valueOf(), { expiration: { type: "PX", value: leaseMs } })
      for (const [key, count] of inflight) {
        if (count > 0) multi.hSet(`${PREFIX}quota:${key}:inflight`, replicaId, count)
        else {
          multi.hDel(`${PREFIX}quota:${key}:inflight`, replicaId)
          inflight.delete(key)
        }
      }
      return Effect.asVoid(run(() => multi.execAsPipeline()))
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
    // What the other gateways announce, heard on a connection of its own (a subscribed one does nothing else).
    const announcements = yield* PubSub.unbounded<Announcement>()
    const listener = client.duplicate()
    listener.on("error", () => {
      // Said by the main connection's failure; this one reconnects by itself.
    })
    let heard = false
    listener.on("ready", () => {
      // Reconnected: what was announced meanwhile is lost, so every file may have changed.
      if (heard) for (const kind of KINDS) Effect.runSync(PubSub.publish(announcements, { kind, name: "*" }))
      heard = true
    })
    void listener
      .connect()
      .then(() =>
        listener.subscribe(ANNOUNCED, (message) => {
          const said = parseAnnouncement(message)
          if (said !== undefined && said.from !== replicaId) Effect.runSync(PubSub.publish(announcements, said.announcement))
        })
      )
      .catch(() => {})
    yield* Effect.addFinalizer(() => Effect.sync(() => listener.destroy()))
    yield* Effect.forkScoped(
      Effect.zipRight(beat, sayWhatChanged).pipe(Effect.repeat(Schedule.spaced(Math.max(50, Math.floor(leaseMs / 3)))))
    )
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        // Stopping cleanly: the sessions go at once (their clients start afresh), not after the lease.
        const keys = [`${PREFIX}replica:${replicaId}`, ...[...held].map((id) => `${PREFIX}session:${id}`)]
        await Promise.race([client.del(keys), pause(STORE_TIMEOUT_MS)]).catch(() => {})
        client.destroy()
      })
    )

    // Known a moment ago: a session's holder changes only when it dies (then its address fails,
    // 502, until the lease runs out either way).
    const ownerKnown = (sessionId: string): Owner | undefined => {
      const known = owners.get(sessionId)
      return known !== undefined && known.until > Date.now() ? known.owner : undefined
    }

    return {
      kind: "shared",
      ownerKnown,
      replicaId,
      listeningAt: (at) =>
        Effect.suspend(() => {
          address ??= at
          return beat
        }),
      claim: (sessionId) =>
        Effect.suspend(() => {
          held.add(sessionId)
          if (address === undefined) return Effect.void
          return Effect.asVoid(
            run(() => client.set(`${PREFIX}session:${sessionId}`, valueOf(), { expiration: { type: "PX", value: leaseMs } }))
          )
        }),
      release: (sessionId) =>
        Effect.suspend(() => {
          held.delete(sessionId)
          return Effect.asVoid(run(() => client.del(`${PREFIX}session:${sessionId}`)))
        }),
      ownerOf: (sessionId) =>
        Effect.suspend(() => {
          const known = ownerKnown(sessionId)
          if (known !== undefined) return Effect.succeed(known)
          return Effect.map(
            run(() => client.get(`${PREFIX}session:${sessionId}`)),
            (value): Owner => {
              if (value === undefined) return "unknown"
              if (typeof value !== "string") return "none"
              const [replica, at] = value.split(" ")
              if (replica === replicaId || at === undefined || at === "") return "none"
              if (owners.size >= MAX_KNOWN_OWNERS) owners.clear()
              owners.set(sessionId, { owner: { at }, until: Date.now() + ownerKeptMs })
              return { at }
            }
          )
        }),
      addressOf: (other) =>
        Effect.map(
          run(() => client.get(`${PREFIX}replica:${other}`)),
          (at): Owner => (at === undefined ? "unknown" : typeof at === "string" && at !== "" ? { at } : "none")
        ),
      sharedSecret: (name) =>
        Effect.map(
          run(async () => {
            const secret = `${PREFIX}secret:${name}`
            // The first gateway to ask makes it; every other reads that one.
            await client.set(secret, randomBytes(32).toString("base64"), { condition: "NX" })
            return client.get(secret)
          }),
          (value) => (typeof value === "string" ? Buffer.from(value, "base64") : undefined)
        ),
      takeQuota: (keys) =>
        Effect.map(
          run(() => client.eval(Quotas.TAKE, { arguments: Quotas.takeArguments(keys, replicaId, PREFIX, Date.now()) })),
          (answer): QuotaTaken | undefined => {
            if (!Array.isArray(answer)) return undefined
            const [index, perMinute, retryAfterMs] = answer.map(Number) as [number, number, number]
            if (index >= 0) return { _tag: "Refused", index, perMinute: perMinute === 1, retryAfterMs: Math.max(1, retryAfterMs) }
            const counted = keys.filter((k) => k.concurrent !== undefined).map((k) => k.key)
            for (const key of counted) inflight.set(key, (inflight.get(key) ?? 0) + 1)
            return {
              _tag: "Taken",
              release:
                counted.length === 0
                  ? Effect.void
                  : Effect.suspend(() => {
                      for (const key of counted) inflight.set(key, (inflight.get(key) ?? 1) - 1)
                      return Effect.asVoid(run(() => client.eval(Quotas.RELEASE, { arguments: [PREFIX, replicaId, ...counted] })))
                    })
            }
          }
        ),
      saveTask: (taskId, record, ttlMs) =>
        Effect.asVoid(
          run(() => client.eval(Tasks.SAVE, { arguments: Tasks.saveArguments(PREFIX, taskId, record, ttlMs, Date.now()) }))
        ),
      taskRecord: (taskId) =>
        Effect.map(
          run(() => client.get(`${PREFIX}task:${taskId}`)),
          (value): TaskRecord | "none" | "unknown" => {
            if (value === undefined) return "unknown"
            if (typeof value !== "string") return "none"
            try {
              const record = JSON.parse(value) as TaskRecord
              return typeof record.owner === "string" && typeof record.reply === "object" ? record : "none"
            } catch {
              return "none"
            }
          }
        ),
      files: (kind) =>
        Effect.map(
          run(() => client.hGetAll(`${PREFIX}files:${kind}`)),
          (all) => {
            if (all === undefined) return undefined
            const files = new Map<string, SharedFile>()
            for (const [name, value] of Object.entries(all as Record<string, string>)) {
              const file = parseFile(value)
              if (file !== undefined) files.set(name, file)
            }
            return files
          }
        ),
      file: (kind, name) =>
        Effect.map(
          run(() => client.hGet(`${PREFIX}files:${kind}`, name)),
          (value) => (value === undefined ? "unknown" : typeof value === "string" ? (parseFile(value) ?? "none") : "none")
        ),
      putFile: (kind, name, file) =>
        Effect.map(
          run(() => {
            const said = JSON.stringify({ from: replicaId, kind, name })
            // A removal is kept as one (empty, when): a gateway that was away does not bring the file back.
            const kept: SharedFile = file ?? { text: "", at: Date.now() }
            return client.multi().hSet(`${PREFIX}files:${kind}`, name, JSON.stringify(kept)).publish(ANNOUNCED, said).exec()
          }),
          (answer) => answer !== undefined
        ),
      announcements: PubSub.subscribe(announcements),
      turn: (turn, ttlMs) =>
        Effect.map(
          run(() =>
            client.set(`${PREFIX}turn:${turn}`, replicaId, { condition: "NX", expiration: { type: "PX", value: ttlMs } })
          ),
          (answer) => answer === undefined || answer === "OK"
        ),
      health: Effect.sync(() =>
        failing === undefined && client.isReady
          ? { ok: true, detail: `${where} (${held.size} sessions held here)` }
          : { ok: false, detail: `${where} is failing: ${failing ?? "not connected"}; sessions held elsewhere cannot be reached` }
      )
    } satisfies SharedStateService
  })
