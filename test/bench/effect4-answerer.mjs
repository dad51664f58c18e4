#!/usr/bin/env node
/**
 * The start-up bench's baseline for the move to Effect 4, never a product: the smallest stdio
 * JSON-RPC answerer written on Effect 4 (effect@4.1.0, @effect/platform-node@4.1.0). It runs as a
 * program does: `NodeRuntime.runMain`, stdin and stdout from `NodeStdio.layer`'s `Stdio`, a logger
 * of its own on stderr (Effect 4's default logger writes stdout, and stdout is the protocol). It
 * answers `ping` with `{}`, every other request with -32601, and exits 0 at stdin's end.
 *
 * It runs on the project's own Effect; test/bench/effect4.ts bundles it as the gateway's CLI is
 * bundled.
 */
// Each module by its own path: the packages' index modules load every module they name (HTTP, undici).
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"

/** The reply to one line: `null` for a notification or a line that is not JSON-RPC. */
const answer = (line) => {
  let message
  try {
    message = JSON.parse(line)
  } catch {
    return null
  }
  if (message === null || typeof message !== "object" || message.id === undefined) return null
  const reply =
    message.method === "ping"
      ? { jsonrpc: "2.0", id: message.id, result: {} }
      : { jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "Method not found" } }
  return `${JSON.stringify(reply)}\n`
}

const main = Effect.gen(function* () {
  const stdio = yield* Stdio.Stdio
  yield* stdio.stdin.pipe(
    Stream.decodeText(),
    Stream.splitLines,
    Stream.filter((line) => line.trim() !== ""),
    Stream.map(answer),
    Stream.filter((reply) => reply !== null),
    Stream.run(stdio.stdout({ endOnDone: false }))
  )
  yield* Effect.logDebug("stdin ended")
})

const StderrLogger = Logger.layer([Logger.withConsoleError(Logger.formatLogFmt)])

// runMain reports a failure outside every layer provided here, with Effect's default logger, on
// stdout: the failure is logged inside them instead, and runMain only sets the exit code.
main.pipe(
  Effect.tapCause(Effect.logError),
  Effect.provide(Layer.mergeAll(NodeStdio.layer, StderrLogger)),
  NodeRuntime.runMain({ disableErrorReporting: true })
)
