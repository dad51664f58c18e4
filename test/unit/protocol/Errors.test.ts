import { describe, expect, it } from "@effect/vitest"
import * as Secrets from "../../../src/observability/Secrets.js"
import {
  BackendError,
  codeOf,
  type GatewayError,
  InternalError,
  InvalidParams,
  InvalidRequest,
  MethodNotFound,
  MissingClientCapability,
  NotConfigured,
  NotInitialized,
  PolicyDenied,
  Relayed,
  RequestCancelled,
  SignInFailed,
  sentCode,
  TaskEnded,
  toRpcError,
  UnknownTask,
  UrlElicitationRequired,
  type WireError
} from "../../../src/protocol/Errors.js"
import {
  CallHeld,
  InvalidPlan,
  LlmRequestFailed,
  NoActionDetermined,
  OrchestrationFailed
} from "../../../src/orchestration/Errors.js"
import { CallRefused } from "../../../src/call/Vocabulary.js"

type Tag = GatewayError["_tag"]

/** One of each member of the closed set, with the code it reaches the wire with: a new member without a row does not compile. */
const members: { readonly [T in Tag]: readonly [Extract<GatewayError, { readonly _tag: T }>, number] } = {
  InvalidRequest: [new InvalidRequest({ message: "The session is shutting down" }), -32600],
  MethodNotFound: [new MethodNotFound({ message: "Method not found: x" }), -32601],
  InternalError: [new InternalError({ message: "the task stopped" }), -32603],
  RequestCancelled: [new RequestCancelled({ message: "the task was cancelled", data: { taskId: "t" } }), -32800],
  InvalidParams: [new InvalidParams({ message: "Invalid params: x", issues: ["x: is required"] }), -32602],
  UnknownTask: [new UnknownTask({ taskId: "t" }), -32602],
  TaskEnded: [new TaskEnded({ taskId: "t" }), -32602],
  PolicyDenied: [new PolicyDenied({ message: "orchestrate of x refused by policies: no", policies: ["p"] }), -32602],
  NotInitialized: [new NotInitialized({ method: "tools/list" }), -32001],
  NotConfigured: [new NotConfigured({ message: "no key", missing: "OPENAI_API_KEY" }), -32002],
  BackendError: [new BackendError({ backendId: "b", reason: "timeout", summary: "timed out" }), -32004],
  SignInFailed: [new SignInFailed({ backendId: "b", summary: "no server" }), -32004],
  MissingClientCapability: [
    new MissingClientCapability({
      message: "Missing required client capability: sampling",
      requiredCapabilities: { sampling: {} }
    }),
    -32021
  ],
  UrlElicitationRequired: [new UrlElicitationRequired({ message: "sign in", elicitations: [{ url: "https://x" }] }), -32042],
  Relayed: [new Relayed({ from: "backend", code: sentCode(-32099), message: "the backend's own" }), -32099],
  NoActionDetermined: [new NoActionDetermined({ query: "q" }), -32000],
  LlmRequestFailed: [new LlmRequestFailed({ reason: "auth", message: "key refused" }), -32003],
  InvalidPlan: [new InvalidPlan({ message: "no such tool", toolName: "t" }), -32003],
  CallHeld: [new CallHeld({ message: "held", toolName: "t", rules: ["r"] }), -32602],
  CallRefused: [new CallRefused({ stage: "count", code: -32029, message: "Too many calls" }), -32029],
  OrchestrationFailed: [new OrchestrationFailed({ failure: new NotInitialized({ method: "m" }), query: "q" }), -32001]
}

/** What the type system refuses: never run, checked by tsc (`npm test` runs it first). */
export const refused = () => {
  // @ts-expect-error the gateway's own failures carry their class's code, none of their own
  new InternalError({ message: "x", code: -32099 })
  // @ts-expect-error a refusal is -32602 (a rule's, the user's) or -32029 (a limit)
  new CallRefused({ stage: "count", code: -32099, message: "x" })
  // @ts-expect-error a relayed code is one a peer sent (`sentCode`), not a number picked here
  new Relayed({ from: "backend", code: -32099, message: "x" })
  // @ts-expect-error the wire's codes are the table's (or a sent one)
  const wire: WireError = { code: -32099, message: "x" }
  // @ts-expect-error the set is closed: an error-like object of another tag is no GatewayError
  const open: GatewayError = { _tag: "Custom", code: -32099, message: "x", data: undefined }
  return [wire, open]
}

