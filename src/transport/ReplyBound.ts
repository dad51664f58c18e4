/**
 * The largest frame a stdio client is sent (`maxReplyBytes`). The MCP SDK's stdio client drops a
 * line over 10 MiB and closes the connection: one oversized tool result would end the client's
 * session with every call in it. A reply over the bound becomes an error for its request, naming
 * the size, the setting and what to do instead; a notification over it is dropped (said in the log).
 */
import { encode, failure, type Framing, isId, isReply } from "../jsonrpc/JsonRpc.js"
import { field } from "../json/Json.js"
import { ErrorCode } from "../protocol/Errors.js"

/** Bytes of a frame, counted only when its length says it could be over the bound. */
const over = (frame: string, max: number): number | undefined => {
  if (frame.length * 3 <= max) return undefined
  const bytes = Buffer.byteLength(frame, "utf8")
  return bytes > max ? bytes : undefined
}

const MIB = 1024 * 1024
const size = (bytes: number) => (bytes >= MIB ? `${(bytes / MIB).toFixed(1)} MiB` : `${bytes} bytes`)

/** The error that stands for a reply too long to send. */
const refusal = (id: unknown, bytes: number, max: number) =>
  failure(isId(id) ? id : null, {
    code: ErrorCode.InternalError,
    message:
      `The reply is ${size(bytes)}, more than maxReplyBytes (${size(max)}) that this stdio client is sent in one message ` +
      `(the MCP SDK's client drops a longer one and disconnects). Ask for less (a range, a filter), read it in parts ` +
      `from a script (agentify_run_code returns only what the script keeps), or raise maxReplyBytes for a client that reads more.`,
    data: { bytes, maxReplyBytes: max }
  })

export interface Bounded {
  /** What to write: the frame, or the error that replaced it ("" when nothing is sent). */
  readonly frame: string
  /** Set when the message was replaced or dropped: its size. */
  readonly refused?: { readonly id: unknown; readonly bytes: number } | undefined
}

/** `message` in `framing`, kept within `max` bytes as described above. */
export const encodeBounded = (framing: Framing, message: unknown, max: number): Bounded => {
  const frame = encode(framing, message)
  const bytes = over(frame, max)
  if (bytes === undefined) return { frame }
  if (Array.isArray(message)) {
    // A batch's replies, each judged alone.
    const replies = message.map((reply) => {
      const one = encode("ndjson", reply)
      const length = over(one, max)
      return length === undefined ? reply : refusal(field(reply, "id") ?? null, length, max)
    })
    const batch = encode(framing, replies)
    return over(batch, max) === undefined
      ? { frame: batch, refused: { id: null, bytes } }
      : { frame: "", refused: { id: null, bytes } }
  }
  if (isReply(message)) {
    const id = field(message, "id") ?? null
    return { frame: encode(framing, refusal(id, bytes, max)), refused: { id, bytes } }
  }
  return { frame: "", refused: { id: undefined, bytes } }
}
