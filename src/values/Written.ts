/**
 * Files of the gateway's own state this process wrote or removed (OAuth tokens, pinned tool
 * definitions), told to whoever keeps them alike across a team's gateways (see store/Mirror). A
 * process with no one listening (one gateway, a one-off command without a store) tells no one.
 */

/** Which files: a token entry (see auth/Store), a pins file (see backend/Pins), tool vectors (see orchestration/Embeddings). */
export type Kind = "tokens" | "pins" | "embeddings"

type Listener = (kind: Kind, name: string) => void

const listeners = new Set<Listener>()

/** Hears every write and removal from now on; the returned function stops that. */
export const listen = (listener: Listener): (() => void) => {
  listeners.add(listener)
  return () => {
    listeners.delete(listener)
  }
}

/** Said by the module that wrote (or removed) the file, once it is in place. */
export const wrote = (kind: Kind, name: string): void => {
  for (const listener of listeners) listener(kind, name)
}
