/**
 * `find`: the tool a call names, as the caller may call it. A client's call names an exposed tool
 * (or, from an MCP App, its server's own name); its profile and the backends' filters decide what
 * exists, a tool held back by its pin is refused saying how to trust it, and a tool of a backend
 * that is not ready goes on to be told why by the backend's state. A call an orchestration or a
 * script planned is found again: a tool quarantined or hidden since it was offered is refused. A
 * tool found among what is remembered of a backend waiting for its first use is found again once
 * the call has started it: every later stage judges what the backend lists now.
 * At a backend's own endpoint the name is the backend's, its filters apply. The model's other
 * requests (`routing: "backend"`) name a backend the session's profile serves, and what they name
 * there must pass the backend's filters. It needs nothing of the call and provides the tool it
 * found (`Found`) to every stage after it; it fails with InvalidParams (an unknown, ambiguous,
 * quarantined or hidden tool, or params nested past the gateway's bound: see json/Depth, which no
 * later stage need walk).
 */
import { Effect } from "effect"
import { Backends, type BackendsService } from "../../../backend/Backends.js"
import type { Profile } from "../../../config/Config.js"
import { type Catalog, catalogOf, inProfile } from "../../../catalog/ToolCatalog.js"
import { namespaced, ownToolName, profileAdmits } from "../../../catalog/Exposure.js"
import { namespaceOf } from "../../../config/Config.js"
import * as Apps from "../../../catalog/Apps.js"
import { hiddenBy } from "../../../catalog/BackendFilters.js"
import { profileIn, type Session } from "../../session/Session.js"
import { InvalidParams } from "../../../protocol/Errors.js"
import * as Depth from "../../../json/Depth.js"
import { isRequest, type Target, type ToolCall } from "../Call.js"
import { type Found, type Nothing, row, type Stage } from "../Stage.js"
import * as Pins from "../../../backend/Pins.js"
import type { Page } from "../Trail.js"

export interface Deps {
  readonly backends: BackendsService
  readonly profileOf: (session: Session | undefined) => Profile | undefined
}

/** The call with its target, noted in its trail (the audit line names the tool from there). */
const found = <C extends ToolCall>(call: C, target: Target, trail: Page): C & Found => {
  trail.note({ said: "found", target })
  return { ...call, target }
}

const refuse = (call: ToolCall, trail: Page, message: string): Effect.Effect<never, InvalidParams> => {
  trail.note({ said: message, refused: true })
  // An unknown name's issue says so plainly, as every other -32602 of the gateway names its field.
  const issue = message === `Unknown tool: ${call.name}` ? `name: no tool named '${call.name}'` : `name: ${message}`
  return Effect.fail(new InvalidParams({ message, issues: [issue] }))
}

/**
 * Params nested past the bound (or cut there when they were read) go no further: later stages walk
 * them, and the backend could not be sent them.
 */
const tooDeep = (call: ToolCall, trail: Page): Effect.Effect<never, InvalidParams> | undefined => {
  if (!Depth.exceeds(call.params, Depth.MAX_DEPTH)) return undefined
  const what = Depth.exceeds(call.params.arguments, Depth.MAX_DEPTH - 1) ? "arguments" : "params"
  const issue = `${what}: ${Depth.TOO_DEEP_TEXT} (the gateway's bound on JSON nesting)`
  trail.note({ said: `Invalid ${what} for ${call.name}: ${Depth.TOO_DEEP_TEXT}`, refused: true })
  return Effect.fail(new InvalidParams({ message: `Invalid params: ${issue}`, issues: [issue] }))
}

/** What a backend's filters hide, refused with their own error. */
const refuseHidden = (trail: Page, hidden: InvalidParams): Effect.Effect<never, InvalidParams> => {
  trail.note({ said: hidden.message, refused: true })
  return Effect.fail(hidden)
}

/** What the call's session may see of the catalog: its profile's part. */
const catalog = ({ backends, profileOf }: Deps, call: ToolCall): Catalog =>
  inProfile(catalogOf(backends.toolsSync()), profileOf(call.session))

/**
 * Why a tool is held back, if it is: its definition changed since it was pinned; how to accept
 * it. `name`: the exposed name, or at `atBackend` its own; `shown`: the name the call used.
 */
