/**
 * Files of the gateway's own state this gateway wrote or removed (OAuth tokens, pinned tool
 * definitions, tool vectors), told to whoever keeps them alike across a team's gateways (see
 * store/Mirror). A service, one per gateway (or one-off command), not a process-wide binding: two
 * gateways embedded in one process hear only their own writes.
 *
 * Writers call `wrote` from synchronous and promise code, once the file is in place. A listener is
 * told at once, in the writer's call: a mirror's queue has the write before the writer returns, so
 * a one-off command that waits for its mirror to settle waits for what it wrote (a `PubSub` would
 * hand it over a fiber later, after the command may have asked).
 *
 * Without the layer (an app that embeds the backends alone, a command without a store) the
 * default tells no one.
 */
import { Context, Effect, Layer, type Scope } from "effect"

/** Which files: a token entry (see auth/Store), a pins file (see backend/Pins), tool vectors (see catalog/semantic/Embeddings), a backend's remembered lists (see backend/Known). */
export type Kind = "tokens" | "pins" | "embeddings" | "known"

/** Said by the module that wrote (or removed) a file. */
export type Told = (kind: Kind, name: string) => void

/** Tells no one. */
export const nobody: Told = () => {}

export interface WrittenFilesService {
  readonly wrote: Told
  /** Hears every write and removal while the scope is open. */
  readonly listen: (listener: Told) => Effect.Effect<void, never, Scope.Scope>
}

/** A fresh set of listeners: what the layer gives (and a test). */
export const make = (): WrittenFilesService => {
  const listeners = new Set<Told>()
  return {
    wrote: (kind, name) => {
      for (const listener of listeners) listener(kind, name)
    },
    listen: (listener) =>
      Effect.acquireRelease(
        Effect.sync(() => listeners.add(listener)),
        () => Effect.sync(() => listeners.delete(listener))
      ).pipe(Effect.asVoid)
  }
}

const unheard: WrittenFilesService = { wrote: nobody, listen: () => Effect.void }

export class WrittenFiles extends Context.Reference<WrittenFilesService>("mcp-agentify/WrittenFiles", {
  defaultValue: () => unheard
}) {
  /** This gateway's: what it writes is heard by its mirrors (a reference: no layer requires it, so its type names none). */
  static readonly layer: Layer.Layer<never> = Layer.sync(WrittenFiles, make)
}
