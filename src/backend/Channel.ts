/**
 * What carries a backend's messages: messages out (each with its frame, encoded once by the
 * connection, so no transport parses what the gateway just wrote), frames in, diagnostics, and an
 * end with a reason. Implemented by a child process's pipes (`ProcessChannel`) and by each remote transport
 * (`remote/`); the backend's JSON-RPC connection (`Connection`) is the same over all of them.
 */
import type { Frame } from "../jsonrpc/JsonRpc.js"
import type { Tool } from "../protocol/Mcp.js"
import { field } from "../json/Json.js"

export type TooLarge = Extract<Frame, { _tag: "TooLarge" }>

/** How a channel ended: a process's exit code or signal, or why a server cannot be reached. */
export interface ChannelEnd {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  /** A remote server's words for its loss ("could not be reached (...)"); undefined for a process. */
  readonly reason?: string | undefined
}

/** Where a channel delivers what it reads. Called synchronously, in the order things happened. */
export interface Receiver {
  /** One frame of text: a JSON-RPC message or batch, or junk (a banner, a notice). */
  readonly text: (line: string) => void
  /** One message a transport already parsed (`raw`: its text, for the log if it is not JSON-RPC). */
  readonly message: (message: unknown, raw: string) => void
  /** A frame over the limit, dropped as it streamed by (its id, when it showed, fails its call). */
  readonly oversized: (frame: TooLarge) => void
  /**
   * One line of diagnostics, not yet scrubbed: the process's stderr, a remote transport's notes;
   * `own`: the channel's own remark (logged as the gateway's, not as the backend's output).
   */
  readonly diagnostic: (line: string, own?: boolean) => void
  /** The peer stopped sending (a process closed its stdout) while the channel is still open. */
  readonly inputEnded: () => void
  /** The channel ended: nothing can be written from now on. What was already read follows. */
  readonly ended: (end: ChannelEnd) => void
  /** Everything the channel had read was delivered: nothing more will come. */
  readonly finished: () => void
}

export type WriteOutcome = "ok" | "closed" | "full" | "stalled"

/** A JSON-RPC message the gateway sends: a request, a notification or a reply. */
export interface Outgoing {
  readonly jsonrpc: "2.0"
  readonly id?: string | number | null
  readonly method?: string
  readonly params?: unknown
  readonly result?: unknown
  readonly error?: unknown
}

/**
 * One message on its way out, and its frame (JSON text ending in a newline), encoded once by the
 * connection: a process's pipe takes the text, a remote transport reads the message too (its
 * headers, its session) and sends the same text as its body.
 */
export interface Outbound {
  readonly message: Outgoing
  readonly text: string
}

export interface Channel {
  /** The process id; undefined for a remote server. */
  readonly pid: number | undefined
  /** The marker of a process tree (see Reaper); "" for a remote server. */
  readonly tag: string
  /** Where it goes, as it may be printed: "pid 123", or a URL without credentials. */
  readonly address: string
  readonly remote: boolean
  /**
   * Queues one message. "stalled": bytes wait and the peer has taken none for a while; "full":
   * taking it would hold too much for the peer. `force` writes anyway (a reply the peer waits on).
   */
  write(out: Outbound, force: boolean): WriteOutcome
  /** Bytes waiting for the peer, and since when it has taken none (for the error that says so). */
  backlog(): { readonly bytes: number; readonly idleMs: number }
  /** No more frames will be written (a process's stdin is closed once what waits is flushed). */
  endInput(): void
  /** Ends it at once from the gateway's side: a process's group is signalled, a session ended. */
  abort(): void
  /** Releases what it holds once it ended. */
  dispose(): void
  /** The backend's tools as it listed them, for a transport whose requests name their arguments (SEP-2243). */
  toolsListed?(tools: ReadonlyArray<Tool>): void
}

/**
 * The HTTP status of an error reply a remote transport wrote for a request the server refused
 * (`data.httpStatus`): how it is told from the server's own JSON-RPC errors.
 */
export const httpStatusOf = (error: unknown): number | undefined => {
  const status = field(field(error, "data"), "httpStatus")
  return typeof status === "number" ? status : undefined
}

/** Whether an error reply says a person must sign in first (see remote/RemoteChannel `NEEDS_AUTH`). */
export const needsAuthOf = (error: unknown): boolean => field(field(error, "data"), "needsAuth") === true

/**
 * The scopes a remote server's 403 `insufficient_scope` asked for, when an error reply is one (see
 * remote/RemoteChannel `INSUFFICIENT_SCOPE`): the call needs a token with more.
 */
export const insufficientScopeOf = (error: unknown): ReadonlyArray<string> | undefined => {
  const wanted = field(field(error, "data"), "insufficientScope")
  return Array.isArray(wanted) ? wanted.filter((s): s is string => typeof s === "string") : undefined
}
