import { describe, expect, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Fiber, Queue, Sink, Stream } from "effect"
import { InvalidParams, MethodNotFound } from "../../../src/protocol/Errors.js"
import * as JsonRpc from "../../../src/jsonrpc/JsonRpc.js"
import type * as Peer from "../../../src/jsonrpc/Peer.js"
import * as Stdio from "../../../src/transport/Stdio.js"

const bytes = (s: string) => new TextEncoder().encode(s)
const cl = (json: string) => `Content-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`

const decodeAll = (chunks: ReadonlyArray<string | Uint8Array>, max = 1024) => {
  const decoder = new JsonRpc.FrameDecoder(max)
  const frames = chunks.flatMap((c) => decoder.push(typeof c === "string" ? bytes(c) : c))
  return { frames: [...frames, ...decoder.end()], framing: decoder.framing }
}

const texts = (frames: ReadonlyArray<JsonRpc.Frame>) => frames.map((f) => (f._tag === "Text" ? f.text : f._tag))

describe("FrameDecoder", () => {
  it("splits newline-delimited JSON, several frames per chunk", () => {
    const { frames, framing } = decodeAll(['{"a":1}\n{"b":2}\n{"c"', ":3}\n"])
    expect(framing).toBe("ndjson")
    expect(texts(frames)).toEqual(['{"a":1}', '{"b":2}', '{"c":3}'])
  })

  it("tolerates \\r\\n and blank lines", () => {
    const { frames } = decodeAll(['{"a":1}\r\n\r\n\n{"b":2}\r\n'])
    expect(texts(frames)).toEqual(['{"a":1}', '{"b":2}'])
  })

  it("reassembles a frame split byte by byte, multi-byte UTF-8 included", () => {
    const line = bytes('{"text":"héllo ✓ 🚀"}\n')
    const { frames } = decodeAll(Array.from(line, (b) => new Uint8Array([b])))
    expect(texts(frames)).toEqual(['{"text":"héllo ✓ 🚀"}'])
  })

  it("detects Content-Length framing from the first bytes, even split inside the header name", () => {
    const a = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
    const b = '{"jsonrpc":"2.0","id":2,"method":"ping"}'
    const all = cl(a) + cl(b)
    const { frames, framing } = decodeAll([all.slice(0, 3), all.slice(3, 30), all.slice(30)])
    expect(framing).toBe("content-length")
    expect(texts(frames)).toEqual([a, b])
  })

  it("accepts other headers, any case, and \\n\\n as the separator", () => {
    const body = '{"x":"é"}'
    const { frames } = decodeAll([
      `content-length: ${Buffer.byteLength(body)}\nContent-Type: application/vscode-jsonrpc; charset=utf-8\n\n${body}`
    ])
    expect(texts(frames)).toEqual([body])
  })

  it("rejects an oversized ndjson line once, without keeping it, and goes on", () => {
    const big = `{"pad":"${"x".repeat(5000)}"}`
    const decoder = new JsonRpc.FrameDecoder(100)
    const out: Array<JsonRpc.Frame> = []
    for (let i = 0; i < big.length; i += 700) out.push(...decoder.push(bytes(big.slice(i, i + 700))))
    out.push(...decoder.push(bytes('\n{"ok":1}\n')))
    expect(out.map((f) => f._tag)).toEqual(["TooLarge", "Text"])
    expect(texts(out)[1]).toBe('{"ok":1}')
  })

  it("rejects an oversized Content-Length body by skipping it, then decodes the next frame", () => {
    const big = `{"pad":"${"x".repeat(500)}"}`
    const small = '{"ok":1}'
    const { frames } = decodeAll([cl(big), cl(small)], 100)
    expect(frames.map((f) => f._tag)).toEqual(["TooLarge", "Text"])
    expect(texts(frames)[1]).toBe(small)
  })

  it("reports a header block without Content-Length and resynchronises on the next one", () => {
    const ok = '{"ok":1}'
    const { frames } = decodeAll([`Content-Type: x\r\n\r\n${cl(ok)}`])
    expect(frames.map((f) => f._tag)).toEqual(["BadHeader", "Text"])
  })

  it("a Content-Length that is too short yields a broken frame, and the next frame is still found", () => {
    const body = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
    const next = '{"jsonrpc":"2.0","id":2,"method":"ping"}'
    const { frames } = decodeAll([`Content-Length: 10\r\n\r\n${body}${cl(next)}`])
    expect(texts(frames)[0]).toBe(body.slice(0, 10))
    expect(texts(frames)).toContain(next)
  })

  it("a lying Content-Length does not make the connection deaf: the next header ends the skipping", () => {
    const ping = '{"jsonrpc":"2.0","id":2,"method":"ping"}'
    for (const lie of ["99999999999999999999", "5000"]) {
      const { frames } = decodeAll([`Content-Length: ${lie}\r\n\r\n${cl(ping)}`, cl(ping)], 1024)
      expect(texts(frames)).toEqual(["TooLarge", ping, ping])
    }
    // Also when the next header comes on a later line of the skipped bytes, in another chunk.
    const { frames } = decodeAll([`Content-Length: 2000\r\n\r\n{"pad":"xx"}\r\n`, cl(ping)], 1024)
    expect(texts(frames)).toEqual(["TooLarge", ping])
  })

  it("an absurd Content-Length loses only its own frame when the next headers are glued to bodies (as LSP clients send)", () => {
    const ping = (id: number) => `{"jsonrpc":"2.0","id":${id},"method":"ping"}`
    const pings = Array.from({ length: 20 }, (_, i) => ping(i + 1))
    const glued = pings.map(cl).join("")
    for (const lie of ["99999999999999999999", "5000"]) {
      const { frames } = decodeAll([`Content-Length: ${lie}\r\n\r\n${ping(0)}${glued}`], 1024)
      expect(texts(frames)).toEqual(["TooLarge", ...pings])
    }
    // Split anywhere: in the header's name, before its blank line, one byte at a time.
    const text = `Content-Length: 99999999999999999999\r\n\r\n${ping(0)}${glued}`
    for (const size of [1, 7, 16, 61]) {
      const chunks: Array<string> = []
      for (let i = 0; i < text.length; i += size) chunks.push(text.slice(i, i + size))
      expect(texts(decodeAll(chunks, 1024).frames)).toEqual(["TooLarge", ...pings])
    }
    // An honest oversized body is skipped whole, whatever text its strings hold.
    const honest = `{"text":"Content-Length: 5 ${"x".repeat(2000)}"}`
    expect(texts(decodeAll([cl(honest), cl(ping(1))], 1024).frames)).toEqual(["TooLarge", ping(1)])
  })

  it("matches header names whole: X-Content-Length is not Content-Length", () => {
    const body = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
    // The first frame decides the framing; the header blocks after it are the ones under test.
    const { frames } = decodeAll([cl(body), `X-Content-Length: 3\r\nContent-Length: ${body.length}\r\n\r\n${body}`])
    expect(texts(frames)).toEqual([body, body])
    const { frames: only } = decodeAll([cl(body), `X-Content-Length: 3\r\n\r\n${cl(body)}`])
    expect(texts(only)).toEqual([body, "BadHeader", body])
    expect(texts(decodeAll([`Content-Length: 1e3\r\n\r\n${cl(body)}`]).frames)).toEqual(["BadHeader", body])
  })

  it("the leftover of a short frame ending in an underscore does not hide the header glued after it", () => {
    const ping = (id: number) => `{"jsonrpc":"2.0","id":${id},"method":"ping"}`
    const { frames } = decodeAll([`Content-Length: 1\r\n\r\nproto_${cl(ping(2))}${cl(ping(3))}`])
    expect(texts(frames)).toEqual(["p", ping(2), ping(3)])
  })

  it("junk glued before the next header, even a lone hyphen, does not swallow the frame after it", () => {
    const body = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
    // A header block without a length, then its one-byte body glued to the next frame's header.
    const { frames } = decodeAll([cl(body), `Content-Type: application/json\r\n\r\n-${cl(body)}`])
    expect(texts(frames)).toEqual([body, "BadHeader", body])
    const { frames: junk } = decodeAll([cl(body), `Content-Type: application/json\r\n\r\n"}-${cl(body)}`])
    expect(texts(junk)).toEqual([body, "BadHeader", body])
  })

  it("a long line arriving in many chunks is joined once (linear), and its edges are kept when dropped", () => {
    const decoder = new JsonRpc.FrameDecoder(64 * 1024 * 1024, "ndjson")
    const line = `{"jsonrpc":"2.0","id":9,"result":{"text":"${"r".repeat(8 * 1024 * 1024)}"}}`
    const out: Array<JsonRpc.Frame> = []
    for (let i = 0; i < line.length; i += 65_536) out.push(...decoder.push(bytes(line.slice(i, i + 65_536))))
    out.push(...decoder.push(bytes("\n")))
    expect(out).toHaveLength(1)
    expect(out[0]!._tag === "Text" && out[0]!.text.length).toBe(line.length)
    const small = new JsonRpc.FrameDecoder(1024, "ndjson")
    const dropped = small.push(bytes(`{"result":{"text":"${"r".repeat(5000)}"},"jsonrpc":"2.0","id":"call-7"}\n`))
    expect(dropped).toHaveLength(1)
    expect(dropped[0]!._tag === "TooLarge" && JsonRpc.idOfDropped(dropped[0]!)).toBe("call-7")
  })

  it("idOfDropped reads a top-level id from either edge, never a nested one", () => {
    expect(JsonRpc.idOfDropped({ head: '{"jsonrpc":"2.0","id":5,"result":{"x":"', tail: '"}}' })).toBe(5)
    expect(JsonRpc.idOfDropped({ head: '{"result":{"id":3,"x":"', tail: 'xx"},"jsonrpc":"2.0","id":4}' })).toBe(4)
    expect(JsonRpc.idOfDropped({ head: '{"method":"x","params":{"id":3,"p":"', tail: '"}}' })).toBeNull()
    expect(JsonRpc.idOfDropped({ head: '[{"jsonrpc":"2.0","id":1', tail: '"id":2}]' })).toBeNull()
  })

  it("reports a partial frame at end of input instead of dropping it", () => {
    const { frames } = decodeAll(['{"a":1}\n{"b":'])
    expect(texts(frames)).toEqual(['{"a":1}', '{"b":'])
  })
})

