/**
 * The Node the gateway needs, checked before the gateway's code loads: a user whose Node is older gets
 * one line saying which Node to install, not a stack from a module that needs a newer one.
 *
 * Imports nothing, and is written so that an old Node can still parse and run it.
 */

/** The oldest Node the package declares (`engines`), as [major, minor]. */
export const REQUIRED: readonly [number, number] = [22, 19]

/** Whether `version` ("22.19.0", "v20.20.2") is at least `REQUIRED`. */
export const supported = (version: string): boolean => {
  const [major = 0, minor = 0] = version.replace(/^v/, "").split(".").map(Number)
  return major > REQUIRED[0] || (major === REQUIRED[0] && minor >= REQUIRED[1])
}

if (!supported(process.versions.node)) {
  process.stderr.write(
    `mcp-agentify needs Node.js ${REQUIRED.join(".")} or later; this is Node.js ${process.versions.node} (${process.execPath}). ` +
      "Install a current Node.js (https://nodejs.org) and start it again.\n"
  )
  process.exit(1)
}
