/**
 * Which sessions hear `notifications/tools/list_changed`: only those whose list changed. A backend
 * that lists again what it listed (new objects, the same definitions) tells nobody, however often;
 * a session initialized while backends start is told nothing of their start (its first list waits
 * for them);
 * a session listed in part (past `maxListedTools`) is not told of tools it does not list; a real
 * change of what it lists is told once.
 */
import { describe, expect, it } from "@effect/vitest"
import type { BackendsService, BackendTools } from "../../../../src/backend/Backends.js"
import * as ListChanged from "../../../../src/gateway/routing/ListChanged.js"
import { Session } from "../../../../src/gateway/session/Session.js"
import { EDGE as HTTP_EDGE } from "../../../../src/gateway/clients/SharedSessions.js"
import type { Tool } from "../../../../src/protocol/Mcp.js"

/** A fresh object for each listing, as a backend's answer parsed again. */
const listing = (names: ReadonlyArray<string>, description = "Does it"): Array<Tool> =>
  names.map((name) => ({ name, description, inputSchema: { type: "object", properties: { x: { type: "string" } } } }))

/** Backends whose ready set is whatever `current` holds now (and some still starting, when it says so). */
const backendsOver = (current: { set: ReadonlyArray<BackendTools>; starting?: boolean }) =>
  ({
    toolsSync: () => current.set,
    backend: () => undefined,
    configOf: (id: string) => ({ id }),
    settling: () => current.starting === true
  }) as unknown as BackendsService

/** A session past its initialize, counting the list_changed it is sent. */
const readySession = (id: string) => {
  const said: Array<string> = []
  const session = new Session({
    id,
    edge: HTTP_EDGE,
    send: (message) => {
      if (typeof message === "object" && message !== null && "method" in message) said.push(String(message.method))
      return true
    }
  })
  session.advance("initialize")
  session.advance("initialized")
  return { session, changes: () => said.filter((m) => m === "notifications/tools/list_changed").length }
}

describe("list_changed only when a session's list changed", () => {
  it("a storm of listings that change nothing tells nobody; a changed definition is told once", () => {
    const current: { set: ReadonlyArray<BackendTools>; starting?: boolean } = {
      set: [{ backendId: "fx", tools: listing(["echo", "add"]) }],
      starting: true
    }
    const listChanged = ListChanged.make(backendsOver(current), () => undefined)
    const { session, changes } = readySession("whole")
    session.listedTools = () => current.set.flatMap((b) => b.tools)
    listChanged.remember(session)
    // Initialized while backends start (as its initialize leaves it): nothing told while they start.
    session.toolsTold = undefined
    current.set = [{ backendId: "fx", tools: listing(["echo"]) }]
    listChanged.announce([session])
    current.set = [{ backendId: "fx", tools: listing(["echo", "add"]) }]
    current.starting = false
    listChanged.announce([session])
    expect(changes()).toBe(0)
    for (let i = 0; i < 500; i++) {
      current.set = [{ backendId: "fx", tools: listing(["echo", "add"]) }]
      listChanged.announce([session])
    }
    expect(changes()).toBe(0)
    current.set = [{ backendId: "fx", tools: listing(["echo", "add"], "Does it otherwise") }]
    listChanged.announce([session])
    listChanged.announce([session])
    expect(changes()).toBe(1)
  })

  it("a session listed in part is not told of backends whose tools it does not list", () => {
    const current = { set: [{ backendId: "a", tools: listing(["one"]) }] as ReadonlyArray<BackendTools> }
    const listChanged = ListChanged.make(backendsOver(current), () => undefined)
    const { session, changes } = readySession("part")
    // What its tools/list gives (the gateway's own tools and what it found): not the new backends.
    const own = listing(["agentify_search_tools", "agentify_call_tool"])
    session.listedTools = () => listing(own.map((t) => t.name))
    listChanged.remember(session)
    for (let i = 0; i < 50; i++) {
      current.set = [...current.set, { backendId: `b${i}`, tools: listing(["two", "three"]) }]
      listChanged.announce([session])
    }
    expect(changes()).toBe(0)
    // A find joins its list: that is a change.
    session.listedTools = () => listing([...own.map((t) => t.name), "b3__two"])
    listChanged.announce([session])
    expect(changes()).toBe(1)
  })
})
