/**
 * The MCP shapes the gateway reads and writes, and the protocol versions it speaks.
 *
 * Only what the gateway itself inspects is typed; everything else (tool results, `_meta`,
 * content blocks) is passed through untouched, so these schemas are deliberately open.
 */
import { Schema } from "effect"
import { createRequire } from "node:module"
import { field, stringField } from "../json/Json.js"

// src/protocol/Mcp.ts, dist/protocol/Mcp.js and the CLI's chunks (dist/chunks/) all sit two levels
// below package.json.
const pkg = createRequire(import.meta.url)("../../package.json") as { name: string; version: string }

/** The gateway as an MCP implementation: its `serverInfo` to clients, its `clientInfo` to backends. */
export const IMPLEMENTATION: { readonly name: string; readonly version: string } = {
  name: "mcp-agentify",
  version: pkg.version
}

/** Newest first. The gateway answers with the client's version when it is listed here. */
export const SUPPORTED_PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"] as const

export const LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[0]

/** The client's version if supported, else the newest one (MCP version negotiation). */
export const negotiateProtocolVersion = (requested: unknown): string =>
  typeof requested === "string" && SUPPORTED_PROTOCOL_VERSIONS.some((known) => known === requested)
    ? requested
    : LATEST_PROTOCOL_VERSION

export const isSupportedProtocolVersion = (version: unknown): version is string =>
  typeof version === "string" && SUPPORTED_PROTOCOL_VERSIONS.some((known) => known === version)

/** The stateless era (no initialize, no session; every request says who it is in `_meta`). */
export const STATELESS_PROTOCOL_VERSION = "2026-07-28"

/** The `_meta` keys of the stateless era. */
export const META_PREFIX = "io.modelcontextprotocol/"
export const Meta = {
  protocolVersion: `${META_PREFIX}protocolVersion`,
  clientCapabilities: `${META_PREFIX}clientCapabilities`,
  clientInfo: `${META_PREFIX}clientInfo`,
  logLevel: `${META_PREFIX}logLevel`,
  serverInfo: `${META_PREFIX}serverInfo`,
  subscriptionId: `${META_PREFIX}subscriptionId`
} as const

/** MCP's log levels (RFC 5424), least severe first. */
export const MCP_LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] as const
export type McpLogLevel = (typeof MCP_LOG_LEVELS)[number]

/** `level` as an MCP log level, when it is one. */
export const mcpLogLevel = (level: unknown): McpLogLevel | undefined => MCP_LOG_LEVELS.find((known) => known === level)

/** The stateless era's own JSON-RPC errors. */
export const StatelessErrorCode = {
  HeaderMismatch: -32020,
  MissingClientCapability: -32021,
  UnsupportedProtocolVersion: -32022
} as const

/** A tool as a backend lists it. Unknown fields (annotations, outputSchema, title...) are kept. */
export interface Tool {
  readonly name: string
  readonly description?: string | undefined
  readonly inputSchema: JsonObject
  readonly [key: string]: unknown
}

export type JsonObject = { readonly [key: string]: unknown }

export const Tool: Schema.Codec<Tool> = Schema.StructWithRest(
  Schema.Struct({
    name: Schema.String,
    description: Schema.optional(Schema.String),
    inputSchema: Schema.Record(Schema.String, Schema.Unknown)
  }),
  [Schema.Record(Schema.String, Schema.Unknown)]
  // The struct's type has a mutable index signature; `Tool` reads the same values read-only.
) as unknown as Schema.Codec<Tool>

export const ListToolsResult = Schema.StructWithRest(
  Schema.Struct({
    tools: Schema.Array(Tool),
    nextCursor: Schema.optional(Schema.String)
  }),
  [Schema.Record(Schema.String, Schema.Unknown)]
)

/** A CallToolResult; content blocks are passed through as they are. */
export interface CallToolResult {
  readonly content: ReadonlyArray<unknown>
  readonly isError?: boolean | undefined
  readonly structuredContent?: unknown
  readonly [key: string]: unknown
}

export const isCallToolResult = (u: unknown): u is CallToolResult =>
  typeof u === "object" && u !== null && Array.isArray(field(u, "content"))

/** Plain text of a CallToolResult's text blocks, for error messages. */
export const resultText = (result: CallToolResult): string =>
  result.content
    .flatMap((block: unknown) => {
      const text = stringField(block, "text")
      return field(block, "type") === "text" && text !== undefined ? [text] : []
    })
    .join("\n")

export const textResult = (text: string, isError = false): CallToolResult => ({
  content: [{ type: "text", text }],
  ...(isError ? { isError: true } : {})
})

/** The orchestration request's `context`. */
export const TaskContext = Schema.Struct({
  activeDocumentURI: Schema.optional(Schema.NullOr(Schema.String)),
  currentWorkingDirectory: Schema.optional(Schema.NullOr(Schema.String)),
  selectionText: Schema.optional(Schema.NullOr(Schema.String))
})
export type TaskContext = typeof TaskContext.Type

/** `maxResultChars`: how much of each tool result (and of each call's arguments) the model reads back. */
export const MIN_RESULT_CHARS = 200
export const MAX_RESULT_CHARS_LIMIT = 1_000_000
export const MaxResultChars = Schema.Number.pipe(
  Schema.check(
    Schema.makeFilter(
      (n) =>
        (Number.isInteger(n) && n >= MIN_RESULT_CHARS && n <= MAX_RESULT_CHARS_LIMIT) ||
        `must be a whole number of characters from ${MIN_RESULT_CHARS} to ${MAX_RESULT_CHARS_LIMIT}`
    )
  )
)

/** `maxCallsPerTurn`: the tool calls one model turn may make (past it, none of the turn's run). */
export const MAX_CALLS_PER_TURN_LIMIT = 128
export const MaxCallsPerTurn = Schema.Number.pipe(
  Schema.check(
    Schema.makeFilter(
      (n) =>
        (Number.isInteger(n) && n >= 1 && n <= MAX_CALLS_PER_TURN_LIMIT) ||
        `must be a whole number of calls from 1 to ${MAX_CALLS_PER_TURN_LIMIT}`
    )
  )
)

/** How the gateway's model acts: one tool call at a time, or one script that calls them. */
export const OrchestrationMode = Schema.Literals(["tools", "code"])
export type OrchestrationMode = typeof OrchestrationMode.Type

export const OrchestrateParams = Schema.Struct({
  query: Schema.String.pipe(Schema.check(Schema.makeFilter((s) => s.trim().length > 0 || "must be a non-empty string"))),
  context: Schema.optional(Schema.NullOr(TaskContext)),
  /** Model turns at most (the config's `maxSteps` when absent); 1 is a single plan and call. */
  maxSteps: Schema.optional(
    Schema.Number.pipe(
      Schema.check(Schema.makeFilter((n) => (Number.isInteger(n) && n >= 1 && n <= 32) || "must be a whole number from 1 to 32"))
    )
  ),
  /** Plan the first call and return it, running nothing. */
  dryRun: Schema.optional(Schema.Boolean),
  /** "code": the model writes one script that calls the tools (the config's `orchestrationMode` when absent). */
  mode: Schema.optional(OrchestrationMode),
  /** The config's `maxResultChars` for this request. */
  maxResultChars: Schema.optional(MaxResultChars),
  /** The config's `maxCallsPerTurn` for this request. */
  maxCallsPerTurn: Schema.optional(MaxCallsPerTurn)
})
export type OrchestrateParams = typeof OrchestrateParams.Type
