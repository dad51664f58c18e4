/**
 * Policies on who may do what (`policies`): the questions the gateway asks of them and the
 * answers it acts on, apart from the engine that answers (see Cedar). A request names who asks
 * (the principal), what they do (the action), on what (the resource) and in which circumstances
 * (the context: the arguments, how the call was made, where its data came from).
 */

/** Who asks, as policies see them: `User::"<id>"` with these attributes. */
export interface Principal {
  /** The access token's subject over HTTP; "local" for the stdio client; "anonymous" without a token. */
  readonly id: string
  readonly scopes: ReadonlyArray<string>
  /** The token's `groups` claim; each is also a `Group::"<name>"` the user is in. */
  readonly groups: ReadonlyArray<string>
  /** The profile the session is served ("" for the whole aggregate). */
  readonly profile: string
  /** The client's `clientInfo.name` ("" when it gave none). */
  readonly client: string
}

export const ACTIONS = ["call", "read", "get", "orchestrate", "run_code"] as const
export type Action = (typeof ACTIONS)[number]

/** What is acted on: `Tool::"<name as listed>"`, `Resource::"<uri>"` or `Prompt::"<name>"`, in its `Backend`. */
export interface Resource {
  readonly type: "Tool" | "Resource" | "Prompt"
  readonly id: string
  /** The backend's id; "agentify" for the gateway's own tools. */
  readonly backend: string
  /** A tool's capabilities as the gateway takes them (the configuration's hints, its own, MCP's defaults). */
  readonly tool?: {
    readonly readOnly: boolean
    readonly destructive: boolean
    readonly openWorld: boolean
    readonly idempotent: boolean
  }
}

/** Where a call's data came from (the flow guard's facts), for the gateway's own calls. */
export interface FlowContext {
  /** The backends whose results were read before this call. */
  readonly read: ReadonlyArray<string>
  /** The backends some value of the arguments came from. */
  readonly argumentsFrom: ReadonlyArray<string>
  /** The call's tool was in the plan made before any data was read (true when there was no plan). */
  readonly planned: boolean
}

export interface Request {
  readonly principal: Principal
  readonly action: Action
  readonly resource: Resource
  /** The arguments as sent (a tool's, a prompt's). */
  readonly arguments?: unknown
  /** How the call was made: "client", "orchestration", "script", "task", "backend-endpoint". */
  readonly via: string
  readonly flow?: FlowContext | undefined
}

export type Verdict =
  | { readonly allowed: true }
  /** `policies`: the `@id`s of the policies that forbid it; none: no policy permits it. */
  | { readonly allowed: false; readonly policies: ReadonlyArray<string>; readonly why: string }

/** A loaded policy file, ready to answer. */
export interface PolicySet {
  /** The file it was read from. */
  readonly file: string
  /** Its policies' ids (`@id("...")`, else `policy<N>` by position). */
  readonly ids: ReadonlyArray<string>
  readonly decide: (request: Request) => Verdict
  /**
   * Whether the action on the resource could be allowed for the principal in some context (some
   * arguments, some way of calling): false only when every context is denied. What a listing
   * leaves out.
   */
  readonly mayEver: (principal: Principal, action: Action, resource: Resource) => boolean
}
