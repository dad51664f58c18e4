/**
 * The sessions the debug UI lists (`/api/sessions`, `/api/status`): each with its transport, when it
 * opened, its client as named at `initialize`, and the requests it sent; gone once closed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Recorder } from "../../../src/debug/Recorder.js"
import type { Event } from "../../../src/observability/Events.js"

const opened = (sessionId: string, at: number): Event => ({ _tag: "Session", at, sessionId, transport: "http", state: "opened" })
const fromClient = (sessionId: string, message: unknown, at = 0): Event => ({
  _tag: "ClientMessage",
  at,
  sessionId,
  direction: "in",
  message
})

describe("Recorder's sessions", () => {
  it("names each session's client, counts the requests it sent (not its notifications nor its answers), forgets it once closed", () => {
    const recorder = new Recorder()
    recorder.record(opened("s1", 1_000))
    recorder.record(opened("s2", 2_000))
    recorder.record(
      fromClient("s1", {
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "inspector", version: "0.17.0" } }
      })
    )
    recorder.record(fromClient("s1", { jsonrpc: "2.0", method: "notifications/initialized" }))
    recorder.record(fromClient("s1", { jsonrpc: "2.0", id: "a", method: "tools/list" }, 3_000))
    // An answer to the gateway's own request (an elicitation) is no request of the client's.
    recorder.record(fromClient("s1", { jsonrpc: "2.0", id: 7, result: {} }))
    // A batch counts each request in it.
    recorder.record(
      fromClient(
        "s2",
        [
          { jsonrpc: "2.0", id: 1, method: "ping" },
          { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "x" } }
        ],
        4_000
      )
    )
    // A session never opened (or already gone) is not listed by what it sends.
    recorder.record(fromClient("ghost", { jsonrpc: "2.0", id: 1, method: "ping" }))

    expect([...recorder.sessions]).toEqual([
      [
        "s1",
        { transport: "http", openedAt: 1_000, client: "inspector", clientVersion: "0.17.0", requests: 2, lastRequestAt: 3_000 }
      ],
      ["s2", { transport: "http", openedAt: 2_000, requests: 2, lastRequestAt: 4_000 }]
    ])

    recorder.record({ _tag: "Session", at: 5_000, sessionId: "s1", transport: "http", state: "closed" })
    expect([...recorder.sessions.keys()]).toEqual(["s2"])
  })

  it("keeps a client's name short: text the client chose is cut", () => {
    const recorder = new Recorder()
    recorder.record(opened("s", 0))
    recorder.record(
      fromClient("s", { jsonrpc: "2.0", id: 0, method: "initialize", params: { clientInfo: { name: "n".repeat(5_000) } } })
    )
    expect(recorder.sessions.get("s")?.client).toBe(`${"n".repeat(100)}…`)
  })
})
