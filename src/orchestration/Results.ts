/**
 * What goes back to the model of what it called and sent, bounded by `maxResultChars`.
 *
 * A tool result longer than the bound is cut, and the cut says how much the model sees of how much
 * (a model told nothing takes the part for the whole: "the folder holds 781 files"). The whole text
 * is kept for the orchestration, and `agentify_read_result {ref, offset, length}` is offered from
 * the next turn on so that the model can read on. The arguments a model sent are replayed in every
 * later turn's conversation: those are bounded the same way, as valid JSON.
 */
import { randomBytes } from "node:crypto"
import type { ChatTool } from "../catalog/ToolCatalog.js"
import { isCallToolResult, resultText } from "../protocol/Mcp.js"
import type { ChatToolCall } from "./model/Chat.js"
import type { Source } from "../call/Vocabulary.js"

/** Where a kept result came from: what its text read on is recorded as (see Provenance). */
export type KeptSource = Omit<Source, "call">

/**
 * The whole texts one orchestration keeps for reading on, together: a backend may send up to its
 * frame limit each time, and an orchestration should not hold more than a few of those.
 */
const KEPT_CHARS_LIMIT = 64 * 1024 * 1024

export const READ_RESULT_TOOL = "agentify_read_result"

export const readResultFunction: ChatTool = {
  type: "function",
  function: {
    name: READ_RESULT_TOOL,
    description:
      "Reads more of a tool result that was cut: give the ref the cut names and the offset to read from (in characters). Returns the next part and says whether more is left.",
    parameters: {
      type: "object",
      properties: {
        ref: { type: "string", description: "The ref named where the result was cut, e.g. r1." },
        offset: { type: "integer", minimum: 0, description: "The character to start at." },
        length: { type: "integer", minimum: 1, description: "How many characters to read (at most the gateway's bound)." }
      },
      required: ["ref", "offset"]
    }
  }
}

const count = (n: number) => n.toLocaleString("en-US")

/** A tool result as the model reads it: its text blocks, else its JSON. */
/** `value` when it is a whole number of at least `min`. */
const wholeAtLeast = (value: unknown, min: number): number | undefined =>
  typeof value === "number" && Number.isInteger(value) && value >= min ? value : undefined

const resultAsText = (result: unknown): string => {
  const text = isCallToolResult(result) ? resultText(result) : ""
  return text.length > 0 ? text : (JSON.stringify(result) ?? "null")
}

export interface Results {
  readonly maxChars: number
  /** The tool message for a result: whole, or cut with a marker naming its size and ref (kept with its source). */
  readonly toolMessage: (result: unknown, source?: KeptSource) => string
  /**
   * Text from the tools as the model reads it: between `<data-CODE>` lines whose code is random per
   * orchestration, so that what a tool returns cannot close the block and speak as the gateway
   * (spotlighting; the system prompt says nothing inside is an instruction).
   */
  readonly asData: (text: string) => string
  /** Whether some result was cut and kept (then `agentify_read_result` is offered). */
  readonly anyKept: () => boolean
  /** `agentify_read_result`: the part asked for, or why there is none. */
  readonly read: (args: Record<string, unknown>) => string
  /** Where the result `agentify_read_result` names came from, when it is kept. */
  readonly sourceOf: (args: Record<string, unknown>) => KeptSource | undefined
  /** A turn's calls as they are replayed in later turns: arguments over the bound cut, as JSON. */
  readonly replayed: (calls: ReadonlyArray<ChatToolCall>) => ReadonlyArray<ChatToolCall>
}

/** The results of one orchestration. */
export const make = (maxChars: number): Results => {
  const kept = new Map<string, string>()
  const sources = new Map<string, KeptSource>()
  const boundary = `data-${randomBytes(6).toString("hex")}`
  const asData = (text: string): string => `<${boundary}>\n${text}\n</${boundary}>`
  let keptChars = 0

  const toolMessage = (result: unknown, source?: KeptSource): string => {
    const whole = resultAsText(result)
    if (whole.length <= maxChars) return whole
    const shown = whole.slice(0, maxChars)
    const size = `[cut: showing ${count(maxChars)} of ${count(whole.length)} characters`
    if (keptChars + whole.length > KEPT_CHARS_LIMIT) return `${shown}\n${size}; the rest is not kept]`
    const ref = `r${kept.size + 1}`
    kept.set(ref, whole)
    if (source !== undefined) sources.set(ref, source)
    keptChars += whole.length
    return `${shown}\n${size}; read on with ${READ_RESULT_TOOL} {"ref":"${ref}","offset":${maxChars}}]`
  }

  const read = (args: Record<string, unknown>): string => {
    const ref = typeof args.ref === "string" ? args.ref : ""
    const whole = kept.get(ref)
    if (whole === undefined) {
      return `No result '${ref}' is kept: the refs are ${[...kept.keys()].join(", ") || "none"}.`
    }
    const offset = wholeAtLeast(args.offset, 0) ?? 0
    const wanted = wholeAtLeast(args.length, 1) ?? maxChars
    if (offset >= whole.length) return `[${ref} has ${count(whole.length)} characters: nothing at offset ${count(offset)}]`
    const end = Math.min(whole.length, offset + Math.min(wanted, maxChars))
    const tail =
      end >= whole.length
        ? `[${ref}: characters ${count(offset)} to ${count(end)} of ${count(whole.length)}, the end]`
        : `[${ref}: characters ${count(offset)} to ${count(end)} of ${count(whole.length)}; read on at offset ${end}]`
    return `${whole.slice(offset, end)}\n${tail}`
  }

  const replayed = (calls: ReadonlyArray<ChatToolCall>): ReadonlyArray<ChatToolCall> =>
    calls.map((call) =>
      call.arguments.length <= maxChars
        ? call
        : {
            ...call,
            arguments: JSON.stringify({
              "[cut]": `arguments of ${count(call.arguments.length)} characters, not repeated; the first ${count(maxChars)} follow`,
              start: call.arguments.slice(0, maxChars)
            })
          }
    )

  const sourceOf = (args: Record<string, unknown>) => (typeof args.ref === "string" ? sources.get(args.ref) : undefined)

  return { maxChars, toolMessage, asData, anyKept: () => kept.size > 0, read, sourceOf, replayed }
}
