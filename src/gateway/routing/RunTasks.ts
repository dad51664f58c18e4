/**
 * The gateway's own tasks: an orchestration or a code-mode script run in the background for a
 * client that asked for a task, in either design:
 * - the 2026-07-28 extension's (SEP-2663), for a client that declared it: it polls with `tasks/get`
 *   (the result inlined once done), answers confirmations with `tasks/update` (they appear as
 *   `inputRequests` while it waits), stops it with `tasks/cancel`;
 * - the session era's (SEP-1686), for a `tools/call` with `task`: `tasks/get`, `tasks/result`
 *   (waits for the result), `tasks/cancel`, `tasks/list`; a confirmation is an `elicitation/create`
 *   sent to the session, tied to the task by `_meta["io.modelcontextprotocol/related-task"]`.
 * A client that asked for neither gets the result at once, as before.
 *
 * Ids are `[sessionIdPrefix]agentify.<128 random bits>`, good for their owner only (see `Routes.TaskOwner`). Runs
 * are fibers of the gateway's scope: its stop interrupts them. Finished tasks are kept for their
 * ttl; at most `MAX_RUNS` at once, `MAX_RUNS_PER_OWNER` of one owner, and their results are bounded
 * in bytes per owner and in all (the oldest finished go first).
 */
import { Cause, Context, Deferred, Effect, Exit, Fiber, FiberSet, Layer, type Scope } from "effect"
import { type GatewayConfig, inForce } from "../../config/Config.js"
import { idPrefixOf } from "../../store/Replica.js"
import { TaskRecords } from "../../store/TaskRecords.js"
import { randomBytes } from "node:crypto"
import {
  type AskError,
  type GatewayError,
  InternalError,
  RequestCancelled,
  toRpcError,
  UnknownTask,
  type WireError
} from "../../protocol/Errors.js"
import type { TaskOwner } from "./Routes.js"
import { isObject } from "../../json/Json.js"
import * as Meta from "../../json/Meta.js"

export const OWN_PREFIX = "agentify."
/** How long a finished run stays readable. */
export const RUN_TTL_MS = 30 * 60_000
/** Runs kept at once (running or finished); past it the oldest finished one goes, or the start is refused. */
export const MAX_RUNS = 1_000
/** Runs one owner (a session, a signed-in user's) keeps at once: one client cannot fill the gateway. */
export const MAX_RUNS_PER_OWNER = 100
/** What one owner's finished runs may hold (their results as JSON); past it its oldest finished go. */
export const MAX_KEPT_BYTES_PER_OWNER = 64 * 1024 * 1024
/** What every finished run together may hold. */
export const MAX_KEPT_BYTES = 512 * 1024 * 1024
const POLL_INTERVAL_MS = 500

type Status = "working" | "input_required" | "completed" | "failed" | "cancelled"

/** Which task design a run answers in. */
export type Design = "extension" | "session"

const RELATED_TASK = "io.modelcontextprotocol/related-task"

interface Question {
  readonly request: { readonly method: string; readonly params: unknown }
  readonly answer: Deferred.Deferred<unknown>
}

interface Run {
  readonly id: string
  readonly owner: string
  /**
   * Whose it is in a team's store once it ended (see `onSettled`): a session-era run's signed-in
   * user's (another session of theirs may read it), else its owner's (nobody reads it elsewhere,
   * but it is known to have finished: never called failed).
   */
  readonly keptFor: string
  readonly design: Design
  /** Completed once the run ended, however. */
  readonly done: Deferred.Deferred<void>
  readonly createdAt: string
  lastUpdatedAt: string
  status: Status
  result?: unknown
  /** Its failure, as it is: what `tasks/result` fails with. */
  failure?: GatewayError
  /** Its failure's wire form, which `tasks/get` shows and a team's store keeps. */
  error?: WireError
  readonly questions: Map<string, Question>
  expiresAt: number
  interrupt: Effect.Effect<void>
  /** What its result or error holds, as JSON, once it ended. */
  bytes: number
}

/** Asks the client something from inside a run: it waits as an `inputRequests` entry until answered. */
export type Ask = (method: string, params: unknown) => Effect.Effect<unknown>

/** A question put to a session-era client from inside a run (the session's own request). */
export type AskClient = (method: string, params: unknown) => Effect.Effect<unknown, AskError>

