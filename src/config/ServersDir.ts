/**
 * `--servers-dir DIR`: every subfolder of DIR is an MCP server (a checkout, a git submodule), and
 * how to run it is read from what it holds: `package.json` (its `bin`, `main` or `start` script),
 * `pyproject.toml` (its script entry point, through `uv run` when uv is installed, else `python3`),
 * `go.mod` (`go run .`) or `Cargo.toml` (`cargo run`). `DIR/config.json` overrides per server in
 * the `{"servers": {...}, "defaults": {...}}` shape, keyed by folder name.
 *
 * The scan only reads files: nothing is installed or built (a server whose dependencies are
 * missing fails to start and says so, like any other).
 */
import { Result } from "effect"
import { type Dirent, existsSync, readdirSync, realpathSync, statSync } from "node:fs"
import * as RegularFile from "./RegularFile.js"
import * as path from "node:path"
import { parseJsonc, setOwn } from "./Jsonc.js"
import { errnoOf, messageOf } from "../json/Json.js"

export interface Detected {
  /** The folder's name: the server's key in the map. */
  readonly name: string
  readonly entry: Record<string, unknown>
  /** How it was detected, for the logs and `check`: "package.json bin (node dist/index.js)". */
  readonly how: string
}

export interface Scan {
  readonly servers: ReadonlyArray<Detected>
  /** Folders that hold no server the scan recognises, and why. */
  readonly skipped: ReadonlyArray<string>
  /** DIR/config.json, when there is one (parsed, not yet validated). */
  readonly overrides: Record<string, unknown> | undefined
}

/** A manifest of a server's folder is kilobytes: read bounded, never a FIFO or a device (see RegularFile). */
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024
const readText = (file: string): string => RegularFile.readUserText(file, MAX_MANIFEST_BYTES)
const readJson = (file: string): unknown => JSON.parse(readText(file))

/** Whether `command` is on PATH (a plain scan: no process is started). */
export const onPath = (command: string, env: Readonly<Record<string, string | undefined>> = process.env): boolean =>
  (env.PATH ?? "")
    .split(path.delimiter)
    .filter((dir) => dir !== "")
    .some((dir) => {
      try {
        return statSync(path.join(dir, command)).isFile()
      } catch {
        return false
      }
    })

/** A Node server: its `bin` (the first), else `main`, else `npm start`. */
const fromPackageJson = (dir: string): Omit<Detected, "name"> | string => {
  let pkg: { bin?: unknown; main?: unknown; scripts?: { start?: unknown } }
  try {
    pkg = readJson(path.join(dir, "package.json")) as typeof pkg
  } catch (error) {
    return `package.json is not valid JSON (${messageOf(error).slice(0, 100)})`
  }
  const bin =
    typeof pkg.bin === "string"
      ? pkg.bin
      : typeof pkg.bin === "object" && pkg.bin !== null
        ? Object.values(pkg.bin)[0]
        : undefined
  const script =
    typeof bin === "string"
      ? { file: bin, how: "bin" }
      : typeof pkg.main === "string"
        ? { file: pkg.main, how: "main" }
        : undefined
  if (script !== undefined) {
    const file = path.resolve(dir, script.file)
    if (!file.startsWith(dir + path.sep)) return `package.json ${script.how} points outside the folder`
    return {
      entry: { command: process.execPath, args: [file], cwd: dir },
      how: `package.json ${script.how} (node ${path.relative(dir, file)})`
    }
  }
  if (typeof pkg.scripts?.start === "string") {
    // --silent: npm's own banner would otherwise go to stdout, which is the protocol.
    return {
      entry: { command: "npm", args: ["start", "--silent"], cwd: dir },
      how: "package.json scripts.start (npm start --silent)"
    }
  }
  return "package.json has no bin, main or scripts.start"
}

