// ESLint: JavaScript's and typescript-eslint's recommended rules (syntax-only, fast), with the few
// changes this code base needs. Formatting is Prettier's business (.prettierrc.json).
import js from "@eslint/js"
import tseslint from "typescript-eslint"

/**
 * A module's imports stand together at its top: code between them (a constant, a helper, a
 * re-export's neighbour) hides what the module depends on. ESLint has no such rule of its own.
 */
const importsFirst = {
  meta: { type: "suggestion", messages: { late: "Imports stand together at the top of the module, before any code." } },
  create: (context) => ({
    Program: (program) => {
      let code = false
      for (const statement of program.body) {
        // `export ... from` is an import too; a directive ("use strict") is not code.
        const imports =
          statement.type === "ImportDeclaration" ||
          statement.type === "ExportAllDeclaration" ||
          (statement.type === "ExportNamedDeclaration" && statement.source !== null && statement.source !== undefined)
        if (imports) {
          if (code) context.report({ node: statement, messageId: "late" })
        } else if (!(statement.type === "ExpressionStatement" && statement.directive !== undefined)) code = true
      }
    }
  })
}

/**
 * A request reaches a backend through the gateway's forwarder, whose caller is never left out:
 * the backend layer's requester is its own and the forwarder's (see src/backend/Requester.ts).
 */
const REQUESTER = {
  group: ["**/backend/Requester.js"],
  message: "Ask the forwarder (gateway/pipeline/Forwarding) as a caller: a backend's requester is the backend layer's own."
}
const REQUESTER_USERS = ["src/backend/**", "src/gateway/pipeline/Forwarding.ts", "src/gateway/Gateway.ts"]

/**
 * Failures travel as tagged errors (protocol/Errors' closed `GatewayError`) to the edge, where a
 * reply is written; only there, and where a value that is no reply carries the wire's form (each
 * says why), is one turned into `{code, message, data}`. `codeOf` is free for the code alone.
 */
const WIRE_FORM = {
  group: ["**/protocol/Errors.js"],
  importNames: ["toRpcError"],
  message:
    "Fail with the tagged error: it is mapped to the wire at the edge (jsonrpc/Peer, gateway/clients). For the code alone, use codeOf."
}
const WIRE_FORM_USERS = [
  "src/protocol/**",
  "src/Errors.ts",
  "src/index.ts",
  // Where replies are written: a session's peer, the stateless dispatcher, the answers to a backend's requests.
  "src/jsonrpc/Peer.ts",
  "src/gateway/clients/**",
  "src/backend/Handshake.ts",
  // The terminal is its session's edge: the reply is printed.
  "src/cli/Terminal.ts",
  // Values that carry the wire's form: a tool result naming its error, a task's kept failure.
  "src/gateway/methods/OwnTools.ts",
  "src/gateway/routing/RunTasks.ts"
]

/**
 * Effect 4 has no @effect/platform: its HTTP, socket and process modules are in `effect` itself
 * (`effect/http/HttpRouter`...), and a stray import of the old package would load a second Effect.
 */
const PLATFORM = {
  group: ["@effect/platform", "@effect/platform/*"],
  message: "Effect 4: import effect/http/..., effect/process/... (or @effect/platform-node's Node layers)."
}

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
    plugins: { local: { rules: { "imports-first": importsFirst } } },
    rules: {
      "local/imports-first": "error",
      // tsc's noUnused* already reports these (and knows about `_` parameters).
      "@typescript-eslint/no-unused-vars": "off",
      "no-unused-vars": "off",
      // A `let` assigned once but read first by a callback (a listener set up before the value it
      // reports on exists) cannot be a `const`.
      "prefer-const": ["error", { ignoreReadBeforeAssign: true }],
      "no-restricted-imports": ["error", { patterns: [PLATFORM] }]
    }
  },
  // Two imports kept to their places (each block below overrides the one before for the files it names).
  {
    files: ["src/**"],
    rules: { "no-restricted-imports": ["error", { patterns: [PLATFORM, REQUESTER, WIRE_FORM] }] }
  },
  { files: REQUESTER_USERS, rules: { "no-restricted-imports": ["error", { patterns: [PLATFORM, WIRE_FORM] }] } },
  { files: WIRE_FORM_USERS, rules: { "no-restricted-imports": ["error", { patterns: [PLATFORM, REQUESTER] }] } },
  // Both: the backend layer's own, and where its requests are answered.
  { files: ["src/backend/Handshake.ts"], rules: { "no-restricted-imports": ["error", { patterns: [PLATFORM] }] } },
  {
    // Below the session nothing asks which transport a client came by: the edge sets what it
    // says and can carry on the session (Session's `Edge`), and a new transport is one module.
    files: ["src/gateway/**", "src/orchestration/**", "src/policy/**", "src/catalog/**", "src/sandbox/**"],
    ignores: ["src/gateway/clients/**"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector: "BinaryExpression[operator=/^[!=]==?$/] > Literal[value=/^(stdio|http)$/]",
          message: "Read the session's `edge` facts (localUser, boundsReplies), not the transport's name."
        },
        {
          selector: "BinaryExpression > MemberExpression[property.name='name'][object.property.name='edge']",
          message: "The edge's name is for logs: read its facts (localUser, boundsReplies)."
        }
      ]
    }
  },
  {
    // Tests, benchmarks and scripts read JSON off the wire; typing every reply would say nothing.
    files: ["test/**", "scripts/**", "examples/**"],
    rules: { "@typescript-eslint/no-explicit-any": "off" }
  }
)