export interface RunTasks {
  /**
   * Starts `run` as a task of `owner`, in `design`; its CreateTaskResult. A session-era run asks
   * its client through `askClient`.
   */
  readonly start: (
    owner: TaskOwner,
    run: (ask: Ask) => Effect.Effect<unknown, GatewayError>,
    design: Design,
    askClient?: AskClient,
    /** What the request that started it sent: its error echoes that as sent (see Secrets.sentIn). */
    sent?: unknown
  ) => Effect.Effect<unknown, InternalError>
  /** Whether `id` is one of the gateway's own task ids (whoever owns it). */
  readonly owns: (id: string) => boolean
  /** `tasks/get`, `tasks/update`, `tasks/cancel` of an owner's run, answered in the run's design. */
  readonly get: (owner: TaskOwner, id: string) => Effect.Effect<unknown, UnknownTask>
  readonly update: (owner: TaskOwner, id: string, inputResponses: unknown) => Effect.Effect<unknown, UnknownTask>
  readonly cancel: (owner: TaskOwner, id: string) => Effect.Effect<unknown, UnknownTask>
  /** `tasks/result` (session era): the run's result once it ends, or its error. */
  readonly result: (owner: TaskOwner, id: string) => Effect.Effect<unknown, GatewayError>
  /** The owner's session-era runs, as `tasks/list` shows them. */
  readonly list: (owner: TaskOwner) => ReadonlyArray<unknown>
}

const TERMINAL: ReadonlySet<Status> = new Set(["completed", "failed", "cancelled"])

const touch = (run: Run, status: Status) => {
  run.status = status
  run.lastUpdatedAt = new Date().toISOString()
}
/** A task as the extension states it. */
const envelope = (run: Run) => ({
  taskId: run.id,
  status: run.status,
  createdAt: run.createdAt,
  lastUpdatedAt: run.lastUpdatedAt,
  ttlMs: RUN_TTL_MS,
  pollIntervalMs: POLL_INTERVAL_MS
})
/** A task as SEP-1686 states it (its durations named `ttl` and `pollInterval`). */
const task = (run: Run) => ({
  taskId: run.id,
  status: run.status,
  createdAt: run.createdAt,
  lastUpdatedAt: run.lastUpdatedAt,
  ttl: RUN_TTL_MS,
  pollInterval: POLL_INTERVAL_MS,
  ...(run.error === undefined ? {} : { statusMessage: run.error.message })
})
/** A session-era run as a team's store keeps it: its `tasks/get` reply, with its result or error for `tasks/result`. */
const kept = (run: Run) => ({
  ...task(run),
  ...(run.result === undefined ? {} : { result: run.result }),
  ...(run.error === undefined ? {} : { error: run.error })
})
/** The extension's `tasks/get` reply. */
const finished = (run: Run) => ({
  ...envelope(run),
  ...(run.status === "input_required"
    ? { inputRequests: Object.fromEntries([...run.questions].map(([key, q]) => [key, q.request])) }
    : {}),
  ...(run.result === undefined ? {} : { result: run.result }),
  ...(run.error === undefined ? {} : { error: run.error }),
  resultType: "complete"
})

/** The extension keeps a question in the task's inputRequests until tasks/update answers it. */
const askInTask = (run: Run): Ask => {
  let asked = 0
  return (method, params) =>
    Effect.gen(function* () {
      const key = `${method === "elicitation/create" ? "confirm" : "input"}-${++asked}`
      const answer = yield* Deferred.make<unknown>()
      run.questions.set(key, { request: { method, params }, answer })
      touch(run, "input_required")
      return yield* Deferred.await(answer)
    })
}
/** The session era asks its client for real, the question tied to the task. */
const askSession =
  (run: Run, client: AskClient): Ask =>
  (method, params) =>
    Effect.gen(function* () {
      touch(run, "input_required")
      const tied = { ...(isObject(params) ? params : {}), _meta: { [RELATED_TASK]: { taskId: run.id } } }
      const answer = yield* Effect.result(client(method, tied))
      if (run.status === "input_required") touch(run, "working")
      // A client that could not answer gave no agreement.
      return answer._tag === "Success" ? answer.success : { action: "cancel" }
    })

