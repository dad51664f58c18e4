/**
 * Secrets every gateway of a team shares, made by the first to ask (32 bytes), such as the key that
 * seals 2026-07-28 request states. `layerLocal`: one gateway alone makes its own, once per name.
 */
import { Context, Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"

export interface SharedSecretsService {
  /** The secret named `name`: undefined while the store fails to give it (ask again). */
  readonly secret: (name: string) => Effect.Effect<Buffer | undefined>
}

export class SharedSecrets extends Context.Tag("mcp-agentify/SharedSecrets")<SharedSecrets, SharedSecretsService>() {
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
}
