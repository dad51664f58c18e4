/**
 * The audit log (config `audit`): one JSON line per tool call however it was made (written by the
 * call pipeline's `record` stage: see pipeline/stages/Record) and one per orchestration or script run,
 * appended to a file. A call's line names its run (`parent`), its session, client,
 * OAuth subject and profile, the backend and tool (exposed and own name), the arguments (a hash by
 * default, scrubbed of secrets when "full"), the outcome and its time.
 *
 * Lines are queued and written by a fiber of their own: a call never waits on the disk, and a
 * write failure is logged once and fails nothing. The queue is drained when the gateway stops, so a
 * clean stop loses nothing. The file (mode 0600) is rotated past `maxBytes`, keeping `keep` older
 * ones (`file.1` the newest). Settings are read when the gateway starts.
 */
import { Cause, Context, Effect, Exit, Layer, Option, Queue } from "effect"
import { createHash, randomUUID } from "node:crypto"
import * as fs from "node:fs"
import { type AuditSettings, GatewayConfig } from "../../config/Config.js"
import * as Secrets from "../../observability/Secrets.js"
import * as AuditRun from "../../observability/AuditRun.js"
import { field } from "../../json/Json.js"
import * as Meta from "../../json/Meta.js"
import { codeOf, ErrorCode, type GatewayError } from "../../protocol/Errors.js"
import type { Session } from "../session/Session.js"

/** Lines waiting at most; past it lines are dropped and the loss is said once. */
export const MAX_QUEUED = 100_000

export interface Who {
  readonly session: string
  readonly client?: { readonly name?: unknown; readonly version?: unknown } | undefined
  readonly subject?: string | undefined
  readonly profile?: string | undefined
}

export interface CallLine extends Who {
  readonly id: string
  /** How the call was made (see pipeline/Call's Via). */
  readonly via: string
  /** The stage that refused it, when one did (it reached no backend). */
  readonly refusedBy?: string | undefined
  /** The flow rules that held the call (asked about, then run or not). */
  readonly heldBy?: ReadonlyArray<string> | undefined
  /** The JSON-RPC id of the client's request the call was made for. */
  readonly request: unknown
  /** Absent for a call refused before any backend was chosen (an unknown or quarantined tool). */
  readonly backend: string | undefined
  readonly tool: { readonly exposed: string | undefined; readonly own: string | undefined }
  readonly arguments: unknown
  /** "ok", "isError", "held" (a preview's call not run), or the JSON-RPC error code. */
  readonly outcome: "ok" | "isError" | "held" | number
  readonly ms: number
}

export interface RunLine extends Who {
  readonly id: string
  readonly kind: "orchestration" | "script"
  /** sha256 of the query or the code. */
  readonly input: string
  readonly steps: number
  readonly tokens?: number | undefined
  readonly outcome: "ok" | "isError" | number
  readonly ms: number
}

export interface AuditService {
  readonly enabled: boolean
  /** The run (orchestration or script) the current fiber's calls belong to. */
  readonly parent: Context.Reference<string | undefined>
  readonly call: (line: CallLine) => void
  readonly run: (line: RunLine) => void
}

/** `sha256:<hex>` of a value's JSON. */
export const hashOf = (value: unknown): string =>
  `sha256:${createHash("sha256")
    .update(JSON.stringify(value) ?? "")
    .digest("hex")}`

const parent = AuditRun.current

const off: AuditService = { enabled: false, parent, call: () => {}, run: () => {} }

/** Appends lines to `settings.file`, rotating it; failures are said once through `warn`. */
export const writer = (settings: AuditSettings, warn: (message: string) => void) => {
  let size = -1
  let failed = false
  const fail = (error: unknown) => {
    if (failed) return
    failed = true
    warn(`the audit log could not be written to ${settings.file}: ${error instanceof Error ? error.message : String(error)}`)
  }
  const rotate = () => {
    for (let i = settings.keep - 1; i >= 1; i--) {
      if (fs.existsSync(`${settings.file}.${i}`)) fs.renameSync(`${settings.file}.${i}`, `${settings.file}.${i + 1}`)
    }
    fs.renameSync(settings.file, `${settings.file}.1`)
    size = 0
  }
  return (lines: ReadonlyArray<string>) => {
    if (lines.length === 0) return
    const text = `${lines.join("\n")}\n`
    const bytes = Buffer.byteLength(text)
    try {
      if (size < 0) size = fs.existsSync(settings.file) ? fs.statSync(settings.file).size : 0
      if (size > 0 && size + bytes > settings.maxBytes) rotate()
      fs.appendFileSync(settings.file, text, { mode: 0o600 })
      size += bytes
      failed = false
    } catch (error) {
      fail(error)
    }
  }
}

