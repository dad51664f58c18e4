/**
 * A preload for the memory test and the memory benchmark, never part of the gateway: `node --expose-gc --import <this>
 * dist/bin.js`. On SIGUSR2 it runs a full garbage collection and writes the V8 heap in use (bytes)
 * to the file named by HEAP_PROBE_FILE, so a test can compare live memory, which RSS only bounds.
 */
import { writeFileSync } from "node:fs"

process.on("SIGUSR2", () => {
  globalThis.gc?.()
  globalThis.gc?.()
  const { heapUsed, rss } = process.memoryUsage()
  writeFileSync(process.env.HEAP_PROBE_FILE, JSON.stringify({ heapUsed, rss, at: Date.now() }))
})
