/**
 * A backend's lists read whole (`readAll`: every page, bounded), and what `check` and the debug UI
 * show of a ready backend's lists: how many resources or prompts it offers, and which descriptions
 * hide characters: the backends service asks (see Backends' `countListed`).
 */
import * as Invisible from "../text/Invisible.js"
import * as Json from "../json/Json.js"
import { Effect } from "effect"
import type { BackendError } from "../protocol/Errors.js"
import type * as Known from "./Known.js"

/** Pages read per list before the rest is left out (a backend must not make a listing endless). */
const MAX_PAGES = 50

/** The most items one backend's list may hold; the rest is left out (a backend must not exhaust memory). */
export const MAX_ITEMS = 10_000

/** Every page of a list method, its items under `key` (objects only), at most MAX_ITEMS of them. */
export const readAll = <R>(
  request: (backendId: string, method: string, params: unknown) => Effect.Effect<unknown, BackendError, R>,
  backendId: string,
  method: string,
  key: string
): Effect.Effect<ReadonlyArray<Readonly<Record<string, unknown>>>, BackendError, R> =>
  Effect.gen(function* () {
    const items: Array<Readonly<Record<string, unknown>>> = []
    let cursor: string | undefined
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = yield* request(backendId, method, cursor === undefined ? {} : { cursor })
      const got = Json.field(result, key)
      if (Array.isArray(got)) for (const item of got) if (Json.isObject(item)) items.push(item)
      cursor = Json.stringField(result, "nextCursor")
      if (items.length >= MAX_ITEMS) {
        yield* Effect.logWarning(`backend ${backendId} lists more than ${MAX_ITEMS} items (${method}); the rest is left out`)
        items.length = MAX_ITEMS
        break
      }
      if (cursor === undefined) break
    }
    return items
  })

/** What a count needs of the backend layer: a ready backend's facts, and a request on it (internal: see Requester). */
export interface Lists {
  readonly backend: (backendId: string) => { readonly serverCapabilities: Readonly<Record<string, unknown>> } | undefined
  readonly request: (backendId: string, method: string, params: unknown) => Effect.Effect<unknown, unknown>
  /** What is remembered of a backend not started (see Known), where the caller knows. */
  readonly known?: ((backendId: string) => { readonly lists?: Known.Lists | undefined } | undefined) | undefined
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
    return backends.request(backendId, method, {}).pipe(
      Effect.map((result) => {
        const items = Json.field(result, field)
        return Array.isArray(items) ? String(items.length) : "?"
      }),
      Effect.orElseSucceed(() => "error")
    )
  })

/** A tool or prompt of a backend whose description hides characters (see text/Invisible). */
export interface Hidden {
  readonly backendId: string
  readonly what: "tool" | "prompt"
  readonly name: string
  /** What is hidden, e.g. "3 tag, 1 bidi". */
  readonly found: string
}

const describeFound = (text: string | undefined, schema: unknown): string | undefined => {
  const parts = Invisible.found(text ?? "").map(({ kind, count }) => `${count} ${kind}`)
  if (Invisible.schemaHides(schema)) parts.push("in inputSchema")
  return parts.length === 0 ? undefined : parts.join(", ")
}

/**
 * The tools (as listed) and prompts (asked for, where it offers them; as remembered, where it waits
 * for its first use) of a backend whose descriptions hide characters a reader would not see:
 * `check` and the debug UI name them.
 */
export const hiddenIn = (
  backends: Lists,
  backendId: string,
  tools: ReadonlyArray<{ readonly name: string; readonly description?: string | undefined; readonly inputSchema?: unknown }>
): Effect.Effect<ReadonlyArray<Hidden>> =>
  Effect.suspend(() => {
    const out: Array<Hidden> = []
    for (const tool of tools) {
      const found = describeFound(tool.description, tool.inputSchema)
      if (found !== undefined) out.push({ backendId, what: "tool", name: tool.name, found })
    }
    const prompted = (prompts: unknown) => {
      for (const prompt of Array.isArray(prompts) ? prompts : []) {
        const name = Json.stringField(prompt, "name")
        const found = describeFound(Json.stringField(prompt, "description"), Json.field(prompt, "arguments"))
        if (name !== undefined && found !== undefined) out.push({ backendId, what: "prompt", name, found })
      }
      return out
    }
    const backend = backends.backend(backendId)
    // Not started (waiting for its first use): the prompts it listed when it last ran.
    if (backend === undefined) return Effect.succeed(prompted(backends.known?.(backendId)?.lists?.prompts))
    if (backend.serverCapabilities.prompts === undefined) return Effect.succeed(out)
    return backends.request(backendId, "prompts/list", {}).pipe(
      Effect.map((result) => prompted(Json.field(result, "prompts"))),
      Effect.orElseSucceed(() => out)
    )
  })
