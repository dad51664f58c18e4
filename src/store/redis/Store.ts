/**
 * Every service of the team's store on one Redis connection (see store/Store). Loaded only when
 * the configuration names a store: a gateway alone never loads the client.
 */
import { Layer } from "effect"
import type { State } from "../../config/Config.js"
import type { SessionDirectory } from "../SessionDirectory.js"
import type { SharedSecrets } from "../SharedSecrets.js"
import type { TaskRecords } from "../TaskRecords.js"
import type { TeamFiles } from "../TeamFiles.js"
import type { TeamQuotas } from "../TeamQuotas.js"
import type { Turns as TurnsTag } from "../Turns.js"
import { RedisConnection } from "./Connection.js"
import * as Files from "./Files.js"
import * as Quotas from "./Quotas.js"
import * as Secrets from "./Secrets.js"
import * as Sessions from "./Sessions.js"
import * as Tasks from "./Tasks.js"
import * as Turns from "./Turns.js"

/** Every service of the store (see store/Store). */
export const layer = (
  settings: State,
  replicaId?: string
): Layer.Layer<SessionDirectory | TeamQuotas | TaskRecords | TeamFiles | SharedSecrets | TurnsTag> =>
  Layer.mergeAll(Sessions.layer, Quotas.layer, Tasks.layer, Files.layer, Secrets.layer, Turns.layer).pipe(
    Layer.provide(RedisConnection.layer(settings, replicaId))
  )
