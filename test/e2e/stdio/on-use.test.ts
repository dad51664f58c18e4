/**
 * Backends started on their first use (issue 59): the built CLI over stdio (and once over HTTP),
 * run twice on one state directory. The first run meets the backends (they start at `initialize`, their tools are
 * remembered); the second lists their tools without starting them, starts one when it is used (once,
 * however many calls want it), stops it after `idleMs` unused and starts it again on the next call.
 * A backend offering resources and prompts is listed from memory too, and starts on a read, a prompt
 * or a subscription. A remembered list that was tampered with is ignored; one the server changes on start gives way to
 * what it lists; a backend that fails to start on use fails the call with the reason. A call that starts a backend
 * is judged on what it lists once started: a tool its pins hold back is refused in the words of a start at
 * `initialize`, and with `toolPins` "warn" or "off" a tool that became destructive is judged destructive.
 */
import { describe, expect, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { cleanEnv, type CliClient, sleep, startGateway, tempDir } from "../../support/stdioClient.js"
import { call, openSession, startHttpGateway } from "../../support/httpClient.js"
import { FIXTURE_SERVER, firstText, fixtureBackend } from "../../support/mcpFixture.js"
import { descendants, until } from "../../support/process.js"

const configArgs = (config: unknown): Array<string> => {
  const file = join(tempDir("agentify-onuse-"), "config.json")
  writeFileSync(file, JSON.stringify(config, null, 2))
  return ["--config", file]
}

/** A gateway on `stateDir`, initialized. */
const run = async (config: unknown, stateDir: string, env: Record<string, string> = {}) => {
  const gateway = startGateway({ args: configArgs(config), env: cleanEnv({ AGENTIFY_STATE_DIR: stateDir, ...env }) })
  const init = await gateway.initialize()
  expect(init.result?.serverInfo).toBeDefined()
  return gateway
}

const names = async (gateway: CliClient): Promise<Array<string>> =>
  (await gateway.request("tools/list", {})).result.tools.map((t: { name: string }) => t.name)

const knownFiles = (stateDir: string) => readdirSync(join(stateDir, "known"))

/** Runs `config` once so that its backends' tools are remembered in `stateDir`. */
const meet = async (config: { backends: ReadonlyArray<unknown> }, stateDir: string, env: Record<string, string> = {}) => {
  const first = await run(config, stateDir, env)
  // Never seen: started with initialize, as before (which does not wait for them).
  await until("the backends to start", () => descendants(first.pid).length > 0)
  // Remembered once ready and listed (a backend's resources and prompts are asked for after it is ready).
  await until(
    "every backend remembered",
    () => existsSync(join(stateDir, "known")) && knownFiles(stateDir).length === config.backends.length
  )
  await first.close()
  return knownFiles(stateDir)
}

/**
 * Runs `config` once so that its backends' tools are remembered, and keeps what was remembered:
 * `restore` puts it back (a run that started a backend on use remembers what it listed then).
 */
const snapshotOf = async (config: { backends: ReadonlyArray<unknown> }, stateDir: string) => {
  await meet(config, stateDir)
  const files = knownFiles(stateDir).map((name) => [name, readFileSync(join(stateDir, "known", name))] as const)
  return { restore: () => files.forEach(([name, bytes]) => writeFileSync(join(stateDir, "known", name), bytes)) }
}

describe("backends started on use", () => {
  it("a second run lists the remembered tools without starting a process, starts a backend on its first call, once for two calls", async () => {
    const stateDir = tempDir("agentify-state-")
    const config = { backends: [fixtureBackend("alpha"), fixtureBackend("beta", ["--tools", "2"])] }
    expect(await meet(config, stateDir)).toHaveLength(2)

    const gateway = await run(config, stateDir)
    try {
      expect(descendants(gateway.pid)).toEqual([])
      const listed = await names(gateway)
      expect(listed).toContain("alpha__echo")
      expect(listed).toContain("beta__tool_1")
      // A name it does not list is unknown, as for a running one: nothing is started for it.
      const unknown = await gateway.callTool("beta__no_such_tool")
      expect(unknown.error?.code).toBe(-32602)
      expect(descendants(gateway.pid)).toEqual([])

      // Two calls at once on a backend not started: one start, both answered by the same process.
      const [a, b] = await Promise.all([gateway.callTool("alpha__pid"), gateway.callTool("alpha__pid")])
      expect(a.error).toBeUndefined()
      expect(b.error).toBeUndefined()
      const pidOf = (reply: { result?: unknown }) => Number(firstText(reply.result))
      expect(pidOf(a)).toBe(pidOf(b))
      // beta is still not running: only alpha's process is in the tree.
      expect(descendants(gateway.pid)).toEqual([pidOf(a)])
      const echo = await gateway.callTool("alpha__echo", { text: "hi" })
      expect(firstText(echo.result)).toContain("hi")
      // It listed what was remembered: nothing a session sees changed, so nobody is told it did.
      expect(gateway.messages.filter((m) => m.method === "notifications/tools/list_changed")).toEqual([])
    } finally {
      await gateway.close()
    }
  })

  it("a backend unused for idleMs is stopped and the next call starts it again", async () => {
    const stateDir = tempDir("agentify-state-")
    // Long enough that the tree is read before the stop on a busy machine, short for a test.
    const config = { idleMs: 1_000, backends: [fixtureBackend("alpha")] }
    await meet(config, stateDir)
    const gateway = await run(config, stateDir)
    try {
      const first = await gateway.callTool("alpha__pid")
      const pid = Number(firstText(first.result))
      expect(descendants(gateway.pid)).toEqual([pid])
      await until("the idle backend to stop", () => descendants(gateway.pid).length === 0, 20_000)
      // Said as it stops: the line may reach stderr a moment after the process is gone.
      await until("the stop to be said", () => gateway.stderr().includes("unused for 1000 ms"), 20_000)
      // Stopped: the tools stay listed, and a call starts it again (not lost, not an error).
      expect(await names(gateway)).toContain("alpha__echo")
      const again = await gateway.callTool("alpha__pid")
      expect(again.error).toBeUndefined()
      expect(Number(firstText(again.result))).not.toBe(pid)
    } finally {
      await gateway.close()
    }
  })

  it("a call that runs longer than idleMs keeps its backend: it completes with its result, nothing is stopped under it", async () => {
    const stateDir = tempDir("agentify-state-")
    // The tool answers after several idle periods: only the call in flight keeps the backend.
    const config = { idleMs: 200, backends: [fixtureBackend("alpha")] }
    await meet(config, stateDir)
    const gateway = await run(config, stateDir)
    try {
      // Started by this call; stopped under it, the call would fail with the backend's exit.
      const reply = await gateway.callTool("alpha__slow", { ms: 2_000 })
      expect(reply.error).toBeUndefined()
      expect(firstText(reply.result)).toBe("slept 2000 ms")
    } finally {
      await gateway.close()
    }
  })

  it("calls arriving around an idle stop all get their answer (they wait for the restart)", async () => {
    const stateDir = tempDir("agentify-state-")
    const config = { idleMs: 40, backends: [fixtureBackend("alpha")] }
    await meet(config, stateDir)
    const gateway = await run(config, stateDir)
    try {
      const pids = new Set<number>()
      // Each call comes about when the last one's backend is being stopped for want of use.
      for (let i = 0; i < 8; i++) {
        const reply = await gateway.callTool("alpha__pid")
        expect(reply.error).toBeUndefined()
        pids.add(Number(firstText(reply.result)))
        await sleep(20 + (i % 4) * 35)
      }
      // It was stopped and started again between some of them (the last pauses outlast idleMs).
      expect(pids.size).toBeGreaterThan(1)
    } finally {
      await gateway.close()
    }
  })

  it("over HTTP: two sessions calling a backend not started yet share one start", async () => {
    const stateDir = tempDir("agentify-state-")
    const config = { backends: [fixtureBackend("alpha"), fixtureBackend("beta")] }
    const env = { AGENTIFY_STATE_DIR: stateDir }
    const first = await startHttpGateway({ config, env })
    await until("the tools to be remembered", () => existsSync(join(stateDir, "known")) && knownFiles(stateDir).length === 2)
    await first.close()

    const gateway = await startHttpGateway({ config, env })
    try {
      const url = `${gateway.base}/mcp`
      const [one, two] = await Promise.all([openSession(url), openSession(url)])
      expect(descendants(gateway.child.pid!)).toEqual([])
      const listed = await call(url, one.sessionId, 1, "tools/list", {})
      expect(listed.messages[0].result.tools.map((t: { name: string }) => t.name)).toContain("beta__echo")
      const [a, b] = await Promise.all([
        call(url, one.sessionId, 2, "tools/call", { name: "alpha__pid", arguments: {} }),
        call(url, two.sessionId, 2, "tools/call", { name: "alpha__pid", arguments: {} })
      ])
      const pidOf = (reply: { messages: Array<any> }) => Number(firstText(reply.messages.find((m) => m.id === 2).result))
      expect(pidOf(a)).toBe(pidOf(b))
      expect(descendants(gateway.child.pid!)).toEqual([pidOf(a)])
    } finally {
      await gateway.close()
    }
  })

  it('start: "always" (the gateway\'s setting) starts every backend at initialize as before', async () => {
    const stateDir = tempDir("agentify-state-")
    const config = { backends: [fixtureBackend("alpha")] }
    await meet(config, stateDir)
    const gateway = await run({ ...config, start: "always" }, stateDir)
    try {
      await until("the backend to start", () => descendants(gateway.pid).length === 1)
    } finally {
      await gateway.close()
    }
  })

  it("a remembered list that was tampered with, or is huge, is ignored: the backend starts at initialize", async () => {
    const stateDir = tempDir("agentify-state-")
    const config = { backends: [fixtureBackend("alpha"), fixtureBackend("beta")] }
    const [one, two] = await meet(config, stateDir)
    writeFileSync(join(stateDir, "known", one!), '{"version":1,"key":"x","capabilities":[],"tools":[{"name":42}]}')
    writeFileSync(join(stateDir, "known", two!), `{"version":1,"tools":[${"{},".repeat(2_000_000)}{}]}`)
    const gateway = await run(config, stateDir)
    try {
      await until("both backends to start", () => descendants(gateway.pid).length === 2)
      expect(gateway.stderr()).toContain("its remembered tools are ignored")
      expect(await names(gateway)).toContain("beta__echo")
    } finally {
      await gateway.close()
    }
  })

  it("a server that lists something else when it starts replaces what was remembered, and the session is told", async () => {
    const stateDir = tempDir("agentify-state-")
    // The same launch (env values are not part of it), its echo described otherwise the second time.
    const config = { toolPins: "warn", backends: [fixtureBackend("alpha")] }
    await meet(config, stateDir)
    const gateway = await run(config, stateDir, { FIXTURE_ECHO_DESCRIPTION: "described anew" })
    try {
      const before = (await gateway.request("tools/list", {})).result.tools
      expect(before.find((t: { name: string }) => t.name === "alpha__echo").description).not.toContain("described anew")
      const changed = gateway.waitFor((m) => m.method === "notifications/tools/list_changed")
      await gateway.callTool("alpha__pid")
      await changed
      const after = (await gateway.request("tools/list", {})).result.tools
      expect(after.find((t: { name: string }) => t.name === "alpha__echo").description).toContain("described anew")
    } finally {
      await gateway.close()
    }
  })

  it("a definition changed since it was pinned, found as the backend starts on a call of it: held, and said as at initialize (what, and how to trust it)", async () => {
    const stateDir = tempDir("agentify-state-")
    const config = { backends: [fixtureBackend("alpha", ["--wipe"])] }
    const remembered = await snapshotOf(config, stateDir)
    const changed = { FIXTURE_WIPE: "destructive" }
    // Started at initialize: the changed tool is held back from the start.
    const atStart = await run({ ...config, start: "always" }, stateDir, changed)
    let said: { code: number; message: string } | undefined
    try {
      expect(await names(atStart)).not.toContain("alpha__wipe")
      said = (await atStart.callTool("alpha__wipe", { path: "/srv" })).error
    } finally {
      await atStart.close()
    }
    expect(said?.code).toBe(-32602)
    expect(said?.message).toBe(
      "Tool alpha__wipe is quarantined: its inputSchema, annotations changed since it was pinned; review the change and run `mcp-agentify trust alpha wipe` to accept it"
    )
    // Started by the call: the same words, and the tool leaves the list.
    remembered.restore()
    const onUse = await run(config, stateDir, changed)
    try {
      expect(await names(onUse)).toContain("alpha__wipe")
      const listChanged = onUse.waitFor((m) => m.method === "notifications/tools/list_changed")
      const refused = await onUse.callTool("alpha__wipe", { path: "/srv" })
      expect(refused.error).toEqual(said)
      await listChanged
      expect(await names(onUse)).not.toContain("alpha__wipe")
      expect(await names(onUse)).toContain("alpha__add")
      // A script meets the same refusal.
      const script = await onUse.callTool("agentify_run_code", { code: 'return await tools.alpha.wipe({ path: "/srv" })' })
      expect(firstText(script.result)).toContain("mcp-agentify trust alpha wipe")
    } finally {
      await onUse.close()
    }
  })

  for (const toolPins of ["warn", "off"] as const) {
    it(`toolPins "${toolPins}": a tool remembered read-only that is destructive with a new schema once its backend starts for the call is judged as it is now (a script, a direct call)`, async () => {
      const stateDir = tempDir("agentify-state-")
      const dir = tempDir("agentify-onuse-")
      const policies = join(dir, "policies.cedar")
      // A client's own call of a destructive tool is refused; a script's goes on to confirmTools.
      writeFileSync(
        policies,
        [
          '@id("all") permit (principal, action, resource);',
          '@id("no-destructive-calls") forbid (principal, action == Action::"call", resource) when { resource.destructive && context.via == "client" };'
        ].join("\n")
      )
      const config = {
        toolPins,
        confirmTools: "destructive",
        policies,
        backends: [fixtureBackend("alpha", ["--wipe"])]
      }
      const remembered = await snapshotOf(config, stateDir)
      const changed = { FIXTURE_WIPE: "destructive" }
      // A script: its arguments are held to the new schema, then confirmTools wants a question this client cannot answer.
      const scripted = await run(config, stateDir, changed)
      try {
        expect(descendants(scripted.pid)).toEqual([])
        const invalid = await scripted.callTool("agentify_run_code", { code: 'return await tools.alpha.wipe({ path: "/srv" })' })
        expect(firstText(invalid.result)).toContain("Invalid arguments for alpha__wipe")
        const unasked = await scripted.callTool("agentify_run_code", {
          code: 'return await tools.alpha.wipe({ path: "/srv", recursive: true })'
        })
        expect(unasked.result.isError).toBe(true)
        expect(firstText(unasked.result)).toContain('runs only after the user agrees (confirmTools: "destructive")')
        expect(firstText(unasked.result)).not.toContain("wiped")
      } finally {
        await scripted.close()
      }
      // A client's own call: the policies see the tool as it is now.
      remembered.restore()
      const direct = await run(config, stateDir, changed)
      try {
        expect(descendants(direct.pid)).toEqual([])
        const refused = await direct.callTool("alpha__wipe", { path: "/srv", recursive: true })
        expect(refused.error?.code).toBe(-32602)
        expect(refused.error?.message).toContain("alpha__wipe refused by policies")
      } finally {
        await direct.close()
      }
    })
  }

  it("a backend offering resources and prompts: listed from memory without a start; a read, a prompt or a subscription starts it", async () => {
    const stateDir = tempDir("agentify-state-")
    const config = { backends: [fixtureBackend("docs", ["--content"]), fixtureBackend("beta")] }
    await meet(config, stateDir)
    const gateway = await run(config, stateDir)
    try {
      expect(descendants(gateway.pid)).toEqual([])
      const resources = await gateway.request("resources/list", {})
      expect(resources.result.resources.map((r: { uri: string }) => r.uri)).toEqual(["fixture://notes"])
      const templates = await gateway.request("resources/templates/list", {})
      expect(templates.result.resourceTemplates.map((t: { uriTemplate: string }) => t.uriTemplate)).toEqual([
        "fixture://files/{name}"
      ])
      const prompts = await gateway.request("prompts/list", {})
      expect(prompts.result.prompts.map((p: { name: string }) => p.name)).toEqual(["docs__greet"])
      // Listing started nothing.
      expect(descendants(gateway.pid)).toEqual([])

      // A read of a URI its template covers starts it (once), and it answers.
      const read = await gateway.request("resources/read", { uri: "fixture://files/a.txt" })
      expect(read.error).toBeUndefined()
      const pid = Number(/read by (\d+)/.exec(read.result.contents[0].text)?.[1])
      expect(descendants(gateway.pid)).toEqual([pid])
      const prompt = await gateway.request("prompts/get", { name: "docs__greet", arguments: { name: "Ada" } })
      expect(prompt.result.messages[0].content.text).toBe(`Hello Ada from ${pid}`)
      const subscribed = await gateway.request("resources/subscribe", { uri: "fixture://notes" })
      expect(subscribed.error).toBeUndefined()
      // beta (tools only) was never used: still not started.
      expect(descendants(gateway.pid)).toEqual([pid])
    } finally {
      await gateway.close()
    }
  })

  it("a prompt asked of a backend not started starts it (nothing read before)", async () => {
    const stateDir = tempDir("agentify-state-")
    const config = { backends: [fixtureBackend("docs", ["--content"])] }
    await meet(config, stateDir)
    const gateway = await run(config, stateDir)
    try {
      expect(descendants(gateway.pid)).toEqual([])
      const prompt = await gateway.request("prompts/get", { name: "docs__greet", arguments: { name: "Ada" } })
      expect(prompt.result.messages[0].content.text).toMatch(/^Hello Ada from \d+$/)
      await until("the backend to start", () => descendants(gateway.pid).length === 1)
    } finally {
      await gateway.close()
    }
  })

  it("a backend that fails to start on use fails the call with -32004 and the reason", async () => {
    const stateDir = tempDir("agentify-state-")
    // One launch (the same file), a server the first time and one that exits the second.
    const script = join(tempDir("agentify-onuse-"), "server.mjs")
    writeFileSync(script, `await import(${JSON.stringify(FIXTURE_SERVER)})\n`)
    const config = {
      backends: [fixtureBackend("alpha", [], { args: [script, "--name", "alpha"] }), fixtureBackend("beta")]
    }
    await meet(config, stateDir)
    writeFileSync(script, 'process.stderr.write("cannot start today\\n"); process.exit(1)\n')
    const gateway = await run(config, stateDir)
    try {
      const failed = await gateway.callTool("alpha__echo", { text: "hi" })
      expect(failed.error?.code).toBe(-32004)
      expect(failed.error?.message).toMatch(/alpha/)
      // Nothing else waits: the other backend answers.
      const ok = await gateway.callTool("beta__echo", { text: "hi" })
      expect(firstText(ok.result)).toContain("hi")
    } finally {
      await gateway.close()
    }
  })
})
