/**
 * Before any test: the end-to-end tests run the built CLI (dist/), so dist/ must be built from the
 * sources as they are. When the sources' hash differs from the one the last build recorded (see
 * scripts/sourceHash.mjs), this builds first; a failed build fails the run rather than testing
 * stale code.
 */
import { spawnSync } from "node:child_process"
// @ts-expect-error: a plain ES module script, without types
import { recordedHash, root, sourceHash } from "../../scripts/sourceHash.mjs"

export default function setup(): void {
  if (recordedHash() === sourceHash()) return
  process.stderr.write("dist/ is older than the sources: building before the tests\n")
  const built = spawnSync("npm", ["run", "build", "--silent"], { cwd: root, stdio: ["ignore", 2, 2] })
  if (built.status !== 0) throw new Error("the build failed: the tests would run stale code")
}
