/**
 * What `check` and the debug UI show of a ready backend's lists: how many resources or prompts it
 * offers, asked of it through the backends service.
 */
import * as Json from "../data/Json.js"
import { Effect } from "effect"

/** The little of the backends service a count needs (kept structural: Backends re-exports this). */
interface Lists {
  readonly backend: (backendId: string) => { readonly serverCapabilities: Readonly<Record<string, unknown>> } | undefined
  readonly executeOnBackend: (backendId: string, method: string, params: unknown) => Effect.Effect<unknown, unknown>
}

/**
 * How many items a list method (`resources/list`, `prompts/list`) gives on a ready backend, as
 * `check` and the debug UI show it: "-" when it does not offer `capability`, "error" when listing
 * fails, "?" for an answer without the list.
 */
export const countListed = (
  backends: Lists,
  backendId: string,
  capability: string,
  method: string,
  field: string
): Effect.Effect<string> =>
  Effect.suspend(() => {
    const backend = backends.backend(backendId)
    if (backend === undefined || backend.serverCapabilities[capability] === undefined) return Effect.succeed("-")
    return backends.executeOnBackend(backendId, method, {}).pipe(
      Effect.map((result) => {
        const items = Json.field(result, field)
        return Array.isArray(items) ? String(items.length) : "?"
      }),
      Effect.orElseSucceed(() => "error")
    )
  })