describe("the closed set of failures", () => {
  it("each member reaches the wire with its code, and codeOf agrees", () => {
    for (const [tag, [error, code]] of Object.entries(members)) {
      expect({ tag, code: toRpcError(error).code }).toEqual({ tag, code })
      expect({ tag, code: codeOf(error) }).toEqual({ tag, code })
      expect(error._tag).toBe(tag)
    }
  })

  it("each says what it said as RpcError did: the same message and data", () => {
    expect(toRpcError(members.UnknownTask[0])).toEqual({ code: -32602, message: "Unknown task: t", data: { taskId: "t" } })
    expect(toRpcError(members.TaskEnded[0])).toEqual({ code: -32602, message: "Task t has ended: it cannot be cancelled" })
    expect(toRpcError(members.PolicyDenied[0])).toEqual({
      code: -32602,
      message: "orchestrate of x refused by policies: no",
      data: { rule: "policies", policies: ["p"] }
    })
    expect(toRpcError(members.SignInFailed[0])).toEqual({ code: -32004, message: "Backend 'b' failed: no server" })
    expect(toRpcError(members.MissingClientCapability[0])).toEqual({
      code: -32021,
      message: "Missing required client capability: sampling",
      data: { requiredCapabilities: { sampling: {} } }
    })
    expect(toRpcError(members.UrlElicitationRequired[0])).toEqual({
      code: -32042,
      message: "sign in",
      data: { elicitations: [{ url: "https://x" }] }
    })
    expect(toRpcError(members.InternalError[0])).toEqual({ code: -32603, message: "the task stopped" })
    expect(toRpcError(members.Relayed[0])).toEqual({ code: -32099, message: "the backend's own" })
  })

  it("a backend's -32042 and -32021 pass through as it sent them; its other codes are -32004", () => {
    const sent = (detail: unknown) => new BackendError({ backendId: "b", reason: "call_failed", summary: "s", detail })
    const url = { code: -32042, message: "Sign in first", data: { elicitations: [{ mode: "url", url: "https://idp/x" }] } }
    const capability = { code: -32021, message: "Missing capability", data: { requiredCapabilities: { sampling: {} } } }
    expect(toRpcError(sent(url))).toEqual(url)
    expect(toRpcError(sent(capability))).toEqual(capability)
    expect(codeOf(sent(url))).toBe(-32042)
    expect(codeOf(sent(capability))).toBe(-32021)
    const other = sent({ code: -32000, message: "nope" })
    expect(toRpcError(other)).toMatchObject({ code: -32004, message: "Backend 'b' failed: s" })
    expect(codeOf(other)).toBe(-32004)
    // Not a call's own failure (a timeout), or no message: the gateway's -32004.
    expect(codeOf(new BackendError({ backendId: "b", reason: "timeout", summary: "s", detail: url }))).toBe(-32004)
    expect(codeOf(sent({ code: -32042 }))).toBe(-32004)
  })

  it("an orchestration's failure keeps its own form, its data with the query added (a passed-through code too)", () => {
    const url = { code: -32042, message: "Sign in first", data: { elicitations: [] } }
    const inner = new BackendError({ backendId: "b", reason: "call_failed", summary: "s", detail: url })
    const failed = new OrchestrationFailed({ failure: inner, query: "list files" })
    expect(toRpcError(failed)).toEqual({ ...url, data: { elicitations: [], query: "list files" } })
    expect(codeOf(failed)).toBe(-32042)
    expect(failed.message).toBe(inner.message)
    // No query, no data: an empty data object, as before.
    expect(toRpcError(new OrchestrationFailed({ failure: new InternalError({ message: "x" }), query: undefined }))).toEqual({
      code: -32603,
      message: "x",
      data: {}
    })
  })

  it("every message and data is scrubbed at the mapping, whoever made them", () => {
    const secret = "sk-closed-set-secret-4711"
    Secrets.register(secret)
    const said = `key ${secret} refused`
    const cases: ReadonlyArray<GatewayError> = [
      new InternalError({ message: said, data: { why: said } }),
      new Relayed({ from: "client", code: sentCode(-1), message: said, data: { nested: [said] } }),
      new BackendError({ backendId: "b", reason: "call_failed", summary: said, detail: { message: said } }),
      new BackendError({
        backendId: "b",
        reason: "call_failed",
        summary: "s",
        detail: { code: -32042, message: said, data: said }
      }),
      new LlmRequestFailed({ reason: "auth", message: said, steps: [{ said }] }),
      new OrchestrationFailed({ failure: new MethodNotFound({ message: said, data: { said } }), query: said }),
      new CallRefused({ stage: "decide", code: -32602, message: said, detail: { said } })
    ]
    for (const error of cases) {
      const wire = JSON.stringify(toRpcError(error))
      expect(wire).not.toContain(secret)
      expect(wire).toContain("<redacted>")
    }
  })
})
