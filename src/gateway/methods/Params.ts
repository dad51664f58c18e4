/**
 * The params of the gateway's own methods, decoded with Schema at the edge (as the MCP SDK's and
 * @effect/ai's McpSchema do): a handler gets typed params, or the client gets -32602 naming each
 * problem in the words the gateway has always used ("name: is required").
 */
import { Result, Schema, SchemaIssue } from "effect"
import { ListedTools, LogLevelName, MAX_LISTED_LIMIT, MIN_LISTED_TOOLS } from "../../config/Config.js"
import { InvalidParams } from "../../protocol/Errors.js"
import { MCP_LOG_LEVELS } from "../session/Session.js"

/** A field whose every problem reads `text` (missing or of the wrong type). */
const worded = <S extends Schema.Top>(schema: S, text: string) =>
  schema.pipe(Schema.annotate({ message: text }), Schema.annotateKey({ messageMissingKey: text }))

/**
 * An optional field (absent or undefined) whose every problem reads `text`: the message is on the
 * union with undefined, so a wrong value reads `text` rather than "Expected object | undefined", and
 * on the field's own schema, as Effect 4 reports the one branch a value could be (a string that is
 * not one of a union of literals) with that branch's message.
 */
const optionalWorded = <S extends Schema.Top>(schema: S, text: string) =>
  Schema.optionalKey(Schema.UndefinedOr(schema.pipe(Schema.annotate({ message: text }))).pipe(Schema.annotate({ message: text })))

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

/** `tools/call`: the rest of the params (`_meta`, a task) are kept and forwarded as sent. */
export const CallToolParams = Schema.Struct({
  name: worded(Schema.String, "name: is required"),
  arguments: optionalWorded(JsonObject, "arguments: must be an object")
})
export type CallToolParams = typeof CallToolParams.Type & { readonly [key: string]: unknown }

/** A request about a resource (`resources/read`, `resources/subscribe`, `resources/unsubscribe`). */
export const UriParams = Schema.Struct({ uri: worded(Schema.String, "uri: is required") })
export type UriParams = typeof UriParams.Type & { readonly [key: string]: unknown }

/** `tasks/get`, `tasks/result`, `tasks/cancel`: the task's id as the client knows it. */
export const TaskParams = Schema.Struct({ taskId: worded(Schema.String, "taskId: is required") })
export type TaskParams = typeof TaskParams.Type & { readonly [key: string]: unknown }

/** `prompts/get`: the prompt's exposed name (the rest, its arguments, goes to the backend as sent). */
export const GetPromptParams = Schema.Struct({ name: worded(Schema.String, "name: is required") })
export type GetPromptParams = typeof GetPromptParams.Type & { readonly [key: string]: unknown }

/** `completion/complete`: what its `ref` names decides the backend. */
const REF_TEXT = "ref: must be a ref/prompt with a name or a ref/resource with a uri"
// Worded on each branch and field too: Effect 4 reports the branch its `type` picks, not the union.
export const CompleteParams = Schema.Struct({
  ref: worded(
    Schema.Union([
      worded(Schema.Struct({ type: Schema.Literal("ref/prompt"), name: worded(Schema.String, REF_TEXT) }), REF_TEXT),
      worded(Schema.Struct({ type: Schema.Literal("ref/resource"), uri: worded(Schema.String, REF_TEXT) }), REF_TEXT)
    ]),
    REF_TEXT
  )
})
export type CompleteParams = typeof CompleteParams.Type & { readonly [key: string]: unknown }

/** `logging/setLevel`. */
export const SetLevelParams = Schema.Struct({
  level: worded(Schema.Literals(MCP_LOG_LEVELS), `level: must be one of ${MCP_LOG_LEVELS.join(", ")}`)
})

/**
 * `initialize`: what the gateway reads of it. Lenient as MCP peers are: a field of an unexpected
 * shape is as good as absent (the version is negotiated, capabilities default to none).
 */
export const InitializeParams = Schema.Struct({
  protocolVersion: Schema.optional(Schema.Unknown),
  capabilities: Schema.optional(Schema.Unknown),
  clientInfo: Schema.optional(Schema.Unknown),
  initializationOptions: Schema.optional(Schema.Unknown)
}).pipe(Schema.annotate({ message: "params: must be an object" }))
export type InitializeParams = typeof InitializeParams.Type

/** What one session of a shared gateway may set in `initializationOptions`. */
export const SessionOptions = Schema.Struct({
  logLevel: optionalWorded(LogLevelName, `initializationOptions.logLevel: must be one of ${LogLevelName.literals.join(", ")}`),
  maxListedTools: optionalWorded(
    ListedTools,
    `initializationOptions.maxListedTools: must be a whole number of tools from ${MIN_LISTED_TOOLS} to ${MAX_LISTED_LIMIT}`
  )
})

/** A schema of params: decoded from anything a client sends, needing no service. */
export type ParamsSchema<A> = Schema.Decoder<A>

/** Each problem as `{ path, message }`; a field's annotation gives its message (the input is not printed). */
const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * Decodes `params` (absent is `{}`), keeping fields it does not name; -32602 with each problem.
 * These schemas transform nothing, so params that already are their type pass as they are: the
 * check (0.2 µs for tools/call) rather than the decode that copies them (1.2 µs) on the hot path.
 * That check is also what keeps the fields a schema does not name (Effect 4's decode drops
 * them): a value that fails it fails the decode too, which is then run only for its problems.
 */
export const decode = <A>(schema: ParamsSchema<A>) => {
  const is = Schema.is(schema)
  const decodeUnknown = Schema.decodeUnknownResult(schema)
  return (params: unknown): Result.Result<A, InvalidParams> => {
    const value = params ?? {}
    if (is(value)) return Result.succeed(value)
    const decoded = decodeUnknown(value)
    if (Result.isSuccess(decoded)) return Result.succeed(decoded.success)
    // Effect 4's formatter does not print the offending value (no reportInput), so a value nested
    // too deeply to print (a client may send one) still gets the field's own words.
    const issues = formatIssues(decoded.failure.issue).issues.map((issue) => issue.message)
    return Result.fail(new InvalidParams({ message: `Invalid params: ${issues.join("; ")}`, issues }))
  }
}
