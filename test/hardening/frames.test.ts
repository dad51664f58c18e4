/**
 * Messages too long for the peer on the other side, with the MCP SDK's own stdio peers: its client
 * drops a line over 10 MiB and disconnects, its servers drop one and never answer. The gateway
 * sends neither: a reply over `maxReplyBytes` becomes an error naming its size and the setting
 * (the client stays connected), and a request over `maxBackendRequestBytes` fails at once.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { join } from "node:path"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { until } from "../support/process.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { serverFilesystemEntry } from "../../src/config/Config.js"
import { connectSdk } from "../support/sdkClient.js"
import { fixtureBackend } from "../support/mcpFixture.js"
import { cleanEnv, tempDir } from "../support/stdioClient.js"

describe("frames too long for the peer", () => {
  const dir = tempDir("agentify-frames-")
  let client: Client
  let stderr: () => string
  beforeAll(async () => {
    const config = join(dir, "gateway.json")
    writeFileSync(
      config,
      JSON.stringify({
        // A request timeout long enough that waiting it out would fail the test's own.
        requestTimeoutMs: 60_000,
        audit: { file: join(dir, "audit.jsonl") },
        backends: [fixtureBackend("fx"), { id: "files", command: process.execPath, args: [serverFilesystemEntry(), dir] }]
      })
    )
    ;({ client, stderr } = await connectSdk(new Client({ name: "frames", version: "1.0.0" }), {
      config,
      cwd: dir,
      env: cleanEnv()
    }))
  })
  afterAll(async () => {
    await client?.close()
  })

  it("a 20 MB tool result reaches the SDK's client as an error naming its size and maxReplyBytes; the client stays connected", async () => {
    const audited = () =>
      existsSync(join(dir, "audit.jsonl"))
        ? readFileSync(join(dir, "audit.jsonl"), "utf8")
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l))
        : []
    // This test's lines: another may have called fx__big before (a script's call of it).
    const from = audited().length
    const error = await client.callTool({ name: "fx__big", arguments: { bytes: 20_000_000 } }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: -32603 })
    expect((error as Error).message).toMatch(/The reply is 19\.\d MiB, more than maxReplyBytes \(9\.9 MiB\)/)
    expect((error as Error).message).toContain("agentify_run_code")
    // Connected still: the next call is answered.
    const small = (await client.callTool({ name: "fx__big", arguments: { bytes: 10 } })) as any
    expect(small.content[0].text).toHaveLength(10)
    expect(stderr()).toContain("a message too long for the client was not sent")
    // The audit log says what the client got: not "ok" for the reply it was never sent.
    const lines = await until("both calls in the audit log", () => {
      const calls = audited()
        .slice(from)
        .filter((l) => l.type === "call" && l.tool.exposed === "fx__big")
      return calls.length >= 2 ? calls : undefined
    })
    expect(lines.map((l: any) => [l.arguments, l.outcome])).toEqual([
      [expect.stringMatching(/^sha256:/), -32603],
      [expect.stringMatching(/^sha256:/), "ok"]
    ])
  })

  it("a script reads the same result in parts: only what it returns is sent", async () => {
    const result = (await client.callTool({
      name: "agentify_run_code",
      arguments: { code: `const r = await tools.fx.big({ bytes: 20000000 }); return String(r).length` }
    })) as any
    expect(result.isError).toBeUndefined()
    expect(result.structuredContent.result).toBe(20_000_000)
  })

  it("an 11 MB request to an SDK server fails at once naming maxBackendRequestBytes, instead of waiting out requestTimeoutMs", async () => {
    const error = await client
      .callTool({ name: "files__write_file", arguments: { path: join(dir, "big.txt"), content: "x".repeat(11 * 1024 * 1024) } })
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ code: -32004 })
    expect((error as Error).message).toMatch(/more than maxBackendRequestBytes \(10354688\)/)
    // The backend still answers.
    const listed = (await client.callTool({ name: "files__list_allowed_directories", arguments: {} })) as any
    expect(listed.isError).toBeFalsy()
  })
})
