/**
 * `mcp-agentify auth <backendId>`: signs the gateway in to a remote backend that requires OAuth
 * (see auth/SignIn), with the configuration read as the gateway reads it. The tokens go to the
 * token store, where a running gateway's backend finds them and starts by itself.
 */
import { Effect } from "effect"
import { oauthOf, resolve, type ConfigSources } from "../config/Config.js"
import * as Store from "../auth/Store.js"
import { signIn } from "../auth/SignIn.js"
import * as Secrets from "../observability/Secrets.js"
import { messageOf } from "../data/Json.js"

/** Succeeds with the exit code: 0 signed in, 1 not, 2 no such remote backend. */
export const run = (
  backendId: string,
  sources: ConfigSources,
  print: (text: string) => void,
  openBrowser: boolean
): Effect.Effect<number> =>
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
        { dir, print: (line) => print(`${line}\n`), openBrowser }
      )
      print(`Signed in to ${backend.id}; its tokens are in ${Store.fileOf(dir, backend.id)} (mode 0600).\n`)
      return 0
    } catch (error) {
      print(`mcp-agentify: could not sign in to ${backend.id}: ${Secrets.scrub(messageOf(error))}\n`)
      return 1
    }
  })