/** A run's end, as `tasks/get` says it from now on: its result or error, kept for its ttl. */
const ended = (run: Run, exit: Exit.Exit<unknown, GatewayError>, sent: unknown) => {
  run.questions.clear()
  run.expiresAt = Date.now() + RUN_TTL_MS
  if (Exit.isSuccess(exit)) {
    run.result = exit.value
    touch(run, "completed")
  } else if (run.status !== "cancelled") {
    // Its error when that alone ended it (not an interruption, nor a defect beside it).
    const [only, ...others] = exit.cause.reasons
    const failure = only !== undefined && others.length === 0 && Cause.isFailReason(only) ? only.error : undefined
    run.failure = failure ?? new InternalError({ message: "the task stopped" })
    // A task's failure is no reply: its wire form is part of the task as tasks/get states it (and
    // as a team's store keeps it for other gateways), so it is made here, once.
    run.error = toRpcError(run.failure, sent)
    touch(run, "failed")
  }
  run.bytes = (JSON.stringify(run.result ?? run.error ?? null) ?? "").length
}

/** The oldest finished run (of `owner`, or anyone's) other than `spare`, in the order they started. */
const oldestFinished = (runs: ReadonlyMap<string, Run>, owner: string | undefined, spare?: Run): Run | undefined => {
  for (const run of runs.values()) {
    if (run !== spare && TERMINAL.has(run.status) && (owner === undefined || run.owner === owner)) return run
  }
  return undefined
}
const ownedBy = (runs: ReadonlyMap<string, Run>, owner: string) => [...runs.values()].filter((r) => r.owner === owner)
/**
 * Room for one more of `owner`'s: finished runs past their ttl go first, then the owner's oldest
 * finished one (past its own bound), then anyone's (past the gateway's); "owner" or "gateway"
 * when every run in the way is still running.
 */
const makeRoomIn = (runs: Map<string, Run>, owner: string): "owner" | "gateway" | undefined => {
  for (const [id, run] of runs) if (TERMINAL.has(run.status) && run.expiresAt <= Date.now()) runs.delete(id)
  if (ownedBy(runs, owner).length >= MAX_RUNS_PER_OWNER) {
    const oldest = oldestFinished(runs, owner)
    if (oldest === undefined) return "owner"
    runs.delete(oldest.id)
  }
  if (runs.size < MAX_RUNS) return undefined
  const oldest = oldestFinished(runs, undefined)
  if (oldest === undefined) return "gateway"
  runs.delete(oldest.id)
  return undefined
}
/** After `run` ended: its owner's finished runs, and everyone's, back within their bytes (it stays). */
const trimBytesIn = (runs: Map<string, Run>, run: Run) => {
  const total = (of: ReadonlyArray<Run>) => of.reduce((n, r) => n + r.bytes, 0)
  let mine = total(ownedBy(runs, run.owner))
  for (let old = oldestFinished(runs, run.owner, run); mine > MAX_KEPT_BYTES_PER_OWNER && old !== undefined;) {
    runs.delete(old.id)
    mine -= old.bytes
    old = oldestFinished(runs, run.owner, run)
  }
  let all = total([...runs.values()])
  for (let old = oldestFinished(runs, undefined, run); all > MAX_KEPT_BYTES && old !== undefined;) {
    runs.delete(old.id)
    all -= old.bytes
    old = oldestFinished(runs, undefined, run)
  }
}

