/** Turns in the team's store: `turn:<name>` = the gateway that has it, for its ttl (set only if absent). */
import { Effect, Layer } from "effect"
import { Turns } from "../Turns.js"
import { PREFIX, RedisConnection } from "./Connection.js"

export const layer: Layer.Layer<Turns, never, RedisConnection> = Layer.effect(
  Turns,
  Effect.map(RedisConnection, ({ client, run, replicaId }) => ({
    take: (turn, ttlMs) =>
      Effect.map(
        run(() => client.set(`${PREFIX}turn:${turn}`, replicaId, { condition: "NX", expiration: { type: "PX", value: ttlMs } })),
        (answer) => answer === undefined || answer === "OK"
      )
  }))
)