const quarantined = (backends: BackendsService, name: string, atBackend?: string, shown: string = name): string | undefined => {
  for (const listed of backends.toolsSync()) {
    if (listed.pinMode !== "quarantine") continue
    if (atBackend !== undefined && listed.backendId !== atBackend) continue
    const config = backends.configOf(listed.backendId)
    const held = listed.changed?.find(
      (c) => c.name === name || (atBackend === undefined && config !== undefined && namespaced(config, c.name) === name)
    )
    if (held !== undefined) return Pins.heldBack(listed.backendId, held, shown)
  }
  return undefined
}

/**
 * The tool as its backend lists it once started, when the call found it among the tools
 * remembered of a backend waiting for its first use: every stage after this one decides on the
 * live definition (its schema, its annotations), whatever the pins setting. Held back by its pins
 * now: refused as at any start. Gone: unknown. Not running after the start (it failed, or is still
 * starting past the start-up timeout): the target without an entry, so that every stage takes
 * MCP's defaults (a tool that may destroy and reach out) and `forward` tells the backend's state.
 */
const live = (deps: Deps, call: ToolCall, trail: Page, target: Target): Effect.Effect<Target, InvalidParams> | undefined => {
  const { backends } = deps
  if (target.entry === undefined) return undefined
  const start = backends.startOnUse(target.backendId)
  if (start === undefined) return undefined
  return Effect.flatMap(start, () => {
    trail.note({ said: "its backend started for this call: judged on the tools it lists now" })
    if (backends.backend(target.backendId) === undefined) return Effect.succeed({ backendId: target.backendId, own: target.own })
    const view =
      call.via === "backend-endpoint"
        ? catalogOf(backends.toolsSync())
        : call.via === "script"
          ? Apps.forModel(catalog(deps, call))
          : catalog(deps, call)
    const entry = view.entries.find((e) => e.backendId === target.backendId && e.toolName === target.own)
    if (entry !== undefined) return Effect.succeed({ ...target, entry })
    return refuse(call, trail, quarantined(backends, target.own, target.backendId, call.name) ?? `Unknown tool: ${call.name}`)
  })
}

/**
 * A name the catalog does not list whose backend is not ready (starting, restarting, failed,
 * disabled): the call goes on, for the backend's state to say what is wrong (-32004) rather than
 * "unknown tool". The longest namespace wins, as namespaces may contain "__".
 */
const notReady = ({ backends, profileOf }: Deps, call: ToolCall) =>
  Effect.map(backends.states, (states): Target | undefined => {
    const owner = states
      .flatMap((s) => {
        const config = backends.configOf(s.id)
        const namespace = config === undefined ? s.id : namespaceOf(config)
        // An idle backend's tools are known (listed): a name it does not list is unknown, as for a ready one.
        return s.state !== "ready" && s.state !== "idle" && namespace !== "" && call.name.startsWith(`${namespace}__`)
          ? [{ s, config, namespace }]
          : []
      })
      .sort((a, b) => b.namespace.length - a.namespace.length)[0]
    if (owner === undefined) return undefined
    const own = ownToolName(owner.config, call.name.slice(owner.namespace.length + 2))
    return own !== undefined && profileAdmits(profileOf(call.session), owner.s.id, call.name)
      ? { backendId: owner.s.id, own }
      : undefined
  })

/** A script's call of a tool it was not given: only what a model may call (no app-only tool), by its exposed name. */
const fromScript = (deps: Deps, call: ToolCall, trail: Page): Effect.Effect<Target, InvalidParams> => {
  const entry = Apps.forModel(catalog(deps, call)).byName.get(call.name)
  if (entry !== undefined) return Effect.succeed({ backendId: entry.backendId, own: entry.toolName, entry })
  return refuse(call, trail, quarantined(deps.backends, call.name) ?? `Unknown tool: ${call.name}`)
}

/** A client's call: by its exposed name, else (an MCP App) by its server's own name when one backend has it. */
const fromClient = (deps: Deps, call: ToolCall, trail: Page): Effect.Effect<Target, InvalidParams> => {
  const view = catalog(deps, call)
  const entry = view.byName.get(call.name)
  if (entry !== undefined) return Effect.succeed({ backendId: entry.backendId, own: entry.toolName, entry })
  const own = view.entries.filter((e) => e.toolName === call.name)
  if (own.length === 1) return Effect.succeed({ backendId: own[0]!.backendId, own: own[0]!.toolName, entry: own[0] })
  if (own.length > 1) {
    return refuse(
      call,
      trail,
      `Ambiguous tool: '${call.name}' is the own name of ${own.map((e) => e.name).join(", ")}: call one of those`
    )
  }
  return Effect.flatMap(notReady(deps, call), (target) => {
    if (target !== undefined) return Effect.succeed(target)
    return refuse(call, trail, quarantined(deps.backends, call.name) ?? `Unknown tool: ${call.name}`)
  })
}

