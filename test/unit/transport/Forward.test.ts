import { describe, expect, it } from "@effect/vitest"
import { targetOf } from "../../../src/transport/Forward.js"

describe("a request handed to the gateway that holds its session", () => {
  it("goes to the holder's origin with its path and query, whatever origin its request line names", () => {
    const holder = "http://10.0.0.7:8080"
    expect(targetOf("/mcp?x=1", holder).href).toBe("http://10.0.0.7:8080/mcp?x=1")
    expect(targetOf("/servers/fs/mcp", holder).href).toBe("http://10.0.0.7:8080/servers/fs/mcp")
    // The absolute form (`GET http://elsewhere/ HTTP/1.1`): never a way to another host.
    expect(targetOf("http://169.254.169.254/latest/meta-data?a=b", holder).href).toBe("http://10.0.0.7:8080/latest/meta-data?a=b")
    expect(targetOf("//evil.example/mcp", holder).origin).toBe("http://10.0.0.7:8080")
    expect(targetOf(undefined, holder).href).toBe("http://10.0.0.7:8080/")
  })
})
