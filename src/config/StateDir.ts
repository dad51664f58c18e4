/**
 * Where the gateway keeps its state (tool pins, the compile cache): `AGENTIFY_STATE_DIR`, else
 * `$XDG_STATE_HOME/mcp-agentify`, else `~/.local/state/mcp-agentify`. Small and free of the rest
 * of the gateway: the launcher reads it before anything else loads.
 */
import * as os from "node:os"
import * as path from "node:path"

export const stateDirOf = (env: Readonly<Record<string, string | undefined>>, home?: string): string => {
  const own = env.AGENTIFY_STATE_DIR?.trim()
  if (own) return path.resolve(own)
  const xdg = env.XDG_STATE_HOME?.trim()
  return xdg ? path.join(path.resolve(xdg), "mcp-agentify") : path.join(home ?? os.homedir(), ".local", "state", "mcp-agentify")
}
