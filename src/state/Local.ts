/**
 * Shared state in this process: one gateway holds every session it knows, and none of another's.
 * The default, with nothing to install.
 */
import { Effect, Queue } from "effect"
import type { Announcement, SharedStateService } from "./Contract.js"

export const make = (replicaId: string): SharedStateService => ({
  kind: "local",
  replicaId,
  listeningAt: () => Effect.void,
  claim: () => Effect.void,
  release: () => Effect.void,
  ownerOf: () => Effect.succeed("none"),
  ownerKnown: () => undefined,
  addressOf: () => Effect.succeed("none"),
  sharedSecret: () => Effect.succeed(undefined),
  takeQuota: () => Effect.succeed(undefined),
  saveTask: () => Effect.void,
  taskRecord: () => Effect.succeed("none"),
  files: () => Effect.succeed(undefined),
  file: () => Effect.succeed("none"),
  putFile: () => Effect.succeed(false),
  // Nobody else announces anything: a queue nothing is offered to, shut down with its scope.
  announcements: Effect.acquireRelease(Queue.unbounded<Announcement>(), Queue.shutdown),
  turn: () => Effect.succeed(true),
  health: Effect.succeed({ ok: true, detail: "in this process" })
})
