/**
 * Where the gateway keeps what an authorization server gave it for a backend: one file per
 * backend, `<dir>/<backendId>.json`, mode 0600 in a 0700 directory, written whole (a temporary file
 * renamed over the old one, so a reader never sees half of it). The directory is
 * `AGENTIFY_TOKEN_DIR`, else `$XDG_CONFIG_HOME/mcp-agentify/tokens`, else
 * `~/.config/mcp-agentify/tokens`.
 *
 * A file names the resource (the backend's URL) and the issuer its tokens are for: a token is used
 * only for that resource, so a backend whose URL changed never receives another server's token.
 * Every token and client secret read or written is registered with the scrubber at once.
 *
 * A backend that acts as each user (`perUser`) has a file per user besides:
 * `<dir>/<backendId>/users/<sha-256 of the subject>.json` (see `entryOf`), the subject's name
 * inside the sealed file only.
 *
 * Sealed at rest with AES-256-GCM, bound to what it is for (the backend's id, and the user's for a
 * user's file, is the authenticated data: a file copied to another backend's or user's name does
 * not open). The key is `AGENTIFY_TOKEN_KEY`
 * (32 bytes, base64 or hex), else `token.key` in the state directory (made on first write, 0600):
 * a copy of the token directory alone gives nobody a token. A file written before sealing is read
 * as it is and sealed when next written.
 */
