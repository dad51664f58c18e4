/**
 * The one way the gateway reads a file it did not just make: bounded, without blocking, and only
 * a regular file. The file is opened with O_NONBLOCK (a FIFO with no writer does not hold the
 * event loop) and, for the gateway's own state, O_NOFOLLOW (a link is refused, not followed);
 * what it is comes from `fstat` of the opened descriptor, so a FIFO, a device such as /dev/zero or
 * a directory is refused rather than read, and no more than the bound is ever read (a file that
 * grows while read is caught too).
 *
 * State files (remembered lists, pins, vectors, sign-ins, team files) are data,
 * never trusted: one that cannot be read so is ignored, and said once per file and reason, at
 * warn, naming the file and never its content. Those warnings go to whoever hears them (the
 * gateway's logger, see observability/Logging); said before anyone does, they wait (a few).
 *
 * Node's own modules only: the launcher loads this (through cli/CodeCache) before the gateway.
 */
import { closeSync, constants as fsConstants, fstatSync, openSync, readSync } from "node:fs"

export type Outcome =
  | { readonly _tag: "Read"; readonly bytes: Buffer; readonly mtimeMs: number }
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Refused"; readonly reason: string }

export interface Options {
  /** Whether a symbolic link is followed to what it names ("follow": a config file may be a link) or refused. */
  readonly links: "follow" | "refuse"
}

const errnoOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined

const whyNot = (error: unknown, links: Options["links"]): string => {
  const code = errnoOf(error)
  if (code === "ELOOP" && links === "refuse") return "it is a symbolic link"
  if (code === "EACCES" || code === "EPERM") return "permission denied"
  if (code === "EISDIR") return "it is a directory"
  return code ?? (error instanceof Error ? error.message : String(error))
}

/** What a descriptor that is not a regular file is, as said of it. */
const kindOf = (stat: ReturnType<typeof fstatSync>): string =>
  stat.isDirectory()
    ? "it is a directory"
    : stat.isFIFO()
      ? "it is a FIFO, not a regular file"
      : stat.isCharacterDevice() || stat.isBlockDevice()
        ? "it is a device, not a regular file"
        : stat.isSocket()
          ? "it is a socket, not a regular file"
          : "it is not a regular file"

/** Reads `file` if it is a regular file of at most `maxBytes` (see the module's doc). */
export const read = (file: string, maxBytes: number, options: Options = { links: "refuse" }): Outcome => {
  const noFollow = options.links === "refuse" ? (fsConstants.O_NOFOLLOW ?? 0) : 0
  let fd: number
  try {
    fd = openSync(file, fsConstants.O_RDONLY | (fsConstants.O_NONBLOCK ?? 0) | noFollow)
  } catch (error) {
    const code = errnoOf(error)
    return code === "ENOENT" || code === "ENOTDIR"
      ? { _tag: "Missing" }
      : { _tag: "Refused", reason: whyNot(error, options.links) }
  }
  try {
    const stat = fstatSync(fd)
    if (!stat.isFile()) return { _tag: "Refused", reason: kindOf(stat) }
    if (stat.size > maxBytes) return { _tag: "Refused", reason: `it is ${stat.size} bytes, more than the ${maxBytes} allowed` }
    // One byte more than allowed: a file that grew since `fstat` is caught, and never read whole.
    const buffer = Buffer.alloc(Math.min(maxBytes + 1, stat.size + 1))
    let length = 0
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null)
      if (n === 0) break
      length += n
      if (length === buffer.length) break
    }
    if (length > maxBytes) return { _tag: "Refused", reason: `it is more than the ${maxBytes} bytes allowed` }
    return { _tag: "Read", bytes: buffer.subarray(0, length), mtimeMs: stat.mtimeMs }
  } catch (error) {
    return { _tag: "Refused", reason: whyNot(error, options.links) }
  } finally {
    closeSync(fd)
  }
}

/** A file's text as `read` (links followed: a file the user names, not the gateway's state), or throws saying why not. */
export const readUserText = (file: string, maxBytes: number): string => {
  const outcome = read(file, maxBytes, { links: "follow" })
  if (outcome._tag === "Read") return outcome.bytes.toString("utf8")
  throw new Error(`cannot read ${file}: ${outcome._tag === "Missing" ? "no such file" : outcome.reason}`)
}

/** Who hears of state files refused; none yet: the warnings wait (at most WAITING_AT_MOST). */
let listener: ((message: string) => void) | undefined
const waiting: Array<string> = []
const WAITING_AT_MOST = 32
/** Each file and reason is said once per process: a file read at every listing is not said at every listing. */
const said = new Set<string>()

/** Says that `file` is ignored and why: once per file and reason (see `hear`). */
export const warn = (file: string, reason: string): void => {
  const key = `${file}\u0000${reason}`
  if (said.has(key)) return
  said.add(key)
  const message = `state file ${file} is ignored: ${reason}`
  if (listener !== undefined) listener(message)
  else if (waiting.length < WAITING_AT_MOST) waiting.push(message)
}

/**
 * `listener` hears each state file refused from now on, and those refused before; returns what
 * puts the one before back (the gateway's logger is a layer: released, it stops hearing).
 */
export const hear = (next: (message: string) => void): (() => void) => {
  const before = listener
  listener = next
  for (const message of waiting.splice(0)) next(message)
  return () => {
    if (listener === next) listener = before
  }
}

/** A state file's bytes, or undefined: missing, or refused (said once, see `hear`). Links are refused. */
export const readState = (file: string, maxBytes: number): { readonly bytes: Buffer; readonly mtimeMs: number } | undefined => {
  const outcome = read(file, maxBytes)
  if (outcome._tag === "Refused") warn(file, outcome.reason)
  return outcome._tag === "Read" ? outcome : undefined
}

/** A state file's text (UTF-8), or undefined as `readState`. */
export const readStateText = (file: string, maxBytes: number): string | undefined =>
  readState(file, maxBytes)?.bytes.toString("utf8")
