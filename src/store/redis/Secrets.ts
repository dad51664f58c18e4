/** Secrets the team shares, under `secret:<name>`: the first gateway to ask makes one, every other reads it. */
import { randomBytes } from "node:crypto"
import { Effect, Layer } from "effect"
import { SharedSecrets } from "../SharedSecrets.js"
import { PREFIX, RedisConnection } from "./Connection.js"

export const layer: Layer.Layer<SharedSecrets, never, RedisConnection> = Layer.effect(
  SharedSecrets,
  Effect.map(RedisConnection, ({ client, run }) => ({
    secret: (name) =>
      Effect.map(
        run(async () => {
          const secret = `${PREFIX}secret:${name}`
          await client.set(secret, randomBytes(32).toString("base64"), { condition: "NX" })
          return client.get(secret)
        }),
        (value) => (typeof value === "string" ? Buffer.from(value, "base64") : undefined)
      )
  }))
)