describe("classify", () => {
  it("tells requests, notifications, responses and invalid messages apart", () => {
    expect(JsonRpc.classify({ jsonrpc: "2.0", id: "a", method: "m" })._tag).toBe("Request")
    expect(JsonRpc.classify({ jsonrpc: "2.0", id: 0, method: "m", params: [] })._tag).toBe("Request")
    expect(JsonRpc.classify({ jsonrpc: "2.0", method: "m" })._tag).toBe("Notification")
    expect(JsonRpc.classify({ jsonrpc: "2.0", id: 1, result: {} })._tag).toBe("Response")
    const invalid = [
      5,
      "x",
      null,
      { id: 1, method: "m" },
      { jsonrpc: "1.0", id: 1, method: "m" },
      { jsonrpc: "2.0", id: 1 },
      { jsonrpc: "2.0", id: 1, method: 7 },
      { jsonrpc: "2.0", id: {}, method: "m" },
      { jsonrpc: "2.0", id: 1, method: "m", params: "p" },
      { jsonrpc: "2.0", id: null, method: "m" }
    ]
    for (const value of invalid) expect(JsonRpc.classify(value)._tag).toBe("Invalid")
  })

  it("keeps the id of an invalid request when the id itself is valid", () => {
    expect(JsonRpc.classify({ jsonrpc: "1.0", id: "keep", method: "m" })).toMatchObject({ id: "keep" })
  })
})

