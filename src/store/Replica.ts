/**
 * This gateway among the others of a team: an id of its own (random per process, so a restarted
 * gateway holds nothing of before), which the ids it gives (sessions, tasks) carry after the
 * configured `sessionIdPrefix` when the team shares state: a request naming one is handed to the
 * gateway that gave it.
 */
import { randomBytes } from "node:crypto"

export const REPLICA_ID = randomBytes(6).toString("hex")

/** What the ids this gateway gives start with: `sessionIdPrefix`, then its id when state is shared. */
export const idPrefixOf = (config: { readonly sessionIdPrefix: string; readonly state?: unknown }): string =>
  config.state === undefined ? config.sessionIdPrefix : `${config.sessionIdPrefix}${REPLICA_ID}.`

/** The gateway of the team that gave `id` (a task's), when another did. */
export const givenElsewhere = (
  config: { readonly sessionIdPrefix: string; readonly state?: unknown },
  id: unknown
): string | undefined => {
  if (config.state === undefined || typeof id !== "string" || !id.startsWith(config.sessionIdPrefix)) return undefined
  const replica = id.slice(config.sessionIdPrefix.length).split(".")[0]
  return replica !== undefined && /^[0-9a-f]{12}$/.test(replica) && replica !== REPLICA_ID ? replica : undefined
}
