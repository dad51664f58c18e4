/**
 * A JSON POST to an endpoint the gateway asks on the side (the embeddings'), that cannot take more
 * than it was told to: a redirect is followed only within the endpoint's origin (and only a 307 or
 * 308, which keep the method and body), so what is sent (tool descriptions, the user's request, a
 * key) never reaches another host; and the answer is read as a stream up to a byte limit, the
 * connection dropped past it, so a huge answer costs that limit and no more.
 */
import { Data } from "effect"

/** Why the endpoint's answer was not taken: said in the log as it is (never with a key). */
export class EndpointFailed extends Data.TaggedError("EndpointFailed")<{ readonly kind: string }> {}

/** Redirects followed within the origin, at most. */
const MAX_REDIRECTS = 3

export interface Options {
  readonly headers: Readonly<Record<string, string>>
  /** The largest answer read, in bytes. */
  readonly maxBytes: number
  readonly signal: AbortSignal
}

/** The body, up to `maxBytes`: past it, the read is cancelled (the connection dropped) and the answer refused. */
const readBounded = async (response: Response, maxBytes: number): Promise<string> => {
  const declared = Number(response.headers.get("content-length") ?? "")
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined)
    throw new EndpointFailed({ kind: `answered more than ${maxBytes} bytes` })
  }
  const reader = response.body?.getReader()
  if (reader === undefined) return ""
  const chunks: Array<Uint8Array> = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined)
      throw new EndpointFailed({ kind: `answered more than ${maxBytes} bytes` })
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString("utf8")
}

const urlOf = (location: string, base: string): URL | undefined => {
  try {
    return new URL(location, base)
  } catch {
    return undefined
  }
}

/** POSTs `body` as JSON to `url`; the answer's JSON (undefined when it is not JSON). Throws EndpointFailed. */
export const postJson = async (url: string, body: unknown, options: Options): Promise<unknown> => {
  const origin = new URL(url).origin
  let target = url
  for (let hops = 0; ; hops++) {
    let response: Response
    try {
      response = await fetch(target, {
        method: "POST",
        headers: { "content-type": "application/json", ...options.headers },
        body: JSON.stringify(body),
        redirect: "manual",
        signal: options.signal
      })
    } catch (error) {
      const name = error instanceof Error ? error.name : ""
      throw new EndpointFailed({ kind: name === "TimeoutError" || name === "AbortError" ? "timed out" : "unreachable" })
    }
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel().catch(() => undefined)
      const location = response.headers.get("location")
      const next = location === null ? undefined : urlOf(location, target)
      if (next === undefined || next.origin !== origin) {
        throw new EndpointFailed({ kind: `redirected to another origin (not followed)` })
      }
      if ((response.status !== 307 && response.status !== 308) || hops >= MAX_REDIRECTS) {
        throw new EndpointFailed({ kind: `redirected (HTTP ${response.status}, not followed)` })
      }
      target = next.href
      continue
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined)
      throw new EndpointFailed({ kind: `HTTP ${response.status}` })
    }
    let text: string
    try {
      text = await readBounded(response, options.maxBytes)
    } catch (error) {
      if (error instanceof EndpointFailed) throw error
      throw new EndpointFailed({ kind: "timed out" })
    }
    try {
      const parsed: unknown = JSON.parse(text)
      return parsed
    } catch {
      return undefined
    }
  }
}
