/**
 * Waiting and process inspection for every test: the one poller (`until`, and `eventually` for
 * Effect code), and the one /proc walker (liveness that counts zombies as dead, descendants, RSS).
 */
import { Effect } from "effect"
import { readdirSync, readFileSync } from "node:fs"

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Polls `probe` every `everyMs` until it returns something other than `undefined` or `false`, and
 * resolves with that; throws naming `what` after `timeoutMs`.
 */
export const until = async <A>(
  what: string,
  probe: () => A | undefined | false | Promise<A | undefined | false>,
  timeoutMs = 10_000,
  everyMs = 20
): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(everyMs)
  }
}

/** `until` for Effect code: whether `check` came to hold within `ms` (real time, also under TestClock). */
export const eventually = (check: () => boolean, ms = 2_000): Effect.Effect<boolean> =>
  Effect.promise(() =>
    until("a condition", check, ms).then(
      () => true,
      () => false
    )
  )

/**
 * Whether `pid` is a live process. `kill(pid, 0)` alone also reports zombies, which stay around
 * in containers whose init does not reap orphans; a zombie has exited, so it counts as dead.
 */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  if (process.platform !== "linux") return true
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
  } catch {
    return false
  }
}

const parentOf = (pid: number): number | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
  } catch {
    return undefined
  }
}

/** The gateway's watchdog (see src/backend/Reaper.ts): its own helper, not a backend. */
export const isWatchdog = (pid: number): boolean => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0").includes("agentify-watchdog")
  } catch {
    return false
  }
}

const cmdlineOf = (pid: number): string | undefined => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "latin1")
  } catch {
    return undefined
  }
}

const forkNotExecuted = (child: number, parent: number): boolean => {
  const own = cmdlineOf(child)
  return own !== undefined && own === cmdlineOf(parent)
}

/** Every live process below `pid` (children, grandchildren, ...), from /proc; the watchdog aside. */
export const descendants = (pid: number): Array<number> => {
  const children = new Map<number, Array<number>>()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const child = Number(entry)
    const parent = parentOf(child)
    if (parent === undefined) continue
    const list = children.get(parent) ?? []
    list.push(child)
    children.set(parent, list)
  }
  const found: Array<number> = []
  const visit = (p: number) => {
    for (const c of children.get(p) ?? []) {
      // A fork that has not run its program yet still reads as its parent (the watchdog, between
      // spawn and exec, is then not yet recognisable): it is nothing yet, the next look sees it.
      if (isWatchdog(c) || forkNotExecuted(c, p)) continue
      if (isAlive(c)) found.push(c)
      visit(c)
    }
  }
  visit(pid)
  return found
}

/** Resident set size of `pid` in KiB (VmRSS), from /proc. */
export const rssKiB = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
  if (match === null) throw new Error(`no VmRSS for ${pid}`)
  return Number(match[1])
}

/** Waits until none of `pids` is alive (zombies count as gone); throws naming the survivors. */
export const untilGone = async (pids: ReadonlyArray<number>, timeoutMs = 10_000): Promise<void> => {
  await until(`processes ${pids.filter(isAlive).join(", ")} to exit`, () => pids.every((p) => !isAlive(p)), timeoutMs, 50).catch(
    (error) => {
      // Leave nothing behind even when the test fails.
      for (const p of pids) {
        try {
          process.kill(p, "SIGKILL")
        } catch {
          // gone
        }
      }
      throw error
    }
  )
}
