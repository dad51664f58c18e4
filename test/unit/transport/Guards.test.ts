/**
 * The Host and Origin checks against DNS rebinding, with the port known (the gateway's own
 * listener) and unknown (mounted on an app's router): a rebound name is refused either way.
 */
import { describe, expect, it } from "vitest"
import { makeGuards } from "../../../src/transport/Guards.js"

const none = { allowedHosts: [], allowedOrigins: [] }

describe("Guards", () => {
  it("with the port known, only the loopback names on that port pass", () => {
    const guards = makeGuards({ host: "127.0.0.1" }, () => 8080, none)
    expect(guards.hostAllowed("127.0.0.1:8080")).toBe(true)
    expect(guards.hostAllowed("localhost:8080")).toBe(true)
    expect(guards.hostAllowed("localhost:9090")).toBe(false)
    expect(guards.hostAllowed("evil.example:8080")).toBe(false)
    expect(guards.originAllowed("http://localhost:3000")).toBe(true)
    expect(guards.originAllowed("http://evil.example:8080")).toBe(false)
  })

  it("with the port unknown, any port of the bound names passes, and a rebound name still fails", () => {
    const guards = makeGuards({ host: "127.0.0.1" }, () => undefined, none)
    expect(guards.hostAllowed("127.0.0.1:41234")).toBe(true)
    expect(guards.hostAllowed("localhost")).toBe(true)
    expect(guards.hostAllowed("evil.example:41234")).toBe(false)
    expect(guards.hostAllowed("localhost.evil.example:41234")).toBe(false)
    expect(guards.hostAllowed("localhost:80x")).toBe(false)
    expect(guards.hostAllowed(undefined)).toBe(false)
    const named = makeGuards({ host: "gw.internal" }, () => undefined, none)
    expect(named.hostAllowed("gw.internal:443")).toBe(true)
    expect(named.originAllowed("https://gw.internal:8443")).toBe(true)
    expect(named.originAllowed("https://evil.example")).toBe(false)
  })
})