/** A planned call (orchestration, script): still there, in the view it was planned from. */
const again = (deps: Deps, call: ToolCall, trail: Page, planned: Target): Effect.Effect<Target, InvalidParams> => {
  const view = call.via === "script" ? Apps.forModel(catalog(deps, call)) : catalog(deps, call)
  const named = view.byName.get(call.name)
  const entry =
    named !== undefined && named.backendId === planned.backendId && named.toolName === planned.own
      ? named
      : view.entries.find((e) => e.backendId === planned.backendId && e.toolName === planned.own)
  if (entry !== undefined) {
    return Effect.succeed({ backendId: entry.backendId, own: entry.toolName, entry })
  }
  return refuse(call, trail, quarantined(deps.backends, call.name) ?? `Unknown tool: ${call.name}`)
}

/** At a backend's own endpoint: its own name, its filters, and its pins as at the aggregate. */
const atEndpoint = ({ backends }: Deps, call: ToolCall, trail: Page, backendId: string): Effect.Effect<Target, InvalidParams> => {
  const hidden = hiddenBy(backends.configOf(backendId), "tools/call", call.params)
  if (hidden !== undefined) return refuseHidden(trail, hidden)
  const held = quarantined(backends, call.name, backendId)
  if (held !== undefined) return refuse(call, trail, held)
  const entry = catalogOf(backends.toolsSync()).entries.find((e) => e.backendId === backendId && e.toolName === call.name)
  return Effect.succeed({ backendId, own: call.name, entry })
}

/** A request other than a tool call, at the backend it names: served to this session, not hidden there. */
const atRequest = ({ backends }: Deps, call: ToolCall, trail: Page): Effect.Effect<Target, InvalidParams> => {
  const target = call.target
  if (target === undefined || (call.session !== undefined && !call.session.serves(target.backendId))) {
    return refuse(call, trail, `Unknown backend: ${call.name}`)
  }
  const hidden = hiddenBy(backends.configOf(target.backendId), call.method ?? "", call.params)
  if (hidden !== undefined) return refuseHidden(trail, hidden)
  return Effect.succeed(target)
}

/** The target found, as its backend lists it now should the call start it (see `live`). */
const settled = (deps: Deps, call: ToolCall, trail: Page, target: Target): Effect.Effect<Target, InvalidParams> =>
  live(deps, call, trail, target) ?? Effect.succeed(target)

export const make = (deps: Deps): Stage<Nothing, Found, InvalidParams> => ({
  name: "find",
  run: (call, next, trail) => {
    const deep = tooDeep(call, trail)
    if (deep !== undefined) return deep
    if (isRequest(call)) return Effect.flatMap(atRequest(deps, call, trail), (target) => next(found(call, target, trail)))
    // The hot path (a client's call of a listed tool on a running backend) stays synchronous: no effect made to find it.
    if (call.via === "client" || call.via === "task") {
      const entry = catalog(deps, call).byName.get(call.name)
      if (entry !== undefined) {
        const target = { backendId: entry.backendId, own: entry.toolName, entry }
        const started = live(deps, call, trail, target)
        return started === undefined
          ? next(found(call, target, trail))
          : Effect.flatMap(started, (now) => next(found(call, now, trail)))
      }
    }
    const endpoint = call.session?.target._tag === "Backend" ? call.session.target.backendId : undefined
    const finding =
      call.via === "backend-endpoint" && endpoint !== undefined
        ? atEndpoint(deps, call, trail, endpoint)
        : call.target !== undefined
          ? again(deps, call, trail, call.target)
          : call.via === "script"
            ? fromScript(deps, call, trail)
            : fromClient(deps, call, trail)
    return Effect.flatMap(
      Effect.flatMap(finding, (target) => settled(deps, call, trail, target)),
      (target) => next(found(call, target, trail))
    )
  }
})

export const stage = row("find", (current) =>
  Effect.map(Backends, (backends) => make({ backends, profileOf: (session) => profileIn(current(), session) }))
)
