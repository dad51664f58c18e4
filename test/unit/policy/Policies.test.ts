/**
 * The policies in force follow the configuration from the moment the layer is built: a reload
 * that comes right after the first load (before the follower's fiber would have first run, in
 * Effect 4's order of forks) is not lost.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { GatewayConfig } from "../../../src/config/Config.js"
import { Policies } from "../../../src/policy/Policies.js"

describe("Policies", () => {
  it.live("a configuration that names a policies file right after the layer is built is followed", () =>
    Effect.gen(function* () {
      const file = join(mkdtempSync(join(tmpdir(), "agentify-policies-")), "team.cedar")
      writeFileSync(file, '@id("everyone")\npermit(principal, action, resource);\n')
      const scope = yield* Scope.make()
      const built = yield* Layer.buildWithScope(
        Policies.layer.pipe(Layer.provideMerge(GatewayConfig.layerFromOptions({ backends: [{ id: "fs", command: "node" }] }))),
        scope
      )
      const config = Context.get(built, GatewayConfig)
      const policies = Context.get(built, Policies)
      expect(policies.current()).toBeUndefined()
      const now = yield* config.current
      yield* config.replace({ config: { ...now, policies: file }, sources: { env: {} } })
      // Bounded by turns, not time: the follower applies it within a few.
      for (let turn = 0; turn < 200 && policies.current() === undefined; turn++) yield* Effect.sleep(5)
      expect(policies.current()?.file).toBe(file)
      expect(policies.current()?.ids).toEqual(["everyone"])
      yield* Scope.close(scope, Exit.void)
    })
  )
})
