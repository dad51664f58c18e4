/**
 * Compiled code kept between starts, through the built CLI: Node keeps it in the gateway's state
 * directory (the user's own, 0700), not in the shared temporary directory; `AGENTIFY_CODE_CACHE=off`
 * keeps none.
 */
import { describe, expect, it } from "vitest"
import { existsSync, readdirSync, rmSync, statSync } from "node:fs"
import { execFileSync } from "node:child_process"
import { join } from "node:path"
import { CliClient, cleanEnv, tempDir } from "../../support/stdioClient.js"

/** A gateway's environment whose compiled code is kept in its own state directory. */
const envWithState = (state: string, extra: Record<string, string> = {}) => {
  const env = cleanEnv({ AGENTIFY_STATE_DIR: state, ...extra })
  delete env.NODE_COMPILE_CACHE
  return env
}

/** One start: ping, then EOF; its exit code and stderr. The ping waits 60 s at most: a start held forever fails. */
const start = async (env: NodeJS.ProcessEnv) => {
  const client = new CliClient({ env })
  try {
    expect((await client.request("ping", undefined, undefined, 60_000)).result).toEqual({})
  } finally {
    client.child.stdin!.end()
  }
  const { code } = await client.exited
  return { code, stderr: client.stderr() }
}
const pingThenEof = async (env: NodeJS.ProcessEnv) => (await start(env)).code

/** Every file under `dir`, however deep (Node keeps its entries in a folder per version). */
const filesUnder = (dir: string): Array<string> =>
  existsSync(dir)
    ? readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((name) => statSync(join(dir, name)).isFile())
    : []

describe("the code cache", () => {
  it("Node keeps it in the state directory, a folder of the user's own", async () => {
    const state = tempDir("agentify-cc-")
    expect(await pingThenEof(envWithState(state))).toBe(0)
    const dir = join(state, "compile-cache")
    expect(filesUnder(dir).length).toBeGreaterThan(0)
    expect(statSync(dir).mode & 0o077).toBe(0)
  })

  it("AGENTIFY_CODE_CACHE=off: none kept", async () => {
    const state = tempDir("agentify-cc-")
    expect(await pingThenEof(envWithState(state, { AGENTIFY_CODE_CACHE: "off" }))).toBe(0)
    expect(filesUnder(join(state, "compile-cache"))).toEqual([])
  })

  it("an entry Node would block on (a FIFO) or follow (a link) is removed before Node reads the cache", async () => {
    const state = tempDir("agentify-cc-")
    expect(await pingThenEof(envWithState(state))).toBe(0)
    const dir = join(state, "compile-cache")
    const entries = filesUnder(dir)
    expect(entries.length).toBeGreaterThan(1)
    const [fifo, link] = entries.map((name) => join(dir, name))
    rmSync(fifo!)
    execFileSync("mkfifo", [fifo!])
    rmSync(link!)
    execFileSync("ln", ["-s", "/dev/zero", link!])
    const { code, stderr } = await start(envWithState(state))
    expect(code).toBe(0)
    expect(stderr).toContain(`state file ${fifo} is ignored: it is not a regular file; removed from the compile cache`)
    expect(stderr).toContain(`state file ${link} is ignored: it is a symbolic link; removed from the compile cache`)
  }, 150_000)
})