const make = (settings: AuditSettings) =>
  Effect.gen(function* () {
    const queue = yield* Queue.unbounded<string>()
    let queued = 0
    let dropped = 0
    // Said from outside any fiber, with the gateway's services: its loggers (stderr), not Effect's default (stdout).
    const runFork = Effect.runForkWith(yield* Effect.context<never>())
    const write = writer(settings, (message) => runFork(Effect.logWarning(message)))
    const enqueue = (line: Record<string, unknown>) => {
      if (queued >= MAX_QUEUED) {
        if (dropped++ === 0) runFork(Effect.logWarning(`the audit log is ${MAX_QUEUED} lines behind: lines are dropped`))
        return
      }
      queued++
      Queue.offerUnsafe(queue, JSON.stringify({ time: new Date().toISOString(), ...line }))
    }
    // Written in batches off the calls' path; whatever is left is written when the scope closes.
    const writeAll = (lines: Iterable<string>) =>
      Effect.sync(() => {
        const batch = [...lines]
        queued -= batch.length
        write(batch)
      })
    // The finalizer is added first so it runs last: after the writer fiber stops, it writes the rest.
    // (`clear`: what is queued, possibly nothing; Effect 4's takeAll would wait for a line.)
    yield* Effect.addFinalizer(() => Effect.flatMap(Queue.clear(queue), writeAll))
    // A batch taken is written even if the stop comes meanwhile: only the wait is interruptible.
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.uninterruptibleMask((restore) => Effect.flatMap(restore(Queue.takeBetween(queue, 1, 1_000)), writeAll))
      )
    )
    const service: AuditService = {
      enabled: true,
      parent,
      call: ({ arguments: args, ...line }) =>
        enqueue({
          type: "call",
          ...line,
          ...(settings.arguments === "none"
            ? {}
            : { arguments: settings.arguments === "full" ? Secrets.scrubArguments(args) : hashOf(args) })
        }),
      run: (line) => enqueue({ type: "run", ...line })
    }
    return service
  })

export class Audit extends Context.Service<Audit, AuditService>()("mcp-agentify/Audit") {
  /** The audit log as configured when the gateway starts (off: nothing is recorded). */
  static readonly layer: Layer.Layer<Audit, never, GatewayConfig> = Layer.effect(
    Audit,
    Effect.gen(function* () {
      const config = yield* (yield* GatewayConfig).current
      return Option.isNone(config.audit) ? off : yield* make(config.audit.value)
    })
  )
  /** Nothing recorded (tests, embedding). */
  static readonly layerOff: Layer.Layer<Audit> = Layer.succeed(Audit, off)
}

/** Who a session's calls are made for, as the audit log names them. */
export const whoOf = (session: Session): Who => {
  const name = field(session.clientInfo, "name")
  const version = field(session.clientInfo, "version")
  const profile = session.target._tag === "Aggregate" ? session.target.profile : undefined
  return {
    session: session.id,
    ...(name === undefined && version === undefined ? {} : { client: { name, version } }),
    ...(session.subject === undefined ? {} : { subject: session.subject }),
    ...(profile === undefined ? {} : { profile })
  }
}

/** A failure's outcome in the audit log: the code its reply has (-32800 when it was cancelled). */
export const outcomeOf = (cause: Cause.Cause<GatewayError>): number => {
  const failure = Cause.findErrorOption(cause)
  return Option.isSome(failure) ? codeOf(failure.value) : ErrorCode.RequestCancelled
}

/** A result's outcome: "isError" for a tool result that says it failed, else "ok". */
const resultOutcome = (result: unknown): "ok" | "isError" => (field(result, "isError") === true ? "isError" : "ok")

/**
 * An orchestration or script run, recorded as one line when it ends; the calls it makes name it as
 * their `parent`, and the request's span carries its id. Off: the run as it is.
 */
export const run = <A, E extends GatewayError, R>(
  audit: AuditService,
  kind: "orchestration" | "script",
  session: Session,
  input: unknown,
  body: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => {
  if (!audit.enabled) return body
  return Effect.suspend(() => {
    const id = randomUUID()
    const started = performance.now()
    return Effect.andThen(Effect.annotateCurrentSpan("agentify.audit.run", id), body).pipe(
      Effect.provideService(audit.parent, id),
      Effect.onExit((exit) =>
        Effect.sync(() => {
          const result = Exit.isSuccess(exit) ? exit.value : undefined
          const steps = Meta.get(result, "agentify/steps") ?? field(field(result, "structuredContent"), "calls")
          const tokens = field(Meta.get(result, "agentify/usage"), "totalTokens")
          audit.run({
            id,
            kind,
            ...whoOf(session),
            input: hashOf(input),
            steps: Array.isArray(steps) ? steps.length : 0,
            ...(typeof tokens === "number" ? { tokens } : {}),
            outcome: Exit.isSuccess(exit) ? resultOutcome(result) : outcomeOf(exit.cause),
            ms: Math.round(performance.now() - started)
          })
        })
      )
    )
  })
}