/** `[project.scripts]`'s first entry, read from the TOML without a TOML parser (a name = "module:function" line). */
const pyprojectScript = (text: string): { name: string; target: string } | undefined => {
  const section = /^\[project\.scripts\]\s*$([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(text)?.[1]
  const line =
    section === undefined
      ? undefined
      : /^\s*["']?([A-Za-z0-9_.-]+)["']?\s*=\s*["']([A-Za-z0-9_.]+:[A-Za-z0-9_.]+)["']/m.exec(section)
  return line === null || line === undefined ? undefined : { name: line[1]!, target: line[2]! }
}

/** A Python server: its script entry through `uv run`, else the entry point called by `python3`, else `python3 -m`. */
const fromPyproject = (dir: string, env: Readonly<Record<string, string | undefined>>): Omit<Detected, "name"> | string => {
  const text = readText(path.join(dir, "pyproject.toml"))
  const script = pyprojectScript(text)
  const srcLayout = existsSync(path.join(dir, "src"))
  if (script !== undefined && onPath("uv", env)) {
    return {
      entry: { command: "uv", args: ["run", "--quiet", "--directory", dir, script.name], cwd: dir },
      how: `pyproject.toml [project.scripts] ${script.name} (uv run)`
    }
  }
  const pythonEnv = srcLayout ? { env: { PYTHONPATH: path.join(dir, "src") } } : {}
  if (script !== undefined) {
    const [module, fn] = script.target.split(":") as [string, string]
    return {
      entry: {
        command: "python3",
        args: ["-c", `import sys; from ${module} import ${fn.split(".")[0]}; sys.exit(${fn}())`],
        cwd: dir,
        ...pythonEnv
      },
      how: `pyproject.toml [project.scripts] ${script.name} (python3, ${script.target})`
    }
  }
  const name = /^\s*name\s*=\s*["']([A-Za-z0-9_.-]+)["']/m.exec(text)?.[1]?.replace(/-/g, "_")
  if (name !== undefined) {
    for (const base of [dir, path.join(dir, "src")]) {
      if (existsSync(path.join(base, name, "__main__.py"))) {
        return {
          entry: { command: "python3", args: ["-m", name], cwd: dir, ...pythonEnv },
          how: `pyproject.toml package ${name} (python3 -m ${name})`
        }
      }
    }
  }
  return "pyproject.toml has no [project.scripts] entry and its package no __main__.py"
}

const detect = (dir: string, env: Readonly<Record<string, string | undefined>>): Omit<Detected, "name"> | string => {
  const has = (file: string) => existsSync(path.join(dir, file))
  if (has("package.json")) return fromPackageJson(dir)
  if (has("pyproject.toml")) return fromPyproject(dir, env)
  if (has("go.mod")) return { entry: { command: "go", args: ["run", "."], cwd: dir }, how: "go.mod (go run .)" }
  if (has("Cargo.toml")) {
    return {
      entry: { command: "cargo", args: ["run", "--quiet", "--release"], cwd: dir },
      how: "Cargo.toml (cargo run --release)"
    }
  }
  return "no package.json, pyproject.toml, go.mod or Cargo.toml"
}

/** Files of DIR that are the scan's own, not servers. */
const OWN_FILES = new Set(["config.json"])

/**
 * The entries of DIR that may be servers: folders, and links to folders (servers are often
 * linked in). Every other entry is named in `skipped` with why, so nothing is left out silently;
 * a link back into DIR's own path, or to a folder already listed, is skipped (no loops, no twins).
 */
const candidates = (dir: string, entries: ReadonlyArray<Dirent>, skipped: Array<string>): Array<string> => {
  const names: Array<string> = []
  const seen = new Map<string, string>()
  const home = realpathSync(dir)
  for (const entry of entries) {
    const name = entry.name
    if (OWN_FILES.has(name)) continue
    if (name.startsWith(".")) {
      skipped.push(`${name}: hidden`)
      continue
    }
    if (name === "node_modules") {
      skipped.push(`${name}: dependencies, not a server`)
      continue
    }
    const full = path.join(dir, name)
    let real: string
    let isFolder: boolean
    try {
      real = realpathSync(full)
      isFolder = statSync(real).isDirectory()
    } catch (error) {
      const code = errnoOf(error)
      skipped.push(`${name}: ${code === "ELOOP" ? "a link that loops" : `a link to nothing (${code ?? "unreadable"})`}`)
      continue
    }
    if (!isFolder) {
      skipped.push(`${name}: a file, not a folder`)
      continue
    }
    if (home === real || home.startsWith(real + path.sep)) {
      skipped.push(`${name}: links back to the servers directory or a folder above it`)
      continue
    }
    const twin = seen.get(real)
    if (twin !== undefined) {
      skipped.push(`${name}: the same folder as ${twin}`)
      continue
    }
    seen.set(real, name)
    names.push(name)
  }
  return names
}

/** Scans DIR; throws with a plain message when DIR cannot be read or its config.json is not JSON. */
export const scan = (given: string, env: Readonly<Record<string, string | undefined>> = process.env): Scan => {
  const dir = path.resolve(given)
  let entries: Array<Dirent>
  try {
    entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))
  } catch (error) {
    const why = errnoOf(error) ?? messageOf(error)
    throw new Error(`cannot read the servers directory ${dir}: ${why}`, { cause: error })
  }
  const skipped: Array<string> = []
  const names = candidates(dir, entries, skipped)
  let overrides: Record<string, unknown> | undefined
  const configFile = path.join(dir, "config.json")
  if (existsSync(configFile)) {
    const parsed = parseJsonc(readText(configFile), configFile)
    if (Result.isFailure(parsed)) throw new Error(`not valid JSON: ${parsed.failure}`)
    overrides = parsed.success as Record<string, unknown>
  }
  const servers: Array<Detected> = []
  for (const name of names) {
    const found = detect(path.join(dir, name), env)
    if (typeof found === "string") skipped.push(`${name}: ${found}`)
    else servers.push({ name, ...found })
  }
  return { servers, skipped, overrides }
}

/**
 * The scan as a `{servers, defaults}` document: each detected entry with DIR/config.json's entry
 * for that folder laid over it. A folder the scan skipped is a server still when config.json gives
 * it a command.
 */
export const toOptions = (result: Scan): Record<string, unknown> => {
  const overrides = result.overrides ?? {}
  const own = (typeof overrides.servers === "object" && overrides.servers !== null ? overrides.servers : {}) as Record<
    string,
    Record<string, unknown>
  >
  const servers: Record<string, unknown> = {}
  // Own data properties: a folder or an entry named `__proto__` is kept, for the config check to refuse by name.
  for (const server of result.servers) {
    setOwn(servers, server.name, { ...server.entry, ...(Object.hasOwn(own, server.name) ? own[server.name] : {}) })
  }
  for (const [name, entry] of Object.entries(own)) if (!Object.hasOwn(servers, name)) setOwn(servers, name, entry)
  const { servers: _servers, ...rest } = overrides
  return { ...rest, servers }
}
