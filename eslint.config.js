// ESLint: JavaScript's and typescript-eslint's recommended rules (syntax-only, fast), with the few
// changes this code base needs. Formatting is Prettier's business (.prettierrc.json).
import js from "@eslint/js"
import tseslint from "typescript-eslint"

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "test/bench/results/", "coverage/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: "readonly",
        console: "readonly",
        Buffer: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        setInterval: "readonly",
        clearInterval: "readonly",
        URL: "readonly",
        TextEncoder: "readonly",
        TextDecoder: "readonly",
        fetch: "readonly",
        AbortController: "readonly",
        AbortSignal: "readonly",
        performance: "readonly",
        structuredClone: "readonly"
      }
    },
    rules: {
      // tsc's noUnused* already reports these (and knows about `_` parameters).
      "@typescript-eslint/no-unused-vars": "off",
      "no-unused-vars": "off",
      // A `let` assigned once but read first by a callback (a listener set up before the value it
      // reports on exists) cannot be a `const`.
      "prefer-const": ["error", { ignoreReadBeforeAssign: true }]
    }
  },
  {
    // Tests, benchmarks and scripts read JSON off the wire; typing every reply would say nothing.
    files: ["test/**", "scripts/**", "examples/**"],
    rules: { "@typescript-eslint/no-explicit-any": "off" }
  }
)
