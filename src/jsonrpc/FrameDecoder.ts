/**
 * Byte framing, newline-delimited JSON and `Content-Length` headers (detected from the first
 * bytes): an incremental decoder, linear in its input, that never lets a bad frame stop the ones
 * after it. Used for the client's input and for every backend's stdout.
 */
import { type Framing, type Id, isId } from "./Message.js"
import { parseJson } from "../json/Json.js"

/** One unit cut from the byte stream. */
export type Frame =
  | { readonly _tag: "Text"; readonly text: string }
  | {
      readonly _tag: "TooLarge"
      readonly bytes: number
      /** The first and last bytes of the dropped frame (at most `FRAME_EDGE_BYTES` each), to find its id. */
      readonly head: string
      readonly tail: string
    }
  | { readonly _tag: "BadHeader"; readonly detail: string }

const LF = 0x0a
const CR = 0x0d
/** A header block this long without its blank line is not a header block. */
const MAX_HEADER_BYTES = 8 * 1024
const CONTENT_PREFIX = "content-"
const CONTENT_LENGTH_HEADER = "content-length:"
/** More digits than this is not a length any frame limit allows (and would lose precision). */
const MAX_LENGTH_DIGITS = 15
export const FRAME_EDGE_BYTES = 512

/**
 * An incremental decoder: bytes in, frames out. Framing is decided once, from the first
 * non-blank bytes; a partial frame is kept until its end arrives, but never more than
 * `maxFrameBytes` of it: past that the frame is dropped as it streams by and reported when it
 * ends, with its first and last bytes. Work and memory are linear in the input: pieces of a long
 * line are joined once, when its end arrives.
 */
export class FrameDecoder {
  framing: Framing | undefined
  /** Undecided framing: the first bytes. Content-Length: the unparsed rest. */
  private buffer: Buffer = Buffer.alloc(0)
  /** ndjson: the pieces of the current line, and their total length. */
  private parts: Array<Buffer> = []
  private partsLength = 0
  /** ndjson: dropping an oversized line until its end (its size so far, and its edges). */
  private dropping: { bytes: number; head: string; tail: Buffer } | undefined = undefined
  /** Content-Length: bytes still to skip of an oversized body. */
  private discarding = 0
  private discarded: { bytes: number; head: string; tail: Buffer } | undefined = undefined
  private bodyLength = -1

  constructor(
    readonly maxFrameBytes: number,
    framing?: Framing
  ) {
    this.framing = framing
  }

  push(chunk: Uint8Array): Array<Frame> {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    const out: Array<Frame> = []
    if (this.framing === undefined) {
      this.buffer = this.buffer.length === 0 ? bytes : Buffer.concat([this.buffer, bytes])
      const detected = detectFraming(this.buffer)
      if (detected === undefined) {
        if (this.buffer.length > MAX_HEADER_BYTES) this.framing = "ndjson"
        else return out
      } else {
        this.framing = detected
      }
      const pending = this.buffer
      this.buffer = Buffer.alloc(0)
      return this.framing === "ndjson" ? this.pushLines(pending, out) : this.pushHeaders(pending, out)
    }
    return this.framing === "ndjson" ? this.pushLines(bytes, out) : this.pushHeaders(bytes, out)
  }

  /** Called at end of input: a partial frame left over is reported, not silently lost. */
  end(): Array<Frame> {
    if (this.dropping !== undefined) {
      const frame = tooLarge(this.dropping)
      this.dropping = undefined
      return [frame]
    }
    if (this.discarding > 0 && this.discarded !== undefined) {
      this.discarding = 0
      return [tooLarge(this.discarded)]
    }
    if (this.framing === "ndjson") {
      const rest = Buffer.concat(this.parts)
      this.parts = []
      this.partsLength = 0
      const text = rest.toString("utf8")
      return text.trim() === "" ? [] : [{ _tag: "Text", text }]
    }
    const rest = this.buffer
    this.buffer = Buffer.alloc(0)
    if (rest.length === 0) return []
    if (this.framing === "content-length" && this.bodyLength < 0) {
      return isBlank(rest) ? [] : [{ _tag: "BadHeader", detail: "input ended inside a header block" }]
    }
    const text = rest.toString("utf8")
    return text.trim() === "" ? [] : [{ _tag: "Text", text }]
  }