import { Effect } from "effect"
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"
import { chmodSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, watch, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { stateDirOf } from "../config/StateDir.js"
import * as RegularFile from "../config/RegularFile.js"
import * as Secrets from "../observability/Secrets.js"
import { nobody, type Told } from "../store/WrittenFiles.js"

export interface StoredTokens {
  readonly access_token: string
  readonly token_type?: string | undefined
  readonly refresh_token?: string | undefined
  /** Milliseconds since the epoch; absent: the server did not say. */
  readonly expires_at?: number | undefined
  /** When it was obtained (ms since the epoch), to know how long it lives. */
  readonly obtained_at?: number | undefined
  readonly scope?: string | undefined
}

export interface Stored {
  /** The resource the tokens are for (RFC 8707 `resource`): the backend's URL, or a path above it. */
  readonly resource: string
  readonly issuer: string
  /** The client as the authorization server knows it (registered, or configured). */
  readonly client: {
    readonly client_id: string
    readonly client_secret?: string | undefined
    /** How it authenticates at the token endpoint, when its registration said. */
    readonly token_endpoint_auth_method?: string | undefined
  }
  readonly tokens?: StoredTokens | undefined
  /** Whose tokens these are, in a user's file of a `perUser` backend (the token's subject at the gateway). */
  readonly subject?: string | undefined
}

export const directory = (env: Readonly<Record<string, string | undefined>> = process.env): string =>
  env.AGENTIFY_TOKEN_DIR?.trim() ||
  path.join(env.XDG_CONFIG_HOME?.trim() || path.join(os.homedir(), ".config"), "mcp-agentify", "tokens")

/**
 * What a file holds tokens for, as every function here names it: the backend's id (the gateway's
 * own sign-in), or `<backendId>/users/<sha-256 of subject>` (a user's own, for a `perUser`
 * backend). Hashed: a subject is any string, and a file name should not say whose it is.
 */
export const entryOf = (backendId: string, subject?: string | undefined): string =>
  subject === undefined ? backendId : `${backendId}/users/${createHash("sha256").update(subject).digest("hex").slice(0, 40)}`

export const fileOf = (dir: string, entry: string): string => path.join(dir, `${entry}.json`)

const register = (stored: Stored): Stored => {
  Secrets.register(stored.tokens?.access_token ?? "")
  Secrets.register(stored.tokens?.refresh_token ?? "")
  Secrets.register(stored.client.client_secret ?? "")
  return stored
}

const KEY_BYTES = 32
/** The largest token file read: tokens, a registration and a subject are kilobytes. */
export const MAX_TOKEN_FILE_BYTES = 1024 * 1024

/**
 * The key tokens are sealed with: `AGENTIFY_TOKEN_KEY`, else the state directory's `token.key`
 * (made when `create`, 0600 in a 0700 directory). Undefined: none yet (nothing was sealed).
 */
export const keyOf = (env: Readonly<Record<string, string | undefined>> = process.env, create = false): Buffer | undefined => {
  const given = env.AGENTIFY_TOKEN_KEY?.trim()
  if (given) {
    const key = /^[0-9a-f]{64}$/i.test(given) ? Buffer.from(given, "hex") : Buffer.from(given, "base64")
    if (key.length !== KEY_BYTES) throw new Error("AGENTIFY_TOKEN_KEY must be 32 bytes, as 64 hex digits or base64")
    return key
  }
  const dir = stateDirOf(env)
  const file = path.join(dir, "token.key")
  // None yet, or not a regular file of a key's size (said once): a key is made only where none is.
  const found = RegularFile.readState(file, KEY_BYTES)?.bytes
  if (found?.length === KEY_BYTES) return found
  if (!create) return undefined
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const key = randomBytes(KEY_BYTES)
  // `wx`: two processes making one at once keep the first's.
  try {
    writeFileSync(file, key, { mode: 0o600, flag: "wx" })
    return key
  } catch {
    const theirs = RegularFile.readState(file, KEY_BYTES)?.bytes
    if (theirs?.length !== KEY_BYTES) throw new Error(`no usable token key at ${file}`)
    return theirs
  }
}

interface Sealed {
  readonly sealed: "A256GCM"
  readonly iv: string
  readonly tag: string
  readonly data: string
}

const boundTo = (entry: string) => Buffer.from(`mcp-agentify tokens of ${entry}`)

const seal = (stored: Stored, entry: string, key: Buffer): Sealed => {
  const iv = randomBytes(12)
  const cipher = createCipheriv("aes-256-gcm", key, iv)
  cipher.setAAD(boundTo(entry))
  const data = Buffer.concat([cipher.update(JSON.stringify(stored), "utf8"), cipher.final()])
  return {
    sealed: "A256GCM",
    iv: iv.toString("base64"),
    tag: cipher.getAuthTag().toString("base64"),
    data: data.toString("base64")
  }
}

/** A sealed file's content, or undefined when it does not open (another key, another backend's file, altered). */
const open = (sealed: Sealed, entry: string, key: Buffer | undefined): unknown => {
  if (key === undefined) return undefined
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(sealed.iv, "base64"))
    decipher.setAAD(boundTo(entry))
    decipher.setAuthTag(Buffer.from(sealed.tag, "base64"))
    return JSON.parse(Buffer.concat([decipher.update(Buffer.from(sealed.data, "base64")), decipher.final()]).toString("utf8"))
  } catch {
    return undefined
  }
}

/** What is stored for `entry` (see `entryOf`), if anything readable is. */
export const read = (
  dir: string,
  entry: string,
  env: Readonly<Record<string, string | undefined>> = process.env
): Stored | undefined => {
  // Not a regular file (a FIFO, a link), or too large: said once, then as if none.
  const text = RegularFile.readStateText(fileOf(dir, entry), MAX_TOKEN_FILE_BYTES)
  if (text === undefined) return undefined
  try {
    const onDisk = JSON.parse(text) as Partial<Stored> & Partial<Sealed>
    // A file from before sealing is read as it is; a user's file was never anything but sealed.
    const plain = onDisk.sealed === undefined && !entry.includes("/")
    const parsed = (onDisk.sealed === "A256GCM" ? open(onDisk as Sealed, entry, keyOf(env)) : plain ? onDisk : undefined) as
      Partial<Stored> | undefined
    if (parsed === undefined) return undefined
    if (typeof parsed.resource !== "string" || typeof parsed.issuer !== "string") return undefined
    if (typeof parsed.client?.client_id !== "string") return undefined
    return register(parsed as Stored)
  } catch {
    return undefined
  }
}

