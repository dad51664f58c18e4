/**
 * The transports only carry: what MCP makes of their frames is the Protocol's (gateway/clients). A
 * transport module that reaches past it, to the gateway, a session, an era's codec, the input
 * bridge or the backends, is named here. `Transport` is the public composition of a transport
 * with the gateway behind it, and is the one module allowed to name the gateway's layers.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"

const DIR = join(import.meta.dirname, "..", "..", "..", "src", "transport")
const FORBIDDEN =
  /gateway\/(Gateway|session\/(Session|Sessions|Era)|clients\/(Clients|Dispatch|Stateless|StreamConnection|SharedSessions)|clientRequests\/InputBridge)\.js|backend\/Backends\.js/

const importsOf = (file: string) =>
  [...readFileSync(join(DIR, file), "utf8").matchAll(/(?:^|\n)\s*(?:import|export)[^"']*?from\s+["']([^"']+)["']/g)].map(
    (m) => m[1]!
  )

describe("transport/", () => {
  it("no module but the public composition imports the gateway, a session, an era's codec, the input bridge or the backends", () => {
    const modules = readdirSync(DIR).filter((f) => f.endsWith(".ts") && f !== "Transport.ts")
    expect(modules).toEqual(expect.arrayContaining(["Http.ts", "Stdio.ts", "HttpWire.ts"]))
    const reaching = modules.flatMap((file) =>
      importsOf(file)
        .filter((spec) => FORBIDDEN.test(spec))
        .map((spec) => `${file}: ${spec}`)
    )
    expect(reaching).toEqual([])
  })

  it("Stdio and Http reach MCP through the Protocol service alone", () => {
    for (const file of ["Stdio.ts", "Http.ts"]) {
      const gateway = importsOf(file).filter((spec) => spec.includes("/gateway/"))
      expect(gateway, file).toEqual(["../gateway/clients/Protocol.js"])
    }
  })
})
