/**
 * Files a team's gateways keep alike (sealed OAuth tokens, tool pins, tool vectors, remembered
 * lists: see store/Mirror), each by its name within its kind, with what the others store or remove
 * as they say it: the store's blobs (see store/Driver). `layerLocal`: one gateway alone shares
 * nothing (and no mirror runs, see Store).
 */
import { Context, Effect, Layer, Option, PubSub, type Scope } from "effect"
import type { Announcement, FileKind, SharedFile } from "./Contract.js"
import { StoreDriver, type StoreDriverService } from "./Driver.js"

export interface TeamFilesService {
  /** Every shared file of a kind: undefined when the store cannot say. */
  readonly files: (kind: FileKind) => Effect.Effect<ReadonlyMap<string, SharedFile> | undefined>
  /** One shared file: none when there is none, "unknown" when the store cannot say. */
  readonly file: (kind: FileKind, name: string) => Effect.Effect<SharedFile | "none" | "unknown">
  /** Stores a file (or its removal: `undefined`) and tells the other gateways; false when the store did not take it. */
  readonly put: (kind: FileKind, name: string, file: SharedFile | undefined) => Effect.Effect<boolean>
  /**
   * What the other gateways store or remove from now on, as they say it: subscribed when this
   * returns, for the scope, so nothing said after it is missed.
   */
  readonly announcements: Effect.Effect<PubSub.Subscription<Announcement>, never, Scope.Scope>
}

const team = ({ blobs }: StoreDriverService): TeamFilesService => ({
  files: (kind) => blobs.list(kind).pipe(Effect.orElseSucceed(() => undefined)),
  file: (kind, name) =>
    blobs.get(kind, name).pipe(
      Effect.map(Option.getOrElse(() => "none" as const)),
      Effect.orElseSucceed(() => "unknown" as const)
    ),
  put: (kind, name, file) =>
    (file === undefined ? blobs.remove(kind, name) : blobs.put(kind, name, file)).pipe(
      Effect.as(true),
      Effect.orElseSucceed(() => false)
    ),
  announcements: blobs.announcements
})

export class TeamFiles extends Context.Service<TeamFiles, TeamFilesService>()("mcp-agentify/TeamFiles") {
  static readonly layerLocal: Layer.Layer<TeamFiles> = Layer.succeed(TeamFiles, {
    files: () => Effect.succeed(undefined),
    file: () => Effect.succeed("none"),
    put: () => Effect.succeed(false),
    // Nobody else announces anything: a subscription to a hub nothing is published to, for the scope.
    announcements: Effect.flatMap(PubSub.unbounded<Announcement>(), PubSub.subscribe)
  })
  /** In the team's store, through its driver. */
  static readonly layer: Layer.Layer<TeamFiles, never, StoreDriver> = Layer.effect(TeamFiles, Effect.map(StoreDriver, team))
}