/** When `entry`'s file was last written (ms, with sub-millisecond precision), if there is one. */
export const writtenAt = (dir: string, entry: string): number | undefined => {
  try {
    return statSync(fileOf(dir, entry)).mtimeMs
  } catch {
    return undefined
  }
}

/** Writes what is stored for `entry` (0600; the directory 0700); `told`: whoever keeps the team's files alike (see store/WrittenFiles). */
export const write = (
  dir: string,
  entry: string,
  stored: Stored,
  env: Readonly<Record<string, string | undefined>> = process.env,
  told: Told = nobody
): void => {
  register(stored)
  const file = fileOf(dir, entry)
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  const temporary = `${file}.${process.pid}.tmp`
  writeFileSync(temporary, `${JSON.stringify(seal(stored, entry, keyOf(env, true)!))}\n`, { mode: 0o600 })
  // A file left from an older umask keeps its mode on rename: set it on the new one.
  chmodSync(temporary, 0o600)
  renameSync(temporary, file)
  told("tokens", entry)
}

/** The users signed in to a `perUser` backend, with what is stored for each (by subject). */
export const usersOf = (
  dir: string,
  backendId: string,
  env: Readonly<Record<string, string | undefined>> = process.env
): ReadonlyArray<Stored & { readonly subject: string }> => {
  let names: ReadonlyArray<string>
  try {
    names = readdirSync(path.join(dir, backendId, "users")).filter((n) => n.endsWith(".json"))
  } catch {
    return []
  }
  return names
    .map((name) => read(dir, `${backendId}/users/${name.slice(0, -".json".length)}`, env))
    .filter((stored): stored is Stored & { readonly subject: string } => typeof stored?.subject === "string")
    .sort((a, b) => a.subject.localeCompare(b.subject))
}

/** Forgets the tokens (a refresh the server refused), keeping the client registration. */
export const dropTokens = (dir: string, entry: string, told: Told = nobody): void => {
  const stored = read(dir, entry)
  if (stored === undefined) return
  const { tokens: _dropped, ...rest } = stored
  write(dir, entry, rest, process.env, told)
}

export const remove = (dir: string, entry: string, told: Told = nobody): void => {
  rmSync(fileOf(dir, entry), { force: true })
  told("tokens", entry)
}

/**
 * Completes when `backendId`'s file is written (someone signed in with `mcp-agentify auth`, in
 * another process): a backend that needs auth starts again then, without a restart of the gateway.
 */
export const written = (dir: string, backendId: string): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    const name = path.basename(fileOf(dir, backendId))
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      const watcher = watch(dir, { persistent: false }, (_event, file) => {
        if (file !== null && String(file) === name) {
          watcher.close()
          resume(Effect.void)
        }
      })
      watcher.on("error", () => watcher.close())
      return Effect.sync(() => watcher.close())
    } catch {
      // No directory to watch: nothing will be written there; the backend stays as it is.
      return Effect.void
    }
  })

/** A stored sign-in as `check` and the debug UI show it: where, for what, until when; never a token. */
export const describe = (stored: Stored | undefined, backendId: string, now = Date.now()): string => {
  if (stored?.tokens === undefined) {
    return stored?.subject !== undefined
      ? "not signed in (asked at their next call)"
      : `not signed in (run mcp-agentify auth ${backendId})`
  }
  const { scope, expires_at: expires, refresh_token: refresh } = stored.tokens
  const left =
    expires === undefined
      ? ""
      : expires > now
        ? `, the access token good for ${Math.round((expires - now) / 60_000)} min`
        : ", the access token expired"
  return `signed in at ${stored.issuer}${scope === undefined ? "" : ` for ${scope}`}${left}${refresh === undefined ? "" : ", renewable"}`
}
