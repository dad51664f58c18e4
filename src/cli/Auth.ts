/**
 * `mcp-agentify auth <backendId>`: signs the gateway in to a remote backend that requires OAuth
 * (see auth/SignIn), with the configuration read as the gateway reads it. The tokens go to the
 * token store, where a running gateway's backend finds them and starts by itself (every gateway of
 * a team, through their store: see gateway/SharedFiles). `--revoke` forgets them.
 */
import { Effect } from "effect"
import { oauthOf, resolve, type ConfigSources } from "../config/Config.js"
import * as Store from "../auth/Store.js"
import * as oauth from "openid-client"
import { configuration, oauthMessage } from "../auth/Client.js"
import { signIn } from "../auth/SignIn.js"
import * as Secrets from "../observability/Secrets.js"
import { messageOf } from "../json/Json.js"
import * as SharedFiles from "../gateway/SharedFiles.js"
import { WrittenFiles } from "../store/WrittenFiles.js"

/** Succeeds with the exit code: 0 signed in, 1 not, 2 no such remote backend. */
export const run = (
  backendId: string,
  sources: ConfigSources,
  print: (text: string) => void,
  openBrowser: boolean
): Effect.Effect<number> =>
  Effect.flatMap(Effect.service(WrittenFiles), (written) =>
    Effect.promise(async () => {
      const config = resolve(sources)
      const backend = config.backends.find((b) => b.id === backendId)
      if (backend === undefined || backend.url === undefined) {
        const remote = config.backends.filter((b) => b.url !== undefined).map((b) => b.id)
        print(
          `mcp-agentify: ${backend === undefined ? "no backend" : "no remote backend"} '${backendId}' ` +
            `(remote backends: ${remote.length === 0 ? "none" : remote.join(", ")})\n`
        )
        return 2
      }
      const dir = Store.directory(sources.env)
      try {
        await signIn(
          { id: backend.id, url: backend.url, settings: oauthOf(backend) },
          { dir, told: written.wrote, print: (line) => print(`${line}\n`), openBrowser }
        )
        print(`Signed in to ${backend.id}; its tokens are in ${Store.fileOf(dir, backend.id)} (mode 0600).\n`)
        return 0
      } catch (error) {
        print(`mcp-agentify: could not sign in to ${backend.id}: ${Secrets.scrub(messageOf(error))}\n`)
        return 1
      }
    })
  ).pipe(SharedFiles.around(sources))

/**
 * `mcp-agentify auth --revoke <backendId> [--subject S]`: the backend's tokens (the gateway's own,
 * or user S's of a `perUser` backend) forgotten, and revoked at their authorization server (RFC
 * 7009) when it offers revocation (the refresh token, which ends the grant, else the access
 * token). A running gateway stops using them at its next request; a user is asked to sign in again.
 * Succeeds with the exit code: 0 revoked or nothing stored, 1 the server refused (the tokens are
 * forgotten all the same), 2 no such remote backend.
 */
export const revoke = (
  backendId: string,
  sources: ConfigSources,
  print: (text: string) => void,
  subject?: string
): Effect.Effect<number> =>
  Effect.flatMap(Effect.service(WrittenFiles), (written) =>
    Effect.promise(async () => {
      const backend = resolve(sources).backends.find((b) => b.id === backendId)
      if (backend?.url === undefined) {
        print(`mcp-agentify: no remote backend '${backendId}'\n`)
        return 2
      }
      if (subject !== undefined && oauthOf(backend)?.perUser !== true) {
        print(`mcp-agentify: backend '${backendId}' does not act as each user (auth.perUser): it has no tokens of ${subject}\n`)
        return 2
      }
      const dir = Store.directory(sources.env)
      const entry = Store.entryOf(backendId, subject)
      const whose = subject === undefined ? `${backendId}'s tokens` : `${subject}'s tokens for ${backendId}`
      const stored = Store.read(dir, entry, sources.env)
      if (stored?.tokens === undefined) {
        Store.remove(dir, entry, written.wrote)
        print(`No tokens are stored for ${subject === undefined ? backendId : `${subject} at ${backendId}`}.\n`)
        return 0
      }
      Store.remove(dir, entry, written.wrote)
      const token = stored.tokens.refresh_token ?? stored.tokens.access_token
      try {
        const config = await configuration(stored.issuer, stored.client)
        if (config.serverMetadata().revocation_endpoint === undefined) {
          print(`Forgot ${whose}; ${stored.issuer} offers no revocation: they lapse when they expire.\n`)
          return 0
        }
        await oauth.tokenRevocation(config, token, {
          token_type_hint: stored.tokens.refresh_token === undefined ? "access_token" : "refresh_token"
        })
        print(`Revoked ${whose} at ${stored.issuer} and forgot them.\n`)
        return 0
      } catch (error) {
        print(`Forgot ${whose}; ${stored.issuer} did not revoke them: ${Secrets.scrub(oauthMessage(error))}\n`)
        return 1
      }
    })
  ).pipe(SharedFiles.around(sources))