// ---------------------------------------------------------------------------------------------
// The dispatcher, over an in-memory connection

const testHandlers: Peer.Handlers<never> = {
  request: (req, ctx) => {
    switch (req.method) {
      case "echo":
        return Effect.succeed(req.params ?? null)
      case "slow":
        return Effect.as(Effect.sleep((req.params as { ms: number }).ms), "slow done")
      case "hang":
        return Effect.never
      case "bad":
        return Effect.fail(new InvalidParams({ message: "Invalid params: x: is required", issues: ["x: is required"] }))
      case "boom":
        return Effect.die(new Error("kaboom"))
      case "notify":
        return Effect.as(ctx.notify("notifications/progress", { n: 1 }), "notified")
      default:
        return Effect.fail(new MethodNotFound({ message: `Method not found: ${req.method}` }))
    }
  },
  notification: () => Effect.void
}

/** Runs a connection: feeds `input` chunks (strings), returns every frame written as parsed JSON. */
const session = (chunks: ReadonlyArray<string>, options: { maxFrameBytes?: number; gapMs?: number; drainMs?: number } = {}) =>
  Effect.gen(function* () {
    const written: Array<string> = []
    const input = Stream.fromIterable(chunks).pipe(Stream.mapEffect((c) => Effect.as(Effect.sleep(options.gapMs ?? 0), bytes(c))))
    yield* Stdio.serve({
      input,
      output: Sink.forEach((s: string) => Effect.sync(() => written.push(s))),
      connect: Stdio.peer(testHandlers),
      maxFrameBytes: options.maxFrameBytes ?? 1024 * 1024,
      drainMs: options.drainMs ?? 2_000
    })
    return written
  })

