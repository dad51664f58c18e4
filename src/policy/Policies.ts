/**
 * The policies in force (`policies`): the configured file, loaded into Cedar, read again when it
 * changes on disk or the configuration names another. Asked synchronously on every call (`current`).
 *
 * A file that cannot be used fails closed: at first every request is refused saying why (a
 * gateway told to enforce policies never runs without them); an edit that breaks a file that
 * loaded is refused, logged, and the policies that loaded stay.
 */
import { Context, Deferred, Effect, Layer, Stream } from "effect"
import { GatewayConfig } from "../config/Config.js"
import * as Watch from "../config/Watch.js"
import * as RegularFile from "../config/RegularFile.js"
import { messageOf } from "../json/Json.js"
import * as Cedar from "./Cedar.js"
import type { PolicySet } from "./Policy.js"

/** The largest policy file read: policies are kilobytes, not a device. */
const MAX_POLICY_FILE_BYTES = 4 * 1024 * 1024

/** A policy file's text, or why it cannot be read (bounded, never a FIFO or a device: see RegularFile). */
export const textOf = (file: string): string | { readonly problems: ReadonlyArray<string> } => {
  try {
    return RegularFile.readUserText(file, MAX_POLICY_FILE_BYTES)
  } catch (error) {
    return { problems: [messageOf(error)] }
  }
}

/** Reads and loads `file`: the policies, or every problem with them. */
export const read = (file: string): PolicySet | { readonly problems: ReadonlyArray<string> } => {
  const text = textOf(file)
  return typeof text === "string" ? Cedar.load(file, text) : text
}

/** A set that refuses everything, saying why: what a file that cannot be used enforces. */
export const refusingAll = (file: string, problems: ReadonlyArray<string>): PolicySet => {
  const why = `the policies in ${file} cannot be used: ${problems.join("; ")}`
  return { file, ids: [], decide: () => ({ allowed: false, policies: [], why }), mayEver: () => false }
}

export class Policies extends Context.Service<
  Policies,
  {
    /** The policies in force, or none (`policies` not configured). */
    readonly current: () => PolicySet | undefined
  }
>()("mcp-agentify/Policies") {
  /** The configured file, followed on disk and through reloads. */
  static readonly layer: Layer.Layer<Policies, never, GatewayConfig> = Layer.effect(
    Policies,
    Effect.gen(function* () {
      const config = yield* GatewayConfig
      let current: PolicySet | undefined
      let loads = 0
      const apply = (file: string | undefined) =>
        Effect.gen(function* () {
          if (file === undefined) {
            current = undefined
            return
          }
          const loaded = read(file)
          if (!("problems" in loaded)) {
            current = loaded
            // Said at start-up only when asked (a command's output stays its own); a reload is news.
            const said = `policies: ${loaded.ids.length} from ${file} (${loaded.ids.join(", ")})`
            yield* loads++ === 0 ? Effect.logDebug(said) : Effect.logInfo(said)
            return
          }
          if (current !== undefined && current.file === file && current.ids.length > 0) {
            yield* Effect.logError(`policies: ${file} changed and cannot be used; the policies that loaded stay`, {
              problems: loaded.problems
            })
            return
          }
          current = refusingAll(file, loaded.problems)
          yield* Effect.logError(`policies: ${file} cannot be used: every call is refused until it is fixed`, {
            problems: loaded.problems
          })
        })
      // The configuration's changes begin with the one in force: its file is loaded before the
      // layer is built (before the first call), and every change after it is heard, however soon
      // (a follower subscribed after a first load of its own missed a reload in between).
      const loaded = yield* Deferred.make<void>()
      yield* config.changes.pipe(
        Stream.map((c) => c.policies),
        Stream.changes,
        Stream.switchMap((file) =>
          file === undefined
            ? Stream.make(file)
            : Stream.concat(Stream.make(file), Watch.changes({ configPath: file }).pipe(Stream.as(file)))
        ),
        Stream.runForEach((file) => Effect.andThen(apply(file), Deferred.succeed(loaded, undefined))),
        Effect.forkScoped
      )
      yield* Deferred.await(loaded)
      return { current: () => current }
    })
  )

  /** No policies (an app that embeds the pipeline without them). */
  static readonly layerNone: Layer.Layer<Policies> = Layer.succeed(Policies, { current: () => undefined })
}
