/**
 * Resources, prompts, completion and logging through the aggregate, end to end: the built CLI in
 * front of the conformance fixture (which offers all of them) and the plain fixture (which offers
 * tools only), driven by the SDK client over stdio.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, cleanEnv, ROOT, tempDir } from "../support/stdioClient.js"
import { firstText, fixtureBackend } from "../support/mcpFixture.js"
import { startHttpGateway } from "../support/httpClient.js"
import { sleep, until } from "../support/process.js"

const CONFORMANCE = join(ROOT, "test", "fixtures", "conformance-server.mjs")

describe("the aggregate relays resources, prompts, completion and logging", () => {
  let client: Client
  const logs: Array<unknown> = []
  beforeAll(async () => {
    const dir = tempDir()
    const config = join(dir, "gateway.json")
    writeFileSync(
      config,
      JSON.stringify({ backends: [fixtureBackend("fx"), { id: "conf", command: process.execPath, args: [CONFORMANCE] }] })
    )
    client = new Client({ name: "relay-e2e", version: "1.0.0" })
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      logs.push(n.params)
    })
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "--config", config],
        cwd: dir,
        env: cleanEnv() as Record<string, string>,
        stderr: "pipe"
      })
    )
  })
  afterAll(async () => {
    await client.close()
  })

  it("declares resources, prompts, completions, logging and tasks beside tools", () => {
    expect(client.getServerCapabilities()).toEqual({
      tools: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      prompts: { listChanged: true },
      completions: {},
      logging: {},
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } }
    })
  })

  it("lists every backend's resources and templates with their URIs unchanged, and reads them by URI", async () => {
    const { resources } = await client.listResources()
    expect(resources.map((r) => r.uri)).toEqual(["test://static-text", "test://static-binary", "test://watched-resource"])
    const { resourceTemplates } = await client.listResourceTemplates()
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(["test://template/{id}/data"])
    const text = await client.readResource({ uri: "test://static-text" })
    expect(text.contents[0]).toMatchObject({
      uri: "test://static-text",
      text: "This is the content of the static text resource."
    })
    const binary = await client.readResource({ uri: "test://static-binary" })
    expect(binary.contents[0]).toMatchObject({ mimeType: "image/png" })
    expect(typeof (binary.contents[0] as { blob?: unknown }).blob).toBe("string")
    // Routed by the template when no listed URI matches.
    const templated = await client.readResource({ uri: "test://template/123/data" })
    expect(JSON.parse((templated.contents[0] as { text: string }).text)).toEqual({ id: "123", data: "Data for ID: 123" })
  })

  it("lists prompts as <backendId>__<name> with the backend named in the description, and gets them", async () => {
    const { prompts } = await client.listPrompts()
    expect(prompts.map((p) => p.name)).toEqual([
      "conf__test_simple_prompt",
      "conf__test_prompt_with_arguments",
      "conf__test_prompt_with_embedded_resource",
      "conf__test_prompt_with_image",
      "conf__test_input_required_result_prompt"
    ])
    expect(prompts[1]!.description).toBe("[conf] A prompt with two arguments")
    expect(prompts[1]!.arguments?.map((a) => a.name)).toEqual(["arg1", "arg2"])
    const got = await client.getPrompt({ name: "conf__test_prompt_with_arguments", arguments: { arg1: "one", arg2: "two" } })
    expect(JSON.stringify(got.messages)).toContain("arg1='one', arg2='two'")
    const image = await client.getPrompt({ name: "conf__test_prompt_with_image" })
    expect(image.messages[0]!.content).toMatchObject({ type: "image", mimeType: "image/png" })
  })

  it("routes completion by its ref to the backend that owns the prompt", async () => {
    const result = await client.complete({
      ref: { type: "ref/prompt", name: "conf__test_prompt_with_arguments" },
      argument: { name: "arg1", value: "testi" }
    })
    expect(result.completion.values).toEqual(["testing"])
  })

  it("logging/setLevel sets what this client receives and reaches the backends", async () => {
    logs.length = 0
    await client.setLoggingLevel("error")
    const quiet = await client.callTool({ name: "conf__test_tool_with_logging", arguments: {} })
    expect(firstText(quiet)).toBe("logged three messages")
    await sleep(100)
    expect(logs).toEqual([])
    await client.setLoggingLevel("debug")
    await client.callTool({ name: "conf__test_tool_with_logging", arguments: {} })
    await sleep(100)
    expect(logs).toEqual(["starting", "halfway", "done"].map((data) => ({ level: "info", logger: "conformance", data })))
  })

  it("an unknown prompt is -32602; an unlisted URI goes to the only resource server, whose own error comes back", async () => {
    const resource = await client.readResource({ uri: "nowhere://x" }).catch((e) => e)
    expect(resource.code).toBe(-32602)
    expect(resource.message).toMatch(/Resource not found/)
    expect(resource.data).toEqual({ uri: "nowhere://x" })
    const prompt = await client.getPrompt({ name: "fx__nothing" }).catch((e) => e)
    expect(prompt.code).toBe(-32602)
    const level = await client.setLoggingLevel("loud" as never).catch((e) => e)
    expect(level.code).toBe(-32602)
  })
})

describe("two backends offering the same resources", () => {
  it("the first in configuration order keeps a URI; a URI neither offers is -32602", async () => {
    const dir = tempDir()
    const config = join(dir, "gateway.json")
    const conformance = (id: string) => ({ id, command: process.execPath, args: [CONFORMANCE] })
    writeFileSync(config, JSON.stringify({ backends: [conformance("one"), conformance("two")] }))
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "--config", config],
      cwd: dir,
      env: cleanEnv() as Record<string, string>,
      stderr: "pipe"
    })
    let stderr = ""
    transport.stderr?.on("data", (chunk) => (stderr += chunk))
    const client = new Client({ name: "relay-twice", version: "1.0.0" })
    await client.connect(transport)
    try {
      const { resources } = await client.listResources()
      expect(resources.map((r) => r.uri)).toEqual(["test://static-text", "test://static-binary", "test://watched-resource"])
      const { prompts } = await client.listPrompts()
      expect(prompts.filter((p) => p.name.endsWith("test_simple_prompt")).map((p) => p.name)).toEqual([
        "one__test_simple_prompt",
        "two__test_simple_prompt"
      ])
      const unknown = await client.readResource({ uri: "nowhere://x" }).catch((e) => e)
      expect(unknown.code).toBe(-32602)
      expect(unknown.message).toMatch(/no backend offers the resource 'nowhere:\/\/x'/)
      expect(stderr).toMatch(/two also offers test:\/\/static-text; it stays one's/)
    } finally {
      await client.close()
    }
  })
})

describe("resource subscriptions are each session's own", () => {
  it("updates reach only the sessions that subscribed; the backend is unsubscribed when the last one lets go", async () => {
    const gateway = await startHttpGateway({
      config: { backends: [{ id: "conf", command: process.execPath, args: [CONFORMANCE] }] }
    })
    const connect = async (name: string) => {
      const client = new Client({ name, version: "1.0.0" })
      const updates: Array<string> = []
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
        updates.push(n.params.uri)
      })
      await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp`)))
      return { client, updates }
    }
    const a = await connect("a")
    const b = await connect("b")
    try {
      // The SDK opens its GET stream (where these notifications travel) after initialized.
      await sleep(300)
      const touch = async () => {
        await a.client.callTool({ name: "conf__touch_watched_resource", arguments: {} })
        await sleep(200)
      }
      await a.client.subscribeResource({ uri: "test://watched-resource" })
      await touch()
      expect(a.updates).toEqual(["test://watched-resource"])
      expect(b.updates).toEqual([])
      await b.client.subscribeResource({ uri: "test://watched-resource" })
      await a.client.unsubscribeResource({ uri: "test://watched-resource" })
      await touch()
      expect(a.updates).toHaveLength(1)
      expect(b.updates).toEqual(["test://watched-resource"])
      await b.client.unsubscribeResource({ uri: "test://watched-resource" })
      // One subscribe and one unsubscribe reached the backend: the first holder's and the last one's.
      const counts = await a.client.callTool({ name: "conf__subscription_counts", arguments: {} })
      expect(counts.structuredContent).toEqual({ subscribe: 1, unsubscribe: 1 })
      await touch()
      expect(b.updates).toHaveLength(1)

      // A restarted backend is subscribed again to what sessions still hold.
      await a.client.subscribeResource({ uri: "test://watched-resource" })
      await a.client.callTool({ name: "conf__exit_process", arguments: {} })
      const again = await until("the restarted backend to be subscribed again", async () => {
        const result = await a.client.callTool({ name: "conf__subscription_counts", arguments: {} }).catch(() => undefined)
        const counts = result?.structuredContent as { subscribe: number; unsubscribe: number } | undefined
        // The old process counted an unsubscribe; the new one starts from nothing.
        return counts !== undefined && counts.unsubscribe === 0 && counts.subscribe > 0 ? counts : undefined
      })
      expect(again).toEqual({ subscribe: 1, unsubscribe: 0 })
      await touch()
      expect(a.updates).toHaveLength(2)
    } finally {
      await a.client.close()
      await b.client.close()
      await gateway.close()
    }
    expect(gateway.stderr()).toMatch(/"msg":"backend stopped","backend":"conf"/)
  })
})
