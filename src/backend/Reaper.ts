/**
 * No orphans, whatever happens to the gateway: every backend process tree is found and stopped.
 *
 * - Each backend is spawned with a marker in its environment (`MCP_AGENTIFY_OWNER=<instance>:<n>`),
 *   which its children inherit, so a grandchild that left the process group (`setsid`, `detached`)
 *   is still found, on Linux through `/proc/<pid>/environ`.
 * - Live process groups are tracked; on any exit of this process (`process.on("exit")`) the ones
 *   still registered get SIGKILL, synchronously.
 * - A watchdog outlives a gateway killed with SIGKILL: a small `/bin/sh` loop (about 1 MB, no Node)
 *   in its own process group that reads the groups to watch on its stdin. When that pipe closes
 *   (the gateway exited, however) it sends SIGTERM, then SIGKILL after a grace period, to every
 *   group still listed and every process carrying this gateway's marker, and exits.
 *
 * Module state, as a process resource: the exit hook and the watchdog are the process's (whichever
 * gateway of it spawned a tree, the process's end must stop it), and the hook must work without any
 * fiber or layer.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import type { Socket } from "node:net"
import { errnoOf } from "../json/Json.js"

const isWindows = process.platform === "win32"

export const MARKER = "MCP_AGENTIFY_OWNER"
/** This gateway process; hex only, so it is safe inside the watchdog's grep pattern. */
const instance = `${process.pid.toString(16)}x${randomBytes(6).toString("hex")}`
let nextTag = 1

const groups = new Set<number>()
let watchdog: ChildProcess | undefined
let exitHookInstalled = false

/** A fresh marker value for one backend process tree. */
export const newTag = (): string => `${instance}:${nextTag++}`

/** The environment entry that marks a process tree as `tag`'s. */
export const markerEnv = (tag: string): Record<string, string> => ({ [MARKER]: tag })

const tell = (line: string) => {
  if (watchdog?.stdin?.writable) watchdog.stdin.write(`${line}\n`)
}

/** A backend's process group is live: stop it on every exit path. */
export const track = (pgid: number): void => {
  installExitHook()
  groups.add(pgid)
  // A watchdog started now is told of every group, this one too.
  if (wanted !== undefined && watchdog === undefined) startWatchdog(wanted)
  else tell(`+${pgid}`)
}

/** The group was stopped and waited for. */
export const untrack = (pgid: number): void => {
  if (groups.delete(pgid)) tell(`-${pgid}`)
}

const signal = (pid: number, sig: NodeJS.Signals) => {
  try {
    process.kill(pid, sig)
  } catch {
    // gone already
  }
}

/**
 * Calls `visit` with each process id in /proc until it returns true; true if one did. A process
 * that goes away, or is not ours to read, while we look is skipped. Undefined without /proc.
 */
const someProcess = (visit: (pid: string) => boolean): boolean | undefined => {
  let entries: Array<string>
  try {
    entries = readdirSync("/proc")
  } catch {
    return undefined
  }
  for (const entry of entries) {
    const c = entry.charCodeAt(0)
    if (c < 48 || c > 57) continue
    try {
      if (visit(entry)) return true
    } catch {
      // gone, or not ours
    }
  }
  return false
}

/** State and process group from /proc/<pid>/stat (`pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses). */
const statOf = (pid: string): { state: string; pgrp: number } => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return { state: fields[0]!, pgrp: Number(fields[2]) }
}

/**
 * Whether any live member of the process group remains. `kill(-pgid, 0)` also counts zombies, and
 * in containers whose init never reaps orphans they stay forever, so on Linux members are looked
 * up in /proc and zombies ignored.
 */
export const groupAlive = (pgid: number): boolean => {
  if (isWindows) return false
  try {
    process.kill(-pgid, 0)
  } catch (error) {
    return errnoOf(error) === "EPERM"
  }
  if (process.platform !== "linux") return true
  return (
    someProcess((pid) => {
      const { pgrp, state } = statOf(pid)
      return pgrp === pgid && state !== "Z"
    }) ?? true
  )
}

/**
 * The live processes whose marker starts with `prefix` (Linux; elsewhere an empty list, and the
 * process group is what is stopped). Zombies are skipped: they are dead, only not yet reaped.
 * Each entry of /proc/<pid>/environ ends with NUL, so a prefix ending in NUL matches exactly.
 */
