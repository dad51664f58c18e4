/**
 * A tiny local server speaking the Chat Completions API, so the real `openai` client can be
 * tested without a network: it records every request and answers from a per-test script.
 *
 * `startFakeOpenAI()` is plain async (for scripts); `fakeOpenAI` is the same as a scoped Effect
 * resource for @effect/vitest's `it.live`.
 */
import { Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export type FakeReply =
  /** One tool call; an object is JSON-stringified, a string is sent raw. */
  | { readonly tool: string; readonly arguments?: unknown; readonly id?: string }
  | { readonly toolCalls: ReadonlyArray<{ readonly name: string; readonly arguments?: unknown }> }
  /** An answer without a tool call. */
  | { readonly text: string }
  /** An HTTP error with an OpenAI-style body. A 429 gets `retry-after: 0` unless `headers` say otherwise. */
  | {
      readonly status: number
      readonly message?: string
      readonly type?: string
      readonly code?: string
      readonly headers?: Readonly<Record<string, string>>
    }
  /** 200 with a body that is not a Chat Completion (non-JSON unless `body` says otherwise). */
  | { readonly garbage: string; readonly contentType?: string }
  /** 200 with any JSON body (e.g. a completion without choices). */
  | { readonly json: unknown }
  /** Never answers; the server counts the client giving up in `aborted`. */
  | { readonly hang: true }

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  /** The parsed JSON body, or undefined if it was not JSON. */
  readonly body: any
}

export interface FakeOpenAI {
  /** `http://127.0.0.1:<port>/v1`, what OPENAI_BASE_URL would be. */
  readonly baseUrl: string
  /** `http://127.0.0.1:<port>`: the server also answers `/chat/completions` without `/v1`. */
  readonly origin: string
  /** The model's turns. */
  readonly requests: ReadonlyArray<RecordedRequest>
  /** The first turns that offered `agentify_plan` and called tools: each gave a plan naming every function offered. */
  readonly plans: ReadonlyArray<RecordedRequest>
  /** Requests whose client went away before the answer was complete. */
  readonly aborted: number
  /**
   * The reply to an orchestration's first request, or a sequence of them (the last one repeats).
   * A later step's request (one that carries tool results) is answered `{ text: "Done." }`, as a
   * model answers once its call ran, unless `setSteps` says otherwise.
   */
  readonly setReply: (reply: FakeReply | ReadonlyArray<FakeReply>) => void
  /** The reply for each step of an orchestration (1 + the model turns in the request), the last repeating. */
  readonly setSteps: (replies: ReadonlyArray<FakeReply>) => void
  /** Resolves once `n` requests have arrived; rejects after `timeoutMs`. */
  readonly untilRequests: (n: number, timeoutMs?: number) => Promise<void>
  /** Resolves once `n` requests have been aborted by the client; rejects after `timeoutMs`. */
  readonly untilAborted: (n: number, timeoutMs?: number) => Promise<void>
  readonly close: () => Promise<void>
}

const completion = (model: unknown, message: Record<string, unknown>, finish: string) => ({
  id: `chatcmpl-fake-${Math.random().toString(36).slice(2, 10)}`,
  object: "chat.completion",
  created: Math.floor(Date.now() / 1000),
  model: typeof model === "string" ? model : "fake-model",
  choices: [{ index: 0, message: { role: "assistant", refusal: null, ...message }, finish_reason: finish, logprobs: null }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }
})

const PLAN = "agentify_plan"

const argumentsText = (args: unknown) => (typeof args === "string" ? args : JSON.stringify(args ?? {}))

