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

interface Stops {
  received: NodeJS.Signals | undefined
  listener: ((signal: NodeJS.Signals) => void) | undefined
}

declare global {
  /**
   * The process's one record of stop signals, whichever copy of this module caught one: a program
   * that loads the gateway's code twice (a bundle of its own beside the package) still stops once.
   */
  var __mcpAgentifyStops: Stops | undefined
}

const install = (): Stops => {
  const stops: Stops = { received: undefined, listener: undefined }
  const handler = (signal: NodeJS.Signals) => {
    if (stops.received !== undefined) {
      process.stderr.write(`mcp-agentify: ${signal} received; already stopping\n`)
      return
    }
    stops.received = signal
    stops.listener?.(signal)
  }
  for (const signal of SIGNALS) process.on(signal, handler)
  return stops
}

const stops = (globalThis.__mcpAgentifyStops ??= install())

/** Calls `stop` once, on the first signal, or at once if one already arrived. */
export const onStopSignal = (stop: (signal: NodeJS.Signals) => void): void => {
  stops.listener = stop
  if (stops.received !== undefined) stop(stops.received)
}
