/**
 * How the process ends on a signal: SIGINT, SIGTERM and SIGHUP all mean "stop every backend,
 * then exit 0".
 *
 * The handlers are installed when this module is evaluated, which `bin.ts` does before anything
 * else (this module imports nothing), so a signal that arrives while the gateway is still loading
 * is kept and acted on once the gateway runs. They stay installed: a second signal during
 * shutdown is reported and otherwise ignored, where Node's default action would kill the process
 * with its backends still running.
 */

const SIGNALS: ReadonlyArray<NodeJS.Signals> = ["SIGINT", "SIGTERM", "SIGHUP"]

let received: NodeJS.Signals | undefined
let listener: ((signal: NodeJS.Signals) => void) | undefined

const handler = (signal: NodeJS.Signals) => {
  if (received !== undefined) {
    process.stderr.write(`mcp-agentify: ${signal} received; already stopping\n`)
    return
  }
  received = signal
  listener?.(signal)
}

for (const signal of SIGNALS) process.on(signal, handler)

/** Calls `stop` once, on the first signal, or at once if one already arrived. */
export const onStopSignal = (stop: (signal: NodeJS.Signals) => void): void => {
  listener = stop
  if (received !== undefined) stop(received)
}
