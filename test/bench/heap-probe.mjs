/**
 * Preloaded into the memory benchmark's gateway (`node --expose-gc --import <this> dist/bin.js`),
 * never part of the gateway itself: on SIGUSR2 it runs a full garbage collection and writes the
 * live V8 heap (bytes) to the file named by BENCH_HEAP_FILE. RSS includes garbage V8 has not
 * collected yet; the live heap after a full collection is what a leak would grow.
 */
import { writeFileSync } from "node:fs"

process.on("SIGUSR2", () => {
  globalThis.gc?.()
  globalThis.gc?.()
  writeFileSync(process.env.BENCH_HEAP_FILE, JSON.stringify({ heapUsed: process.memoryUsage().heapUsed }))
})
