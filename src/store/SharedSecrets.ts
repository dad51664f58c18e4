/**
 * Secrets every gateway of a team shares, made by the first to ask (32 bytes), such as the key that
 * seals 2026-07-28 request states: `layer` keeps them in the team's store under `secret:<name>`
 * (set only where none is, so every gateway reads the first one made). `layerLocal`: one gateway
 * alone makes its own, once per name.
 */
import { Context, Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { StoreDriver, type StoreDriverService } from "./Driver.js"

export interface SharedSecretsService {
  /** The secret named `name`: undefined while the store fails to give it (ask again). */
  readonly secret: (name: string) => Effect.Effect<Buffer | undefined>
}

const team = ({ values }: StoreDriverService): SharedSecretsService => ({
  secret: (name) =>
    Effect.suspend(() => values.setIfAbsent(`secret:${name}`, randomBytes(32).toString("base64"))).pipe(
      Effect.map(({ value }) => Buffer.from(value, "base64")),
      Effect.orElseSucceed(() => undefined)
    )
})

export class SharedSecrets extends Context.Service<SharedSecrets, SharedSecretsService>()("mcp-agentify/SharedSecrets") {
  static readonly layerLocal: Layer.Layer<SharedSecrets> = Layer.sync(SharedSecrets, () => {
    const made = new Map<string, Buffer>()
    return {
      secret: (name) =>
        Effect.sync(() => {
          let secret = made.get(name)
          if (secret === undefined) made.set(name, (secret = randomBytes(32)))
          return secret
        })
    }
  })
  /** In the team's store, through its driver. */
  static readonly layer: Layer.Layer<SharedSecrets, never, StoreDriver> = Layer.effect(
    SharedSecrets,
    Effect.map(StoreDriver, team)
  )
}