const markedProcesses = (prefix: string): Array<number> => {
  if (process.platform !== "linux") return []
  const needle = `\0${MARKER}=${prefix}`
  const found: Array<number> = []
  someProcess((pid) => {
    if (`\0${readFileSync(`/proc/${pid}/environ`, "latin1")}`.includes(needle) && statOf(pid).state !== "Z")
      found.push(Number(pid))
    return false
  })
  return found
}

/** The live processes of one backend's tree (`tag` from `newTag`), wherever they moved. */
export const taggedProcesses = (tag: string): Array<number> => markedProcesses(`${tag}\0`)

/** Sends `sig` to each of `pids`. */
export const signalAll = (pids: ReadonlyArray<number>, sig: NodeJS.Signals): void => {
  for (const pid of pids) signal(pid, sig)
}

/** Every exit path of this process, `process.exit` included: what is still tracked gets SIGKILL. */
const installExitHook = () => {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on("exit", () => {
    for (const pgid of groups) signal(-pgid, "SIGKILL")
    signalAll(markedProcesses(`${instance}:`), "SIGKILL")
  })
}

/**
 * The watchdog's script. Reads `+pgid` / `-pgid` lines until its stdin closes, then stops what is
 * left. `trap '' INT HUP`: a terminal's Ctrl-C or hang-up must not take it down with the gateway.
 */
const WATCHDOG_SCRIPT = `
trap '' INT HUP
marker="$1"; grace="$2"; groups=" "
while IFS= read -r line; do
  case "$line" in
    +*) groups="$groups\${line#+} " ;;
    -*) groups=$(printf '%s' "$groups" | sed "s/ \${line#-} / /") ;;
  esac
done
found=0
reap() {
  found=0
  for g in $groups; do kill -s "$1" -- "-$g" 2>/dev/null && found=1; done
  if [ -d /proc/self ]; then
    for f in $(grep -lzs "^$marker" /proc/[0-9]*/environ 2>/dev/null); do
      p="\${f#/proc/}"; kill -s "$1" "\${p%/environ}" 2>/dev/null && found=1
    done
  fi
}
reap TERM
[ "$found" = 1 ] || exit 0
sleep "$grace"
reap KILL
`

/** The watchdog's grace once the process wants one (`enableWatchdog`); undefined: none wanted. */
let wanted: number | undefined

/**
 * The process wants the watchdog: started with the first backend's process group (a start that
 * spawns no backend spawns no watchdog either), at once if one is running already.
 */
export const enableWatchdog = (graceSeconds = 2): void => {
  wanted = graceSeconds
  if (groups.size > 0) startWatchdog(graceSeconds)
}

/**
 * Starts the watchdog (once; not on Windows). `graceSeconds` is its SIGTERM-to-SIGKILL wait.
 * It holds nothing of this process's: its stdin pipe is unreferenced, so it never keeps the
 * gateway alive, and the kernel closes that pipe when the gateway dies, even by SIGKILL.
 */
export const startWatchdog = (graceSeconds = 2): void => {
  if (watchdog !== undefined || isWindows) return
  installExitHook()
  const env: Record<string, string> = {}
  for (const name of ["PATH", "LANG", "LC_ALL"]) if (process.env[name] !== undefined) env[name] = process.env[name]!
  try {
    watchdog = spawn("/bin/sh", ["-c", WATCHDOG_SCRIPT, "agentify-watchdog", `${MARKER}=${instance}:`, String(graceSeconds)], {
      stdio: ["pipe", "ignore", "ignore"],
      detached: true,
      env
    })
  } catch {
    watchdog = undefined
    return
  }
  const started = watchdog
  started.on("error", () => {
    if (watchdog === started) watchdog = undefined
  })
  // Out of descriptors (EMFILE), the child comes without its pipe: no watchdog this time; the
  // next backend's start tries again.
  if (!started.stdin) {
    watchdog = undefined
    return
  }
  started.stdin.on("error", () => {})
  started.unref()
  ;(started.stdin as Socket).unref?.()
  for (const pgid of groups) tell(`+${pgid}`)
}

/** The watchdog's pid, for tests and the debug UI. */
export const watchdogPid = (): number | undefined => watchdog?.pid
