/**
 * The terminal as `ask`'s client for the gateway's questions: a confirmation (`elicitation/create`
 * with no fields: a destructive tool, or a call the flow guard held) is asked as a y/n question on
 * the terminal, with what the gateway says of the call and, for a hold, what to declare so that it
 * runs without asking. Anything else (a form with fields, a URL to open, sampling) is not answered
 * here: declined, or refused as a method this client does not take.
 */
import { Effect } from "effect"
import * as readline from "node:readline"
import { MethodNotFound } from "../protocol/Errors.js"
import { field, isObject, stringField } from "../json/Json.js"
import { howToDeclare } from "./Held.js"

/** Where the question is asked: a line written, a line read (none: the input ended). */
export interface Terminal {
  readonly write: (text: string) => void
  readonly readLine: (prompt: string) => Effect.Effect<string | undefined>
}

/** The process's terminal: the question on stderr (stdout is the answer's), the reply from stdin. */
export const processTerminal: Terminal = {
  write: (text) => void process.stderr.write(text),
  readLine: (prompt) =>
    Effect.callback<string | undefined>((resume) => {
      const lines = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true })
      let answered = false
      lines.question(prompt, (line) => {
        answered = true
        lines.close()
        resume(Effect.succeed(line))
      })
      lines.on("close", () => {
        if (!answered) resume(Effect.succeed(undefined))
      })
      return Effect.sync(() => lines.close())
    })
}

/** `Allow memory__create_entities to run ...` names the tool: the first word after "Allow". */
const toolIn = (message: string): string => /^Allow (\S+)/.exec(message)?.[1] ?? "the tool"

/** A confirmation: a form with no fields to fill. */
const isConfirmation = (params: unknown): boolean => {
  const schema = field(params, "requestedSchema")
  const properties = field(schema, "properties")
  return field(params, "mode") !== "url" && (!isObject(properties) || Object.keys(properties).length === 0)
}

/** The session's `ask` for a person at a terminal (see gateway/session/Session's `Options.ask`). */
export const askOn =
  (terminal: Terminal) =>
  (method: string, params: unknown): Effect.Effect<unknown, MethodNotFound> => {
    if (method !== "elicitation/create") {
      return Effect.fail(new MethodNotFound({ message: `Method not found: ${method} (a terminal)` }))
    }
    const message = stringField(params, "message") ?? ""
    if (!isConfirmation(params)) {
      terminal.write(`mcp-agentify: ${message}\n(a form or a link, which the terminal does not fill in: declined)\n`)
      return Effect.succeed({ action: "decline" })
    }
    const declare = howToDeclare(toolIn(message), message)
    terminal.write(
      `\n${message}\n${declare.length === 0 ? "" : `To run such a call without asking (docs/configuration.md, flow):\n${declare.map((d) => `  ${d}`).join("\n")}\n`}`
    )
    return Effect.map(terminal.readLine("Run it? [y/N] "), (line) =>
      /^\s*y(es)?\s*$/i.test(line ?? "") ? { action: "accept", content: {} } : { action: "decline" }
    )
  }