  private pushLines(bytes: Buffer, out: Array<Frame>): Array<Frame> {
    let start = 0
    for (;;) {
      const nl = bytes.indexOf(LF, start)
      if (nl < 0) break
      const piece = bytes.subarray(start, nl)
      start = nl + 1
      if (this.dropping !== undefined) {
        out.push(tooLarge(addTail(this.dropping, piece)))
        this.dropping = undefined
        continue
      }
      const total = this.partsLength + piece.length
      const crlf = total > 0 && (piece.length > 0 ? piece[piece.length - 1] === CR : this.parts.at(-1)?.at(-1) === CR)
      const length = crlf ? total - 1 : total
      if (length > this.maxFrameBytes) {
        out.push(tooLarge(addTail(this.startDropping(piece), Buffer.alloc(0))))
        this.dropping = undefined
        continue
      }
      let line = piece
      if (this.parts.length > 0) {
        this.parts.push(piece)
        line = Buffer.concat(this.parts, total)
        this.parts = []
        this.partsLength = 0
      }
      if (length === 0) continue
      const text = line.toString("utf8", 0, length)
      if (text.trim() !== "") out.push({ _tag: "Text", text })
    }
    if (start < bytes.length) {
      const rest = bytes.subarray(start)
      if (this.dropping !== undefined) addTail(this.dropping, rest)
      else if (this.partsLength + rest.length > this.maxFrameBytes) this.startDropping(rest)
      else {
        // Copy: the caller may reuse its chunk, and a subarray would pin the whole of it.
        this.parts.push(Buffer.from(rest))
        this.partsLength += rest.length
      }
    }
    return out
  }

  /** The current line is over the limit: keep its edges, drop the rest from now on. */
  private startDropping(piece: Buffer): { bytes: number; head: string; tail: Buffer } {
    const head = Buffer.concat([...this.parts, piece.subarray(0, FRAME_EDGE_BYTES)]).subarray(0, FRAME_EDGE_BYTES)
    const dropping = { bytes: 0, head: head.toString("utf8"), tail: Buffer.alloc(0) }
    for (const part of this.parts) addTail(dropping, part)
    addTail(dropping, piece)
    this.parts = []
    this.partsLength = 0
    this.dropping = dropping
    return dropping
  }

  private pushHeaders(bytes: Buffer, out: Array<Frame>): Array<Frame> {
    let data = this.buffer.length === 0 ? bytes : Buffer.concat([this.buffer, bytes])
    this.buffer = Buffer.alloc(0)
    for (;;) {
      if (this.discarding > 0) {
        // A sender that lied about a length would make every later frame part of this body. A
        // header block (`Content-Length: N` and a blank line) cannot occur in JSON text, where
        // line breaks are escaped: one in the skipped bytes, at a line's start or glued to the
        // body before it (as LSP clients send frames), ends the skipping there.
        // Set with `discarding` (see below): the frame being skipped, as it will be reported.
        const discarded = this.discarded ?? { bytes: 0, head: "", tail: Buffer.alloc(0) }
        const span = data.subarray(0, Math.min(data.length, this.discarding))
        const found = gluedHeader(span)
        // A header whose blank line has not arrived, or a name split at the chunk's end, is kept
        // for the next chunk; what comes before it is skipped now.
        const keepFrom =
          found?.complete === false
            ? found.at
            : found === undefined && span.length === data.length && this.discarding > span.length
              ? Math.max(0, span.length - (CONTENT_LENGTH_HEADER.length - 1))
              : span.length
        const skipped = span.subarray(0, found?.complete === true ? found.at : keepFrom)
        addTail(discarded, skipped)
        this.discarding -= skipped.length
        data = data.subarray(skipped.length)
        if (found?.complete !== true && this.discarding > 0) break
        out.push(tooLarge(discarded))
        this.discarded = undefined
        this.discarding = 0
      }
      if (this.bodyLength >= 0) {
        if (data.length < this.bodyLength) break
        const body = data.subarray(0, this.bodyLength)
        data = data.subarray(this.bodyLength)
        this.bodyLength = -1
        out.push({ _tag: "Text", text: body.toString("utf8") })
        continue
      }
      // Blank lines between messages are tolerated.
      let skip = 0
      while (skip < data.length && (data[skip] === CR || data[skip] === LF || data[skip] === 0x20)) skip++
      data = data.subarray(skip)
      if (data.length === 0) break
      const end = headerEnd(data)
      if (end === undefined) {
        if (data.length > MAX_HEADER_BYTES) {
          out.push({ _tag: "BadHeader", detail: `no blank line after ${MAX_HEADER_BYTES} bytes of headers` })
          data = Buffer.alloc(0)
        }
        break
      }
      const header = data.subarray(0, end.headerLength).toString("latin1")
      data = data.subarray(end.headerLength + end.separatorLength)
      const length = contentLength(header)
      if (length === undefined) {
        out.push({ _tag: "BadHeader", detail: "missing or invalid Content-Length header" })
        continue
      }
      if (length > this.maxFrameBytes) {
        this.discarding = length
        this.discarded = {
          bytes: 0,
          head: data.subarray(0, Math.min(FRAME_EDGE_BYTES, length)).toString("utf8"),
          tail: Buffer.alloc(0)
        }
        continue
      }
      this.bodyLength = length
    }
    this.buffer = data.length === 0 ? data : Buffer.from(data)
    return out
  }
}

