import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

export default defineConfig({
  resolve: {
    // The examples import the package by name, as an app would; tests run them against the source.
    alias: { "mcp-agentify": fileURLToPath(new URL("./src/index.ts", import.meta.url)) }
  },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    setupFiles: ["test/support/setup.ts"],
    // Integration tests spawn real processes; on a 2-core machine a little patience avoids flakes.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Vitest 5 has no pool options: a pool's bound is `maxWorkers` (no lower bound).
    pool: "forks",
    maxWorkers: 2,
    reporters: ["default"]
  }
})