const parseNdjson = (written: ReadonlyArray<string>) => {
  const all = written.join("")
  expect(all.endsWith("\n")).toBe(true)
  return all
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line))
}

const req = (id: unknown, method: string, params?: unknown) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) }) + "\n"

describe("serve", () => {
  it.live("echoes number and string ids unchanged and never answers notifications", () =>
    Effect.gen(function* () {
      const out = parseNdjson(
        yield* session([req(7, "echo", { a: 1 }), req("seven", "echo", [1]), '{"jsonrpc":"2.0","method":"echo"}\n'])
      )
      expect(out).toHaveLength(2)
      expect(out).toContainEqual({ jsonrpc: "2.0", id: 7, result: { a: 1 } })
      expect(out).toContainEqual({ jsonrpc: "2.0", id: "seven", result: [1] })
    })
  )

  it.live("answers a bad line with -32700 (id null) and the next request as usual", () =>
    Effect.gen(function* () {
      const out = parseNdjson(yield* session(["{bad\n", req(1, "echo", {})]))
      expect(out[0]).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } })
      expect(out[1]).toEqual({ jsonrpc: "2.0", id: 1, result: {} })
    })
  )

  it.live("maps invalid requests to -32600, unknown methods to -32601, typed failures to their code", () =>
    Effect.gen(function* () {
      const out = parseNdjson(
        yield* session(['{"jsonrpc":"1.0","id":1,"method":"echo"}\n', "42\n", req(2, "nope"), req(3, "bad"), req(4, "echo", {})])
      )
      const byId = new Map(out.map((r) => [r.id, r]))
      expect(byId.get(1).error.code).toBe(-32600)
      expect(out.find((r) => r.id === null).error.code).toBe(-32600)
      expect(byId.get(2).error).toMatchObject({ code: -32601, message: "Method not found: nope" })
      expect(byId.get(3).error).toMatchObject({ code: -32602, data: { issues: ["x: is required"] } })
      expect(byId.get(4).result).toEqual({})
    })
  )

  it.live("a handler defect still gets its one reply, -32603, with the id", () =>
    Effect.gen(function* () {
      const out = parseNdjson(yield* session([req("d", "boom"), req("e", "echo", {})]))
      expect(out.find((r) => r.id === "d").error.code).toBe(-32603)
      expect(out.find((r) => r.id === "e").result).toEqual({})
    })
  )

  it.live("answers a batch with an array, without entries for notifications", () =>
    Effect.gen(function* () {
      const batch = JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "echo", params: { x: 1 } },
        { jsonrpc: "2.0", method: "echo" },
        { jsonrpc: "2.0", id: 2, method: "nope" },
        7
      ])
      const out = parseNdjson(yield* session([batch + "\n", "[]\n"]))
      expect(Array.isArray(out[0])).toBe(true)
      expect(out[0]).toHaveLength(3)
      expect(out[0]).toContainEqual({ jsonrpc: "2.0", id: 1, result: { x: 1 } })
      expect(out[0].find((r: any) => r.id === 2).error.code).toBe(-32601)
      expect(out[0].find((r: any) => r.id === null).error.code).toBe(-32600)
      expect(out[1]).toMatchObject({ id: null, error: { code: -32600 } })
    })
  )

  it.live("runs requests concurrently: a fast one is answered before a slow one sent earlier", () =>
    Effect.gen(function* () {
      const out = parseNdjson(yield* session([req(1, "slow", { ms: 300 }), req(2, "echo", ["fast"])]))
      expect(out.map((r) => r.id)).toEqual([2, 1])
    })
  )

  it.live("notifications/cancelled interrupts the matching request, which replies -32800 once", () =>
    Effect.gen(function* () {
      const cancel = JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "h" } }) + "\n"
      const out = parseNdjson(yield* session([req("h", "hang"), cancel, req("after", "echo", [1])], { gapMs: 20 }))
      expect(out.filter((r) => r.id === "h")).toEqual([
        { jsonrpc: "2.0", id: "h", error: { code: -32800, message: "Request cancelled" } }
      ])
      expect(out.find((r) => r.id === "after").result).toEqual([1])
    })
  )

  it.live("a cancellation in the same chunk as its request still finds it", () =>
    Effect.gen(function* () {
      const cancel = JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 9 } })
      const out = parseNdjson(yield* session([req(9, "hang") + cancel + "\n"]))
      expect(out).toEqual([{ jsonrpc: "2.0", id: 9, error: { code: -32800, message: "Request cancelled" } }])
    })
  )

  it.live("at end of input, requests still running get their reply, or -32800 after the drain bound", () =>
    Effect.gen(function* () {
      const out = parseNdjson(yield* session([req(1, "slow", { ms: 100 }), req(2, "hang")], { drainMs: 300 }))
      expect(out.find((r) => r.id === 1).result).toBe("slow done")
      expect(out.find((r) => r.id === 2).error.code).toBe(-32800)
    })
  )

  it.live("replies in Content-Length framing to a Content-Length client, notifications included", () =>
    Effect.gen(function* () {
      const written = yield* session([cl(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "notify" }))])
      const all = written.join("")
      const frames = texts(decodeAll([all]).frames).map((t) => JSON.parse(t as string))
      expect(decodeAll([all]).framing).toBe("content-length")
      expect(frames).toContainEqual({ jsonrpc: "2.0", method: "notifications/progress", params: { n: 1 } })
      expect(frames).toContainEqual({ jsonrpc: "2.0", id: 1, result: "notified" })
    })
  )

  it.live("rejects a frame over the size limit with a clear error and answers the next one", () =>
    Effect.gen(function* () {
      const out = parseNdjson(
        yield* session([req(1, "echo", { pad: "x".repeat(2000) }), req(2, "echo", ["ok"])], { maxFrameBytes: 500 })
      )
      // The id is read from the edges of the dropped frame: the request still gets its one reply.
      expect(out[0]).toMatchObject({ id: 1, error: { code: -32600 } })
      expect(out[0].error.message).toMatch(/exceeds the limit of 500 bytes/)
      expect(out[1]).toEqual({ jsonrpc: "2.0", id: 2, result: ["ok"] })
    })
  )

  it.live("many concurrent replies never interleave: every written chunk is whole frames", () =>
    Effect.gen(function* () {
      const chunks = Array.from({ length: 300 }, (_, i) => req(i, "echo", { i, pad: "y".repeat(i) }))
      const written = yield* session([chunks.join("")])
      // Frames queued together may leave in one write, but a write never ends inside a frame.
      for (const chunk of written) expect(chunk.endsWith("\n")).toBe(true)
      const frames = written.flatMap((chunk) => chunk.trimEnd().split("\n"))
      expect(frames).toHaveLength(300)
      for (const frame of frames) expect(() => JSON.parse(frame)).not.toThrow()
      expect(new Set(frames.map((w) => JSON.parse(w).id)).size).toBe(300)
    })
  )

  it.live("stop ends the connection although input never ends", () =>
    Effect.gen(function* () {
      const stop = yield* Deferred.make<void>()
      const inputQueue = yield* Queue.unbounded<Uint8Array>()
      yield* Queue.offer(inputQueue, bytes(req(1, "echo", ["x"])))
      const written: Array<string> = []
      const fiber = yield* Stdio.serve({
        input: Stream.fromQueue(inputQueue),
        output: Sink.forEach((s: string) => Effect.sync(() => written.push(s))),
        connect: Stdio.peer(testHandlers),
        maxFrameBytes: 1024,
        stop
      }).pipe(Effect.forkChild)
      yield* Effect.sleep(50)
      yield* Deferred.succeed(stop, undefined)
      yield* Fiber.join(fiber).pipe(Effect.timeout(2_000))
      expect(
        Chunk.fromIterable(written).pipe(
          Chunk.map((s) => JSON.parse(s).id),
          Chunk.toReadonlyArray
        )
      ).toEqual([1])
    })
  )
})
