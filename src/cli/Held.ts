/**
 * A call the flow guard held, as `ask` explains it to the person at the terminal: why it was held
 * (the rules and what they saw) and what to declare in the configuration (a backend's `flow`) so
 * that such a call runs without the question, when that is true of the backend.
 */

/** The flow rules, each with what would let its calls through (see gateway/pipeline/FlowRules). */
const DECLARE: Record<string, (target: Target) => string> = {
  "private-data-out": ({ backend, tool }) =>
    `to keep what a source says, name it in the request ("remember the open items of notes.md"); if ${backend}'s ${tool} keeps what it is given on this machine, declare it closed: "flow": {"tools": {"${tool}": {"openWorld": false}}} on backend ${backend}; if the data it was given is not private, "flow": {"private": false} on the backend it was read from`,
  "untrusted-target": () =>
    `if you trust what the backend it read from returns, declare it: "flow": {"untrusted": false} on that backend`,
  "untrusted-write": () =>
    `name in the request the source whose contents to keep ("remember the open items of notes.md"), or, if you trust what the backend it read from returns, declare it: "flow": {"untrusted": false} on that backend`,
  "outside-plan": ({ name }) => `name what ${name} is for in the request, so that the model plans it before it reads anything`
}

interface Target {
  /** The tool as the model called it (`memory__create_entities`). */
  readonly name: string
  /** Its backend and its own name, as the default namespace makes them; the whole name otherwise. */
  readonly backend: string
  readonly tool: string
}

const targetOf = (name: string): Target => {
  const at = name.indexOf("__")
  return at < 0 ? { name, backend: "its backend", tool: name } : { name, backend: name.slice(0, at), tool: name.slice(at + 2) }
}

/** The rules named in a hold's message (`Not run: X was held by private-data-out, ... . rule: why`). */
export const rulesIn = (message: string): ReadonlyArray<string> =>
  Object.keys(DECLARE).filter((rule) => new RegExp(`(^|[\\s,])${rule}(:|,|\\s|$)`, "m").test(message))

/** What to declare so that calls like this one run without asking, one line per rule that held it. */
export const howToDeclare = (name: string, message: string): ReadonlyArray<string> =>
  rulesIn(message).map((rule) => `${rule}: ${DECLARE[rule]!(targetOf(name))}`)

/** A step the gateway did not run: why, and how to let it run (docs/configuration.md, `flow`). */
export const explainHeld = (name: string, message: string): ReadonlyArray<string> => {
  const declare = howToDeclare(name, message)
  return [
    `  why: ${message}`,
    ...(message.includes("cannot be asked")
      ? ["  run from a terminal (stdin a terminal), ask asks you y/n before such a call"]
      : []),
    ...(declare.length === 0
      ? []
      : ["  to run it without asking (docs/configuration.md, flow):", ...declare.map((d) => `    ${d}`)])
  ]
}
