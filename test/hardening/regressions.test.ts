/**
 * The bugs the hardening tests found, pinned at the level of the module that had them (the
 * end-to-end tests in this folder show them through the CLI).
 */
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { formatIssues } from "../../src/config/Config.js"
import { BackendError, toRpcError } from "../../src/protocol/Errors.js"
import { encode, failure, success } from "../../src/jsonrpc/JsonRpc.js"
import { validateParams } from "../../src/orchestration/Orchestrator.js"
import * as Secrets from "../../src/observability/Secrets.js"

const deep = (depth: number) => JSON.parse(`${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`)

describe("values nested too deeply for recursive code", () => {
  it("invalid params holding one are still -32602 with the path, not a defect", () => {
    const result = validateParams({ query: deep(20_000), context: { activeDocumentURI: deep(20_000) } })
    expect(result._tag).toBe("Failure")
    if (result._tag === "Failure") {
      // The same lines as for a shallow value, the value itself aside.
      expect(result.failure.issues).toEqual([
        "query: Expected string, actual a value nested too deeply to show",
        "context.activeDocumentURI: Expected string, actual a value nested too deeply to show",
        "context.activeDocumentURI: Expected null, actual a value nested too deeply to show"
      ])
      // Effect 4 tries only the branches a value's type fits (an object is never `null`'s), so
      // the shallow value's lines are these three too.
      const shallow = validateParams({ query: { a: 1 }, context: { activeDocumentURI: { a: 1 } } })
      expect(shallow._tag === "Failure" && shallow.failure.issues.map((line) => line.replace(/actual .*$/, "actual …"))).toEqual(
        result.failure.issues.map((line) => line.replace(/actual .*$/, "actual …"))
      )
    }
  })

  it("formatIssues keeps Effect's messages when the value can be printed", () => {
    const error = Schema.decodeUnknownResult(Schema.Struct({ n: Schema.Number }), { reportInput: true })({ n: "x" })
    expect(error._tag === "Failure" && formatIssues(error.failure)).toEqual(['n: Expected number, actual "x"'])
  })

  it("a reply whose result cannot be encoded becomes -32603 for the same id; an error loses only its data", () => {
    const result = JSON.parse(encode("ndjson", success(7, { structuredContent: deep(200_000) })))
    expect(result).toMatchObject({ jsonrpc: "2.0", id: 7, error: { code: -32603 } })
    expect(result.error.message).toMatch(/^Internal error: the result cannot be encoded as JSON/)
    const error = JSON.parse(
      encode("ndjson", failure("e", { code: -32004, message: "Backend 'b' failed: x", data: deep(200_000) }))
    )
    expect(error).toEqual({ jsonrpc: "2.0", id: "e", error: { code: -32004, message: "Backend 'b' failed: x" } })
    const framed = encode("content-length", [success(1, {}), success(2, deep(200_000))])
    const body = framed.slice(framed.indexOf("\r\n\r\n") + 4)
    expect(Buffer.byteLength(body)).toBe(Number(/Content-Length: (\d+)/.exec(framed)![1]))
    expect(JSON.parse(body).map((r: any) => r.error?.code ?? "ok")).toEqual(["ok", -32603])
    // A notification that cannot be encoded is not sent at all (no one to tell).
    expect(encode("ndjson", { jsonrpc: "2.0", method: "notifications/progress", params: deep(200_000) })).toBe("")
  })

  it("toRpcError never throws: data too deep to scrub is left out, never sent unscrubbed", () => {
    Secrets.register("a-registered-secret-for-scrubDeep")
    const wire = toRpcError(new BackendError({ backendId: "b", reason: "call_failed", summary: "deep", detail: deep(200_000) }))
    expect(wire).toEqual({ code: -32004, message: "Backend 'b' failed: deep" })
  })
})

describe("secrets holding characters JSON escapes", () => {
  it("are masked in their JSON-escaped forms too (log lines are scrubbed as JSON)", () => {
    const secret = 'pa"ss\\word\n-8c3f1'
    Secrets.register(secret)
    const once = JSON.stringify(secret).slice(1, -1)
    const twice = JSON.stringify(once).slice(1, -1)
    expect(Secrets.scrub(`raw ${secret}`)).toBe("raw <redacted>")
    expect(Secrets.scrub(JSON.stringify({ msg: `value ${secret}` }))).toBe('{"msg":"value <redacted>"}')
    expect(Secrets.scrub(`line: ${twice}`)).toBe("line: <redacted>")
  })
})

describe("secrets in every form they travel in", () => {
  const secret = "s3cret+Value/with=odd&chars-91"

  it("URL-encoded and base64 forms (any alignment, standard and url-safe) are masked", () => {
    Secrets.register(secret)
    expect(Secrets.scrub(`?token=${encodeURIComponent(secret)}&x=1`)).toBe("?token=<redacted>&x=1")
    for (const prefix of ["", "a", "ab", "abc"]) {
      const b64 = Buffer.from(`${prefix}${secret}tail`).toString("base64")
      expect(Secrets.scrub(`Basic ${b64}`)).toContain("<redacted>")
      const url = Buffer.from(`${prefix}${secret}tail`).toString("base64url")
      expect(Secrets.scrub(url)).toContain("<redacted>")
    }
  })

  it("a cut through a secret leaks neither half", () => {
    Secrets.register(secret)
    const line = `${"x".repeat(1990)}${secret}${"y".repeat(100)}`
    const cut = Secrets.scrubAndCut(line, 2000)
    expect(cut).toHaveLength(2000)
    expect(cut).not.toContain(secret.slice(0, 10))
  })

  it("text flushed in pieces never ends inside a secret that may go on", () => {
    Secrets.register(secret)
    const pending = `${"x".repeat(100)}${secret.slice(0, 12)}`
    const n = Secrets.flushableLength(pending)
    expect(n).toBeLessThanOrEqual(100)
    const whole = `${"x".repeat(100)}${secret}${"z".repeat(200)}`
    const m = Secrets.flushableLength(whole)
    expect(Secrets.scrub(whole.slice(0, m))).not.toContain(secret.slice(0, 6))
    expect(m).toBeGreaterThan(100)
  })
})