export const startFakeOpenAI = async (initial: FakeReply | ReadonlyArray<FakeReply> = { text: "ok" }): Promise<FakeOpenAI> => {
  const requests: Array<RecordedRequest> = []
  const plans: Array<RecordedRequest> = []
  let aborted = 0
  let script: ReadonlyArray<FakeReply> = Array.isArray(initial) ? initial : [initial as FakeReply]
  const waiters = new Set<() => void>()
  const notify = () => waiters.forEach((w) => w())

  const until = (what: string, done: () => boolean, timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      if (done()) return resolve()
      const check = () => {
        if (done()) {
          clearTimeout(timer)
          waiters.delete(check)
          resolve()
        }
      }
      const timer = setTimeout(() => {
        waiters.delete(check)
        reject(new Error(`fakeOpenAI: timed out waiting for ${what} (requests=${requests.length}, aborted=${aborted})`))
      }, timeoutMs)
      waiters.add(check)
    })

  const send = (res: http.ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/json", ...headers })
    res.end(body)
  }

  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const path = (req.url ?? "/").split("?")[0]!
      const raw = Buffer.concat(chunks).toString("utf8")
      let body: unknown
      try {
        body = JSON.parse(raw)
      } catch {
        body = undefined
      }
      const index = requests.length
      requests.push({ method: req.method ?? "", path, headers: req.headers, body })
      // A client that gives up before the answer is complete closes the connection.
      res.on("close", () => {
        if (!res.writableFinished) {
          aborted++
          notify()
        }
      })
      notify()

      if (req.method !== "POST" || (path !== "/v1/chat/completions" && path !== "/chat/completions")) {
        return send(
          res,
          404,
          JSON.stringify({ error: { message: `Unknown route ${req.method} ${path}`, type: "invalid_request_error" } })
        )
      }
      const model = (body as { model?: unknown } | undefined)?.model
      const step =
        1 +
        ((body as { messages?: Array<{ role?: unknown }> } | undefined)?.messages ?? []).filter((m) => m.role === "assistant")
          .length
      const reply =
        steps !== undefined
          ? steps[Math.min(step - 1, steps.length - 1)]!
          : step > 1
            ? ({ text: "Done." } as const)
            : script[Math.min(index - countBefore, script.length - 1)]!
      if ("hang" in reply) return
      if ("status" in reply) {
        const headers = { ...(reply.status === 429 ? { "retry-after": "0" } : {}), ...reply.headers }
        return send(
          res,
          reply.status,
          JSON.stringify({
            error: {
              message: reply.message ?? `fake error ${reply.status}`,
              type: reply.type ?? "fake_error",
              param: null,
              code: reply.code ?? null
            }
          }),
          headers
        )
      }
      if ("garbage" in reply) {
        res.writeHead(200, { "content-type": reply.contentType ?? "application/json" })
        return res.end(reply.garbage)
      }
      if ("json" in reply) return send(res, 200, JSON.stringify(reply.json))
      if ("text" in reply) return send(res, 200, JSON.stringify(completion(model, { content: reply.text }, "stop")))
      const scripted = "toolCalls" in reply ? reply.toolCalls : [{ name: reply.tool, arguments: reply.arguments }]
      // A first turn that offers agentify_plan gives the plan with its calls, as a model must,
      // naming every function offered (see orchestration/Planning); kept in `plans` too.
      const offered = ((body as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map((t) => t.function.name)
      const planning = step === 1 && offered.includes(PLAN) && !scripted.some((c) => c.name === PLAN)
      if (planning) plans.push({ method: req.method ?? "", path, headers: req.headers, body })
      const calls = planning ? [{ name: PLAN, arguments: { tools: offered.filter((n) => n !== PLAN) } }, ...scripted] : scripted
      const tool_calls = calls.map((call, i) => ({
        id: "id" in reply && reply.id !== undefined && i === 0 ? reply.id : `call_fake_${index}_${i}`,
        type: "function",
        function: { name: call.name, arguments: argumentsText(call.arguments) }
      }))
      send(res, 200, JSON.stringify(completion(model, { content: null, tool_calls }, "tool_calls")))
    })
  })

  // The script's sequence restarts at each `setReply`.
  let countBefore = 0
  let steps: ReadonlyArray<FakeReply> | undefined = undefined

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve())
  })
  const { port } = server.address() as AddressInfo
  const origin = `http://127.0.0.1:${port}`

  return {
    baseUrl: `${origin}/v1`,
    origin,
    requests,
    plans,
    get aborted() {
      return aborted
    },
    setReply: (reply) => {
      script = Array.isArray(reply) ? reply : [reply as FakeReply]
      countBefore = requests.length
      steps = undefined
    },
    setSteps: (replies) => {
      steps = replies
    },
    untilRequests: (n, timeoutMs = 5_000) => until(`${n} request(s)`, () => requests.length >= n, timeoutMs),
    untilAborted: (n, timeoutMs = 5_000) => until(`${n} aborted request(s)`, () => aborted >= n, timeoutMs),
    close: () =>
      new Promise<void>((resolve) => {
        // Hung requests and keep-alive sockets would hold `close` open forever.
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** The fake as a scoped resource: closed when the test's scope closes. */
export const fakeOpenAI = (initial?: FakeReply | ReadonlyArray<FakeReply>) =>
  Effect.acquireRelease(
    Effect.promise(() => startFakeOpenAI(initial)),
    (fake) => Effect.promise(() => fake.close())
  )

/**
 * A tool message's text without the gateway's data marks (`<data-CODE>` lines: see
 * orchestration/Results.asData); throws when they are missing, so that a test reading through
 * them also checks they are there.
 */
export const unmarked = (content: string): string => {
  const match = /^<(data-[0-9a-f]{12})>\n([\s\S]*)\n<\/\1>$/.exec(content)
  if (match === null) throw new Error(`not marked as data: ${content.slice(0, 80)}`)
  return match[2]!
}
