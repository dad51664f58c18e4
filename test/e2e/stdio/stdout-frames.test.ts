/**
 * stdout is the protocol. Effect 4's default logger writes to stdout (console.log) and
 * `HttpRouter.serve` logs "Listening on ..." with it: a gateway that let any log reach that logger
 * (a fiber outside the logging layer, a layer of Effect's own) would put a line in the client's
 * stream that no client can parse. This runs the built CLI at trace level through what logs the
 * most: its start, a ping, listings, calls, a backend that fails at start, one that crashes in a
 * call, one that prints junk on its own stdout, a line that is not JSON and the end of input; every
 * byte on stdout must be a JSON-RPC frame, and every stderr line one of the gateway's JSON log
 * lines (none in the default logger's `[time] LEVEL (#fiber):` form).
 */
import { describe, expect, it } from "@effect/vitest"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { fixtureBackend } from "../../support/mcpFixture.js"
import { assertOnlyFrames, startGateway, tempDir } from "../../support/stdioClient.js"

const configArgs = (config: unknown): Array<string> => {
  const file = join(tempDir("agentify-frames-"), "config.json")
  writeFileSync(file, JSON.stringify(config))
  return ["--config", file]
}

describe("stdout carries JSON-RPC frames only, whatever is logged", () => {
  it("at trace level, through start, ping, calls, failing and noisy backends and EOF", async () => {
    const gateway = startGateway({
      args: [
        "--log-level",
        "trace",
        ...configArgs({
          startupTimeoutMs: 10_000,
          // Three fixtures' 72 tools listed as they are (past the default the list is search and call).
          maxListedTools: 200,
          backends: [
            fixtureBackend("fx"),
            fixtureBackend("dies", ["--exit-during-startup"], { restartOnCrash: false }),
            fixtureBackend("crashy", ["--crash-on-call"], { restartOnCrash: false }),
            fixtureBackend("junky", ["--junk-stdout"])
          ]
        })
      ]
    })
    const init = await gateway.initialize()
    expect(init.result?.serverInfo?.name).toBe("mcp-agentify")
    expect((await gateway.request("ping")).result).toEqual({})
    // The first listing waits for the backends still starting: "dies" has failed by its answer.
    const names: Array<string> = (await gateway.request("tools/list", {})).result.tools.map((t: { name: string }) => t.name)
    expect(names).toEqual(expect.arrayContaining(["fx__echo", "junky__echo", "crashy__echo"]))
    expect(names.some((name) => name.startsWith("dies__"))).toBe(false)
    const echoed = await gateway.callTool("fx__echo", { text: "hello" })
    expect(JSON.stringify(echoed.result)).toContain("hello")
    expect((await gateway.callTool("junky__echo", { text: "through junk" })).result).toBeDefined()
    expect((await gateway.callTool("crashy__echo", { text: "x" })).error?.code).toBe(-32004)
    expect((await gateway.callTool("nobody__echo", {})).error?.code).toBe(-32602)
    gateway.sendRaw("not json at all\n")
    await gateway.waitFor((m) => m.error?.code === -32700)
    expect((await gateway.request("ping")).result).toEqual({})
    const { code } = await gateway.close()
    expect(code).toBe(0)

    const frames = assertOnlyFrames(gateway.stdout())
    expect(frames.length).toBeGreaterThanOrEqual(9)
    const logLines = gateway.stderr().trim().split("\n")
    for (const line of logLines) expect(() => JSON.parse(line), line).not.toThrow()
    const logs = logLines.map((line) => JSON.parse(line))
    // It did log, at every level it was asked for, the failures included.
    expect(logs.some((log) => log.msg === "mcp-agentify started")).toBe(true)
    expect(logs.some((log) => log.level === "debug" || log.level === "trace")).toBe(true)
    expect(logs.some((log) => JSON.stringify(log).includes("dies"))).toBe(true)
    expect(logs.some((log) => JSON.stringify(log).includes("crashy"))).toBe(true)
  })
})