const tooLarge = (dropped: { bytes: number; head: string; tail: Buffer }): Frame => ({
  _tag: "TooLarge",
  bytes: dropped.bytes,
  head: dropped.head,
  tail: dropped.tail.toString("utf8")
})

/** Counts `piece` as dropped and keeps the last `FRAME_EDGE_BYTES` seen. */
const addTail = <T extends { bytes: number; tail: Buffer }>(dropped: T, piece: Buffer): T => {
  dropped.bytes += piece.length
  if (piece.length >= FRAME_EDGE_BYTES) dropped.tail = Buffer.from(piece.subarray(piece.length - FRAME_EDGE_BYTES))
  else if (piece.length > 0) {
    const joined = Buffer.concat([dropped.tail, piece])
    dropped.tail = joined.subarray(Math.max(0, joined.length - FRAME_EDGE_BYTES))
  }
  return dropped
}

/**
 * `Content-Length: N` as a header of its own line: at the start of the line, or after junk glued
 * before it (the leftover of a frame whose length was too short, `proto_` or a lone `-` included,
 * or the body of a header block without a length), but never as the end of a longer hyphenated
 * name (`X-Content-Length`). Header names are hyphenated; an underscore is junk's, not a name's.
 */
const CONTENT_LENGTH_LINE = /(?<![A-Za-z0-9]-)content-length[ \t]*:[ \t]*(\S*)[ \t]*$/i

/** The Content-Length of a header block, matched line by line; the value must be digits only. */
const contentLength = (header: string): number | undefined => {
  for (const line of header.split("\n")) {
    const match = CONTENT_LENGTH_LINE.exec(line.endsWith("\r") ? line.slice(0, -1) : line)
    if (match === null) continue
    const value = match[1] ?? ""
    if (!/^[0-9]+$/.test(value)) return undefined
    return value.length > MAX_LENGTH_DIGITS ? Number.POSITIVE_INFINITY : Number(value)
  }
  return undefined
}

/**
 * Where a whole header block with a valid Content-Length starts in `data`, wherever it is glued
 * (`complete`), or where one may start whose blank line has not arrived yet; undefined if none.
 */
const gluedHeader = (data: Buffer): { at: number; complete: boolean } | undefined => {
  for (let from = 0; ;) {
    const at = nameAt(data, from)
    if (at < 0) return undefined
    const rest = data.subarray(at, at + MAX_HEADER_BYTES)
    const end = headerEnd(rest)
    if (end === undefined) {
      const opening = rest.toString("latin1", 0, 64)
      if (rest.length < MAX_HEADER_BYTES && /^content-length:[ \t]*\d*[ \t]*(\r|\n|$)/i.test(opening)) {
        return { at, complete: false }
      }
    } else {
      // The header's own line holds nothing but the length (a JSON string could hold the words).
      const first = rest.toString("latin1", 0, end.headerLength).split("\n", 1)[0] ?? ""
      if (/^content-length:[ \t]*\d{1,15}[ \t]*\r?$/i.test(first)) return { at, complete: true }
    }
    from = at + 1
  }
}