/** The gateway's own tasks; their ids start with `prefix()` (its `sessionIdPrefix`), then `agentify.`. */
export const make = (
  prefix: () => string,
  /** A finished task, with its owner and `tasks/get` reply (kept in a team's store, to outlive this gateway). */
  onSettled?: (id: string, record: { readonly owner: string; readonly reply: Record<string, unknown> }) => Effect.Effect<void>
): Effect.Effect<RunTasks, never, Scope.Scope> =>
  Effect.gen(function* () {
    const fibers = yield* FiberSet.make()
    const runs = new Map<string, Run>()
    const now = () => new Date().toISOString()

    const unknown = (id: string) => new UnknownTask({ taskId: id })
    const find = (owner: TaskOwner, id: string): Run | undefined => {
      const run = runs.get(id)
      if (run !== undefined && TERMINAL.has(run.status) && run.expiresAt <= Date.now()) runs.delete(id)
      return run !== undefined && run.owner === owner.key && runs.has(id) ? run : undefined
    }
    const makeRoom = (owner: string) => makeRoomIn(runs, owner)
    const trimBytes = (run: Run) => trimBytesIn(runs, run)

    const start: RunTasks["start"] = (owner, body, design, askClient, sent) =>
      Effect.gen(function* () {
        const full = makeRoom(owner.key)
        if (full === "owner") {
          return yield* new InternalError({
            message: `${MAX_RUNS_PER_OWNER} of your tasks are running already: wait for one to end, or cancel one`
          })
        }
        if (full === "gateway") {
          return yield* new InternalError({ message: `${MAX_RUNS} tasks already run on the gateway` })
        }
        const at = now()
        const run: Run = {
          id: `${prefix()}${OWN_PREFIX}${randomBytes(16).toString("base64url")}`,
          owner: owner.key,
          keptFor: design === "session" && owner.session?.subject !== undefined ? `subject:${owner.session.subject}` : owner.key,
          design,
          done: yield* Deferred.make<void>(),
          createdAt: at,
          lastUpdatedAt: at,
          status: "working",
          questions: new Map(),
          expiresAt: Number.POSITIVE_INFINITY,
          interrupt: Effect.void,
          bytes: 0
        }
        const ask = design === "session" && askClient !== undefined ? askSession(run, askClient) : askInTask(run)
        const settle = (exit: Exit.Exit<unknown, GatewayError>) =>
          Effect.andThen(
            Effect.sync(() => {
              ended(run, exit, sent)
              trimBytes(run)
            }),
            Effect.andThen(
              Deferred.succeed(run.done, undefined),
              // A team's gateways keep finished tasks in their store: read after this gateway is gone.
              onSettled === undefined
                ? Effect.void
                : Effect.suspend(() =>
                    onSettled(run.id, { owner: run.keptFor, reply: design === "extension" ? finished(run) : kept(run) })
                  )
            )
          )
        runs.set(run.id, run)
        const fiber = yield* FiberSet.run(fibers, Effect.onExit(body(ask), settle))
        run.interrupt = Fiber.interrupt(fiber).pipe(Effect.asVoid)
        return design === "session" ? { task: task(run) } : { ...envelope(run), resultType: "task" }
      })

    const get: RunTasks["get"] = (owner, id) => {
      const run = find(owner, id)
      if (run === undefined) return Effect.fail(unknown(id))
      if (run.design === "session") return Effect.succeed(task(run))
      return Effect.succeed(finished(run))
    }

    const update: RunTasks["update"] = (owner, id, inputResponses) =>
      Effect.gen(function* () {
        const run = find(owner, id)
        if (run === undefined) return yield* unknown(id)
        if (typeof inputResponses === "object" && inputResponses !== null) {
          for (const [key, answer] of Object.entries(inputResponses)) {
            const question = run.questions.get(key)
            if (question === undefined) continue
            run.questions.delete(key)
            yield* Deferred.succeed(question.answer, answer)
          }
        }
        if (run.status === "input_required" && run.questions.size === 0) touch(run, "working")
        return { resultType: "complete" }
      })

    const cancel: RunTasks["cancel"] = (owner, id) =>
      Effect.gen(function* () {
        const run = find(owner, id)
        if (run === undefined) return yield* unknown(id)
        // Cancelling a finished task changes nothing (and is no error).
        if (!TERMINAL.has(run.status)) {
          touch(run, "cancelled")
          yield* run.interrupt
        }
        return run.design === "session" ? task(run) : { resultType: "complete" }
      })

    const result: RunTasks["result"] = (owner, id) =>
      Effect.gen(function* () {
        const run = find(owner, id)
        if (run === undefined) return yield* unknown(id)
        yield* Deferred.await(run.done)
        if (run.status === "completed") return Meta.merge(run.result, { [RELATED_TASK]: { taskId: run.id } })
        return yield* run.failure ?? new RequestCancelled({ message: `the task was ${run.status}`, data: { taskId: run.id } })
      })

    const list: RunTasks["list"] = (owner) =>
      [...runs.values()].filter((run) => run.design === "session" && find(owner, run.id) !== undefined).map(task)

    return { start, owns: (id) => id.startsWith(`${prefix()}${OWN_PREFIX}`), get, update, cancel, result, list }
  })

/** The gateway's own tasks, their ids given after its `sessionIdPrefix`; a team's kept in its store once they end. */
export class OwnTasks extends Context.Service<OwnTasks, RunTasks>()("mcp-agentify/OwnTasks") {
  /** Built from the services it uses (its layer, or the gateway's methods layer: see Gateway). */
  static readonly make: Effect.Effect<OwnTasks["Service"], never, GatewayConfig | TaskRecords | Scope.Scope> = Effect.gen(
    function* () {
      const current = yield* inForce
      const records = yield* TaskRecords
      return yield* make(
        () => idPrefixOf(current()),
        (id, record) => records.save(id, record, RUN_TTL_MS)
      )
    }
  )
  static readonly layer: Layer.Layer<OwnTasks, never, GatewayConfig | TaskRecords> = Layer.effect(OwnTasks, OwnTasks.make)
}
