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
 */
import { Effect } from "effect"
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, watch, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Secrets from "../observability/Secrets.js"

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
}

export const directory = (env: Readonly<Record<string, string | undefined>> = process.env): string =>
  env.AGENTIFY_TOKEN_DIR?.trim() ||
  path.join(env.XDG_CONFIG_HOME?.trim() || path.join(os.homedir(), ".config"), "mcp-agentify", "tokens")

export const fileOf = (dir: string, backendId: string): string => path.join(dir, `${backendId}.json`)

const register = (stored: Stored): Stored => {
  Secrets.register(stored.tokens?.access_token ?? "")
  Secrets.register(stored.tokens?.refresh_token ?? "")
  Secrets.register(stored.client.client_secret ?? "")
  return stored
}

/** What is stored for `backendId`, if anything readable is. */
export const read = (dir: string, backendId: string): Stored | undefined => {
  try {
    const parsed = JSON.parse(readFileSync(fileOf(dir, backendId), "utf8")) as Partial<Stored>
    if (typeof parsed.resource !== "string" || typeof parsed.issuer !== "string") return undefined
    if (typeof parsed.client?.client_id !== "string") return undefined
    return register(parsed as Stored)
  } catch {
    return undefined
  }
}

/** When `backendId`'s file was last written (ms, with sub-millisecond precision), if there is one. */
export const writtenAt = (dir: string, backendId: string): number | undefined => {
  try {
    return statSync(fileOf(dir, backendId)).mtimeMs
  } catch {
    return undefined
  }
}

/** Writes what is stored for `backendId` (0600; the directory 0700). */
export const write = (dir: string, backendId: string, stored: Stored): void => {
  register(stored)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const file = fileOf(dir, backendId)
  const temporary = `${file}.${process.pid}.tmp`
  writeFileSync(temporary, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 })
  // A file left from an older umask keeps its mode on rename: set it on the new one.
  chmodSync(temporary, 0o600)
  renameSync(temporary, file)
}

/** Forgets the tokens (a refresh the server refused), keeping the client registration. */
export const dropTokens = (dir: string, backendId: string): void => {
  const stored = read(dir, backendId)
  if (stored === undefined) return
  const { tokens: _dropped, ...rest } = stored
  write(dir, backendId, rest)
}

export const remove = (dir: string, backendId: string): void => rmSync(fileOf(dir, backendId), { force: true })

/**
 * Completes when `backendId`'s file is written (someone signed in with `mcp-agentify auth`, in
 * another process): a backend that needs auth starts again then, without a restart of the gateway.
 */
export const written = (dir: string, backendId: string): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
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
