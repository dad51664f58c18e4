/**
 * A `text/event-stream` body read as server-sent events. Lines end in LF or CRLF; an event whose
 * data grows past the limit is dropped whole (and said so), so a server cannot make the gateway
 * hold an unbounded message.
 */
import { Effect } from "effect"
import { readBody } from "./Fetch.js"

export interface ServerSentEvent {
  readonly event: string
  readonly data: string
  readonly id: string | undefined
}

/** Reads events until the body ends (or the fiber is interrupted); a broken stream is noted, not failed. */
export const readEvents = (
  body: ReadableStream<Uint8Array>,
  maxBytes: number,
  onEvent: (event: ServerSentEvent) => void,
  note: (text: string) => void
): Effect.Effect<void> => {
  const parser = new Parser(maxBytes, onEvent, note)
  return readBody(body, (chunk) => {
    parser.push(chunk)
    return "more"
  }).pipe(Effect.catch((error) => Effect.sync(() => note(`the event stream broke: ${error.message}`))))
}

class Parser {
  private readonly decoder = new TextDecoder()
  private buffer = ""
  private data: Array<string> = []
  private size = 0
  private event = ""
  private id: string | undefined = undefined
  private dropping = false
  /** The rest of a line that was already too long: skipped up to its end. */
  private skipping = false

  constructor(
    private readonly maxBytes: number,
    private readonly onEvent: (event: ServerSentEvent) => void,
    private readonly note: (text: string) => void
  ) {}

  push(chunk: Uint8Array) {
    this.buffer += this.decoder.decode(chunk, { stream: true })
    let start = 0
    let newline: number
    while ((newline = this.buffer.indexOf("\n", start)) !== -1) {
      const end = newline > start && this.buffer.charCodeAt(newline - 1) === 13 ? newline - 1 : newline
      if (this.skipping) this.skipping = false
      else this.line(this.buffer.slice(start, end))
      start = newline + 1
    }
    this.buffer = this.buffer.slice(start)
    if (this.buffer.length > this.maxBytes) {
      // One line without end past the limit: dropped as it streams by.
      this.drop()
      this.skipping = true
      this.buffer = ""
    }
  }

  private drop() {
    if (!this.dropping) this.note(`dropped an event over the limit of ${this.maxBytes} bytes (maxFrameBytes)`)
    this.dropping = true
    this.data = []
  }

  private line(text: string) {
    if (text === "") {
      if (!this.dropping && this.data.length > 0) {
        this.onEvent({ event: this.event || "message", data: this.data.join("\n"), id: this.id })
      }
      this.data = []
      this.size = 0
      this.event = ""
      this.dropping = false
      return
    }
    if (text.startsWith(":")) return
    const colon = text.indexOf(":")
    const field = colon === -1 ? text : text.slice(0, colon)
    let value = colon === -1 ? "" : text.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    if (field === "data") {
      this.size += value.length + 1
      if (this.size > this.maxBytes) this.drop()
      else if (!this.dropping) this.data.push(value)
    } else if (field === "event") this.event = value
    else if (field === "id") this.id = value
  }
}
