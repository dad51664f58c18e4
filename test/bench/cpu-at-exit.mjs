/**
 * Preloaded (`node --import`) into the start-up bench's whole-process runs measured for CPU: at
 * exit, the process's own CPU time since it started (user + system, µs; Node's bootstrap included)
 * is written to fd 3. Wall time on a shared machine is mostly waiting for a core; CPU time is not.
 */
import { writeSync } from "node:fs"

process.on("exit", () => {
  const usage = process.cpuUsage()
  writeSync(3, `${usage.user + usage.system}\n`)
})