/** The next `Content-Length:` in `data`, as clients write it or in lower case. */
const nameAt = (data: Buffer, from: number): number => {
  const proper = data.indexOf("Content-Length:", from, "latin1")
  const lower = data.indexOf(CONTENT_LENGTH_HEADER, from, "latin1")
  return proper < 0 ? lower : lower < 0 ? proper : Math.min(proper, lower)
}

/**
 * The id of a frame dropped for its size, from the edges kept of it: a top-level `"id"` near the
 * start (`{"jsonrpc":"2.0","id":7,...`) or as the last member (`...,"id":7}`, as the TypeScript SDK
 * writes replies). Null when neither edge shows one.
 */
export const idOfDropped = (frame: { readonly head: string; readonly tail: string }): Id | null => {
  const fromHead = topLevelId(frame.head)
  if (fromHead !== undefined) return fromHead
  const last = /[{,]\s*"id"\s*:\s*(-?\d{1,16}|"(?:[^"\\]|\\.){0,256}")\s*\}\s*$/.exec(frame.tail)
  return last === null ? null : parseId(last[1] ?? "")
}

const parseId = (text: string): Id | null => {
  const id = parseJson(text)
  return isId(id) ? id : null
}

/** Scans the start of an object for a member `"id"` at depth 1, skipping strings and nested values. */
const topLevelId = (head: string): Id | undefined => {
  let depth = 0
  let i = 0
  let expectKey = false
  while (i < head.length) {
    const c = head.charAt(i)
    if (c === '"') {
      let j = i + 1
      while (j < head.length && head[j] !== '"') j += head[j] === "\\" ? 2 : 1
      if (j >= head.length) return undefined
      if (depth === 1 && expectKey && head.slice(i, j + 1) === '"id"') {
        const value = /^\s*:\s*(-?\d{1,16}|"(?:[^"\\]|\\.){0,256}")\s*[,}]/.exec(head.slice(j + 1, j + 300))
        if (value !== null) return parseId(value[1] ?? "") ?? undefined
      }
      expectKey = false
      i = j + 1
      continue
    }
    if (c === "{" || c === "[") {
      depth++
      expectKey = c === "{" && depth === 1
    } else if (c === "}" || c === "]") depth--
    else if (c === "," && depth === 1) expectKey = true
    i++
  }
  return undefined
}

const isBlank = (b: Buffer) => b.every((c) => c === CR || c === LF || c === 0x20 || c === 0x09)

const detectFraming = (buffer: Buffer): Framing | undefined => {
  let i = 0
  while (i < buffer.length && (buffer[i] === CR || buffer[i] === LF || buffer[i] === 0x20 || buffer[i] === 0x09)) i++
  if (i === buffer.length) return undefined
  const first = buffer[i] ?? 0
  if (first !== 0x43 && first !== 0x63) return "ndjson" // anything but C/c cannot start "Content-"
  const available = Math.min(buffer.length - i, CONTENT_PREFIX.length)
  const prefix = buffer.toString("latin1", i, i + available).toLowerCase()
  if (!CONTENT_PREFIX.startsWith(prefix)) return "ndjson"
  return available === CONTENT_PREFIX.length ? "content-length" : undefined
}

const headerEnd = (data: Buffer): { headerLength: number; separatorLength: number } | undefined => {
  const crlf = data.indexOf("\r\n\r\n")
  const lflf = data.indexOf("\n\n")
  if (crlf < 0 && lflf < 0) return undefined
  if (crlf >= 0 && (lflf < 0 || crlf < lflf)) return { headerLength: crlf, separatorLength: 4 }
  return { headerLength: lflf, separatorLength: 2 }
}
